"""/docs (issue 22): market data first, and example answers a user can trust.

Every example in /openapi.json validates against its response's schema, every problem example is
coherent (code, status, title and type agree), no example carries a made-up time (UTC `Z`, a daily
date beside an intraday interval), and every example that names a request is what a real server
answers to that request: the same problem document for an error, the same shape for a 200.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.core.errors import ERROR_KINDS
from tests.conftest import ServerProcess
from tests.contract.test_schemas import errors_of, validator

ENGINE_NEUTRAL = "the OpenAPI document's examples against the answers' shapes"

S = dict[str, Any]
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("docs") / "data", "granian", "--public-rate", "100000")
    yield srv
    assert srv.stop() == 0, srv.output()


@pytest.fixture(scope="module")
def http(api: ServerProcess) -> Iterator[httpx.Client]:
    with api.client(headers={"X-SERVICE-Key": api.demo_key}) as client:
        yield client


@pytest.fixture(scope="module")
def doc(http: httpx.Client) -> S:
    return http.get("/openapi.json").json()


def examples(doc: S) -> Iterator[tuple[str, str, str, str, S, Any]]:
    """(path, method, status, example name, media object, value) of every response example."""
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, resp in op["responses"].items():
                for media in resp.get("content", {}).values():
                    for name, ex in media.get("examples", {}).items():
                        yield path, method, status, name, media, ex["value"]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def shape(value: Any) -> Any:
    """Keys and types, not values (a 200's prices move between the document's build and the request)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__


def same_shape(got: Any, documented: Any) -> bool:
    """`shape` equal, where a null on one side matches any value on the other: a venue's session may open
    between the document's build and the request (`open` null before its first tick, a number after), and
    whether the field may be null is the schema's check (test_examples_validate_and_problems_are_coherent)."""
    if got is None or documented is None:
        return True
    if isinstance(got, dict) and isinstance(documented, dict):
        return got.keys() == documented.keys() and all(same_shape(got[k], documented[k]) for k in got)
    if isinstance(got, list) and isinstance(documented, list):
        return not got or not documented or same_shape(got[0], documented[0])
    return shape(got) == shape(documented)


def test_market_data_comes_first(doc: S) -> None:
    names = [t["name"] for t in doc["tags"]]
    assert names[0] == "market data", names
    used = {tag for item in doc["paths"].values() for op in item.values() for tag in op.get("tags", [])}
    assert used <= set(names), f"tags not listed in openapi.py TAGS (/docs would put them last): {used - set(names)}"
    assert next(iter(doc["paths"])).startswith("/api/v1/")


def test_every_market_data_answer_has_examples(doc: S) -> None:
    for path in ("/api/v1/quotes", "/api/v1/quotes/{id}", "/api/v1/kline/{id}", "/api/v1/spreads",
                 "/api/v1/inventory"):
        responses = doc["paths"][path]["get"]["responses"]
        for status in ("200", "400", "401", "405", "429"):
            content = next(iter(responses[status]["content"].values()))
            assert content.get("examples"), f"GET {path} {status} has no example: Swagger UI would make one up"
    kline = doc["paths"]["/api/v1/kline/{id}"]["get"]["responses"]
    assert {"400", "404"} <= kline.keys()
    for status in ("400", "404"):
        assert next(iter(kline[status]["content"].values()))["examples"]


def test_examples_validate_and_problems_are_coherent(doc: S) -> None:
    seen = 0
    for path, method, status, name, media, value in examples(doc):
        seen += 1
        where = f"{method.upper()} {path} {status} {name!r}"
        assert not errors_of(validator(doc, media["schema"], strict=False), value), where
        if status.startswith(("4", "5")):
            code = value["code"]
            assert ERROR_KINDS[code] == (int(status), value["title"]) and value["status"] == int(status), where
            assert value["type"] == f"/problems/{code}", where
        for text in strings(value):
            if ISO_TIME.match(text):
                assert text.endswith("+08:00"), f"{where}: {text} (the service answers in +08:00)"
        if isinstance(value, dict) and "interval" in value and "series" in value:
            daily = value["interval"] == "1d"
            assert value["series"], where
            for candle in value["series"]:
                assert (re.fullmatch(r"\d{4}-\d\d-\d\d", candle["t"]) is not None) == daily, (where, candle)
    assert seen > 60


def test_sample_requests_answer_as_documented(doc: S, http: httpx.Client) -> None:
    replayed = 0
    for _, _, status, name, _, value in examples(doc):
        if not name.startswith("GET /"):
            continue
        resp = http.get(name.removeprefix("GET "))
        replayed += 1
        assert str(resp.status_code) == status, (name, resp.text)
        if status == "200":
            assert same_shape(resp.json(), value), (name, shape(resp.json()), shape(value))
        else:
            assert resp.json() == value, name
    assert replayed >= 13


def test_shared_error_examples_are_the_pipelines_answers(doc: S, api: ServerProcess) -> None:
    def example(path: str, method: str, status: str) -> S:
        content = doc["paths"][path][method]["responses"][status]["content"]["application/problem+json"]
        return next(iter(content["examples"].values()))["value"]

    with api.client() as anonymous:
        assert anonymous.get("/api/v1/quotes").json() == example("/api/v1/quotes", "get", "401")
        assert anonymous.delete("/api/v1/kline/brent").json() == example("/api/v1/kline/{id}", "get", "405")
        assert anonymous.delete("/api/market/fx").json() == example("/api/market/{id}", "get", "405")
        unsupported = anonymous.post("/api/cooperation", content=b"hi", headers={"content-type": "text/plain"})
        assert unsupported.json() == example("/api/cooperation", "post", "415")
        too_big = anonymous.post("/api/cooperation", content=b"{" + b" " * 70_000 + b"}",
                                 headers={"content-type": "application/json"})
        assert too_big.json() == example("/api/cooperation", "post", "413")


def test_same_shape_forgives_only_a_null() -> None:
    assert same_shape({"open": None, "p": 1.5}, {"open": 2.0, "p": 1})
    assert same_shape({"open": 2.0}, {"open": None})
    assert not same_shape({"open": "2.0"}, {"open": 2.0})
    assert not same_shape({"open": 2.0}, {"open": 2.0, "high": None})
    assert not same_shape([{"t": 1}], [{"t": "x"}])
