"""A dedicated data source (SPEC 20, docs/ingest.md) over real HTTP, on both runtimes: an operator grants an
enterprise account a namespace, the account declares instruments and makes an ingest key, publishes JSON lines, and
its read key sees them; another account's keys see nothing of them, and an ingest key reads nothing.

Waiting for another process (the key refresh) polls with a deadline: nothing in this process to await."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RUNTIMES, ServerProcess, run_cli

PASSWORD = "correct horse"
_ips = itertools.count(1)
INSTRUMENT = {"name": {"zh": "定制原油", "en": "Custom blend"}, "unit": {"zh": "美元/桶", "en": "USD/bbl"},
              "currency": "USD", "decimals": 2, "venue": "ice-eu"}


@pytest.fixture(scope="module", params=RUNTIMES)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"ingest-{request.param}") / "data"
    server = ServerProcess(data_dir, request.param, "--public-rate", "100000", "--trusted-proxies", "127.0.0.1",
                           "--demo-hours", "always", "--ingest-rate", "3000")
    yield server
    code = server.stop()
    assert code == 0, f"server exited with {code}:\n{server.output()}"


def until(check: Callable[[], Any], timeout: float = 10.0, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def account(srv: ServerProcess, email: str, enterprise: bool = True, namespace: str | None = None) -> httpx.Client:
    """A signed-in console client of a new account (enterprise at 100,000/min, with `namespace` if given)."""
    n = next(_ips)
    c = srv.client(headers={"X-Forwarded-For": f"198.51.{n // 250}.{n % 250 + 1}"})
    assert c.post("/api/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
    if enterprise:
        out = run_cli(srv.data_dir, "users", "plan", email, "enterprise", "--rate", "100000")
        assert out.returncode == 0, out.stderr
    if namespace:
        out = run_cli(srv.data_dir, "users", "namespace", email, namespace)
        assert out.returncode == 0, out.stderr
    token = c.post("/api/auth/login", json={"email": email, "password": PASSWORD}).json()["token"]
    c.headers["Authorization"] = "Bearer " + token
    return c


def key(c: httpx.Client, scope: str = "read") -> str:
    resp = c.post("/api/console/keys", json={"label": scope, "scope": scope})
    assert resp.status_code == 201, resp.text
    assert resp.json()["scope"] == scope
    return str(resp.json()["key"])


def problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = resp.json()
    assert body["code"] == code and body["detail"]
    return body


def ingest(srv: ServerProcess, secret: str, lines: list[Any] | bytes, **headers: str) -> httpx.Response:
    body = lines if isinstance(lines, bytes) else "\n".join(
        line if isinstance(line, str) else json.dumps(line) for line in lines).encode()
    return httpx.post(srv.base + "/api/v1/ingest", content=body, timeout=10.0,
                      headers={"X-SERVICE-Key": secret, "content-type": "application/x-ndjson", **headers})


def get(srv: ServerProcess, secret: str, path: str, **params: Any) -> httpx.Response:
    return httpx.get(srv.base + path, params=params, headers={"X-SERVICE-Key": secret}, timeout=10.0)


@pytest.fixture(scope="module")
def source(srv: ServerProcess) -> dict[str, Any]:
    """acme: a namespace, two instruments, an ingest key and a read key; other: another enterprise account."""
    acme = account(srv, "acme@example.com", namespace="acme")
    for name in ("crude-blend", "naphtha"):
        resp = acme.post("/api/console/instruments", json={"id": f"acme.{name}", **INSTRUMENT})
        assert resp.status_code == 201, resp.text
    other = account(srv, "other@example.com", namespace="other")
    out = {"acme": acme, "ingest": key(acme, "ingest"), "read": key(acme), "other": other, "other_read": key(other)}
    # the keys are known to the hub after its next refresh: wait for the read key to answer
    assert until(lambda: get(srv, out["read"], "/api/v1/quotes").status_code == 200)
    return out


def test_the_console_declares_and_lists_instruments(srv: ServerProcess, source: dict[str, Any]) -> None:
    listed = source["acme"].get("/api/console/instruments").json()
    assert listed["namespace"] == "acme"
    assert [i["id"] for i in listed["items"]] == ["acme.crude-blend", "acme.naphtha"]
    assert listed["items"][0]["venue"] == "ice-eu" and listed["items"][0]["decimals"] == 2
    keys = source["acme"].get("/api/console/keys").json()["items"]
    assert sorted(k["scope"] for k in keys) == ["ingest", "read"]


def test_declarations_outside_the_namespace_or_plan_are_refused(srv: ServerProcess, source: dict[str, Any]) -> None:
    acme = source["acme"]
    problem(acme.post("/api/console/instruments", json={"id": "other.x", **INSTRUMENT}), 403, "forbidden")
    problem(acme.post("/api/console/instruments", json={"id": "acme.crude-blend", **INSTRUMENT}), 409, "conflict")
    body = problem(acme.post("/api/console/instruments", json={"id": "acme.Bad Name", **INSTRUMENT, "decimals": 11,
                                                               "venue": "nowhere", "colour": "red"}),
                   400, "validation_failed")
    assert {e["field"] for e in body["errors"]} == {"id", "decimals", "venue", "colour"}
    problem(acme.post("/api/console/instruments", json={"id": "acme.x", **INSTRUMENT, "name": "plain"}),
            400, "validation_failed")
    free = account(srv, "free@example.com", enterprise=False)
    problem(free.post("/api/console/instruments", json={"id": "free.x", **INSTRUMENT}), 403, "forbidden")
    problem(free.post("/api/console/keys", json={"scope": "ingest"}), 403, "forbidden")
    problem(free.post("/api/console/keys", json={"scope": "write"}), 400, "validation_failed")
    none = account(srv, "nons@example.com")
    problem(none.post("/api/console/instruments", json={"id": "nons.x", **INSTRUMENT}), 403, "forbidden")
    out = run_cli(srv.data_dir, "users", "namespace", "free@example.com", "free")
    assert out.returncode != 0 and "enterprise" in out.stderr
    out = run_cli(srv.data_dir, "users", "namespace", "nons@example.com", "acme")
    assert out.returncode != 0 and "another account" in out.stderr


def test_publishing_keeps_the_good_lines_and_names_the_bad(srv: ServerProcess, source: dict[str, Any]) -> None:
    now = time.time()
    resp = ingest(srv, source["ingest"], [
        {"id": "acme.crude-blend", "price": 80.25, "ts": now, "volume": 3},
        "not json",
        {"id": "acme.crude-blend", "price": -1},
        "",
        {"id": "brent", "price": 70.0},  # not this account's
        {"id": "other.thing", "price": 1.0},
        {"id": "acme.naphtha", "price": 612.5, "ts": now},
        {"id": "acme.crude-blend", "price": 80.5, "ts": now + 0.1, "volume": 2},
    ])
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["accepted"] == 3 and body["rejectedCount"] == 4
    assert [r["line"] for r in body["rejected"]] == [2, 3, 5, 6]
    assert "JSON" in body["rejected"][0]["error"] and "price" in body["rejected"][1]["error"]
    assert "unknown instrument" in body["rejected"][2]["error"] == body["rejected"][3]["error"]
    quote = get(srv, source["read"], "/api/v1/quotes/acme.crude-blend")
    assert quote.status_code == 200, quote.text
    assert quote.json()["price"] == 80.5 and quote.json()["volume"] == 5 and quote.json()["id"] == "acme.crude-blend"
    kline = get(srv, source["read"], "/api/v1/kline/acme.crude-blend", interval="1m").json()
    assert kline["series"][-1]["c"] == 80.5 and kline["series"][-1]["h"] == 80.5
    listed = get(srv, source["read"], "/api/v1/quotes").json()["quotes"]
    assert [q["id"] for q in listed if q["id"].startswith("acme.")] == ["acme.crude-blend", "acme.naphtha"]


def test_bad_requests_to_the_ingest_route(srv: ServerProcess, source: dict[str, Any]) -> None:
    problem(ingest(srv, source["ingest"], b"x" * (1024 * 1024 + 1)), 413, "payload_too_large")
    problem(ingest(srv, source["ingest"], [{"id": "acme.naphtha", "price": 1}], **{"content-type": "text/csv"}),
            415, "unsupported_media_type")
    problem(ingest(srv, source["read"], [{"id": "acme.naphtha", "price": 1}]), 403, "forbidden")
    problem(ingest(srv, "mk_nope", [{"id": "acme.naphtha", "price": 1}]), 401, "unauthorized")


def test_an_ingest_key_reads_nothing(srv: ServerProcess, source: dict[str, Any]) -> None:
    for path in ("/api/v1/quotes", "/api/v1/quotes/acme.naphtha", "/api/v1/kline/acme.naphtha", "/api/v1/instruments",
                 "/api/v1/udf/search", "/api/v1/udf/config", "/api/v1/spreads"):
        problem(get(srv, source["ingest"], path), 403, "forbidden")


def test_another_account_sees_nothing_of_them(srv: ServerProcess, source: dict[str, Any]) -> None:
    other, owner = source["other_read"], source["read"]
    assert get(srv, owner, "/api/v1/quotes/acme.naphtha").status_code == 200  # remembered for the owner? never
    for secret in (other, srv.demo_key):
        problem(get(srv, secret, "/api/v1/quotes/acme.naphtha"), 404, "not_found")
        problem(get(srv, secret, "/api/v1/kline/acme.naphtha"), 404, "not_found")
        problem(get(srv, secret, "/api/v1/kline/acme.naphtha", interval="1m", **{"from": "2026-01-01"}),
                404, "not_found")
        problem(get(srv, secret, "/api/v1/instruments/acme.naphtha"), 404, "not_found")
        problem(get(srv, secret, "/api/v1/quotes", ids="acme.naphtha"), 400, "invalid_parameter")
        problem(get(srv, secret, "/api/v1/udf/symbols", symbol="acme.naphtha"), 400, "invalid_parameter")
        problem(get(srv, secret, "/api/v1/udf/history", symbol="acme.naphtha", resolution="1", to=int(time.time())),
                400, "invalid_parameter")
        for path in ("/api/v1/quotes", "/api/v1/instruments"):
            assert "acme." not in get(srv, secret, path).text
        assert get(srv, secret, "/api/v1/udf/search", query="acme").json() == []
        assert "~custom" not in get(srv, secret, "/api/v1/instruments").text
    assert [s["symbol"] for s in get(srv, owner, "/api/v1/udf/search", query="acme").json()] == [
        "acme.crude-blend", "acme.naphtha"]
    assert get(srv, owner, "/api/v1/udf/symbols", symbol="acme.naphtha").json()["name"] == "acme.naphtha"
    assert any(i["id"] == "acme.naphtha" for i in get(srv, owner, "/api/v1/instruments").json()["instruments"])
    assert get(srv, owner, "/api/v1/instruments/acme.naphtha").json()["venue"] == "ice-eu"
