"""Issue 45 item 2: every GET route of /openapi.json with extreme dates, instants, numbers and byte ranges, on a hub
that holds stored history and flat files (tests/contract/test_flatfile_routes.py's), both runtimes: no 5xx, and
every refusal a problem document.

The requests are drawn from the document itself: each GET operation's parameters (path and query) are given their
documented example, then one or two of them an extreme value of their kind (a date, an instant, an integer, any
text), and the flat-file downloads a Range header of every shape. A seeded generator picks CI_REQUESTS of them
(seconds); the long run picks more:

    MARKET_EXTREMES_REQUESTS=5000 ./scripts/test -q -n 0 tests/contract/test_extremes_fuzz.py

(measured on this 2-core machine: docs/input-rules.md gives the figures). MARKET_EXTREMES_SEED changes the draw.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import RUNTIMES
from tests.contract.test_flatfile_routes import Hub, start_hub

CI_REQUESTS = 1000
REQUESTS = int(os.environ.get("MARKET_EXTREMES_REQUESTS") or CI_REQUESTS)
SEED = int(os.environ.get("MARKET_EXTREMES_SEED") or 45)
BIG = "9" * 4301  # one digit past CPython's int() limit for text

DATES = ["0001-01-01", "1969-12-31", "1970-01-01", "2004-01-02", "2026-11-17", "9999-12-30", "9999-12-31",
         "2026-02-30", "2026-W48-1", "2026-327", "20261123xx", "+2026-11-17", "2026-11-17\x00", "", " "]
INSTANTS = [*DATES, "-1", "0", "1763433000000", "9" * 16, BIG, "253402300800000", "9999-12-31T23:59:59Z",
            "0001-01-01T00:00:00+14:00", "9999-12-30T23:59:59-14:00", "2026-11-18T10:30:00+08:00",
            "2026-11-18T10:30:00 08:00", "2026-11-18T25:00:00Z", "20261118T103000+0800", "2026-11-18T10:30:00"]
NUMBERS = ["-1", "0", "1", "90", "1000", "5000", "253402300800", "253402300799", "9" * 20, BIG, "1.5", "1e3",
           "NaN", "\u00b2", " 5", ""]
TEXTS = ["", " ", "\x00", "a\x00b", "x" * 5000, "EXCHANGE:brent", "brent", "%", "\U0001f600", "../../etc/passwd"]
RANGES = ["bytes=0-9", "bytes=-10", "bytes=9-", f"bytes=0-{BIG}", f"bytes=-{BIG}", f"bytes={BIG}-",
          "bytes=" + "0" * 5000 + "1-2", "bytes=5-1", "bytes=0-1,3-4", "bytes=\u00b2-3", "items=0-1", "bytes=",
          "bytes=99999999999999999999-"]
FILES = [f"{d}.{fmt}" for d in ("2026-11-17", "1970-01-01", "0001-01-01", "9999-12-31", "20261117xx", "2026-W47-2")
         for fmt in ("csv.gz", "parquet")]


@pytest.fixture(scope="module", params=RUNTIMES)
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    started = start_hub(tmp_path_factory.mktemp(f"extremes-{request.param}"), request.param)
    started.key = started.srv.create_key("enterprise", "--rate", "1000000000")[1]  # no 429 hiding an answer
    yield started
    assert started.srv.stop() == 0, started.srv.output()


def _pool(schema: dict[str, Any]) -> list[str]:
    if schema.get("format") == "date":
        return DATES
    if schema.get("type") == "integer":
        return NUMBERS
    if "pattern" in schema and "[Tt]" in schema["pattern"]:
        return INSTANTS
    return TEXTS + NUMBERS[:4]


def _example(schema: dict[str, Any]) -> str:
    for value in (*schema.get("examples", ()), *schema.get("enum", ())):
        return str(value)
    return {"date": "2026-11-17"}.get(schema.get("format", ""), "1")


def _operations(spec: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    return [(path, [p for p in op.get("parameters", []) if p["in"] in ("path", "query")])
            for path, item in spec["paths"].items() for method, op in item.items() if method == "get"]


def _draw(rng: random.Random, path: str, params: list[dict[str, Any]]) -> tuple[str, dict[str, str],
                                                                               dict[str, str]]:
    values = {p["name"]: _example(p["schema"]) for p in params if p.get("required") or p["in"] == "path"}
    for p in rng.sample(params, min(len(params), rng.choice((1, 1, 2)))):
        values[p["name"]] = rng.choice(_pool(p["schema"]))
    headers: dict[str, str] = {}
    if path.endswith("/{file}"):
        values["file"] = rng.choice(FILES)
        headers["Range"] = rng.choice(RANGES)
        if rng.random() < 0.3:
            headers["If-None-Match"] = rng.choice(('"x"', "*"))
    url = path
    for p in params:
        if p["in"] == "path":
            url = url.replace("{" + p["name"] + "}", quote(values.pop(p["name"]), safe=""))
    return url, values, headers


def test_no_extreme_value_reaches_a_5xx(hub: Hub) -> None:
    spec = httpx.get(hub.srv.base + "/openapi.json", timeout=10).json()
    operations = _operations(spec)
    assert len(operations) > 20
    rng = random.Random(SEED)
    token = _console_token(hub)
    started, seen, failures = time.monotonic(), set(), []
    with httpx.Client(base_url=hub.srv.base, timeout=30) as c:
        for _ in range(REQUESTS):
            path, params = rng.choice(operations)
            url, query, headers = _draw(rng, path, params)
            headers |= {"X-SERVICE-Key": hub.key, "Authorization": f"Bearer {token}"}
            resp = c.get(url, params=query, headers={k: v.encode() for k, v in headers.items()})  # Range: any bytes
            seen.add(path)
            problem = resp.status_code < 400 or \
                resp.headers.get("content-type") == "application/problem+json"
            if resp.status_code >= 500 or not problem:
                failures.append(f"{resp.status_code} GET {url} {query} {headers.get('Range', '')[:40]}: "
                                f"{resp.text[:200]}")
    elapsed = time.monotonic() - started
    print(f"{REQUESTS} requests over {len(seen)} routes in {elapsed:.1f} s")  # the figures docs/input-rules.md cites
    assert failures == [], "\n".join(failures[:20])
    assert len(seen) >= len(operations) * 0.9  # the draw reached (nearly) every route
    errors = [line for line in hub.srv.output().splitlines() if '"level":"ERROR"' in line]
    assert errors == [], errors[:3]


def _console_token(hub: Hub) -> str:
    creds = {"email": "extremes@example.com", "password": "correct horse"}
    with hub.srv.client() as c:
        c.post("/api/auth/register", json=creds)
        resp = c.post("/api/auth/login", json=creds)
        assert resp.status_code == 200, resp.text
        return str(resp.json()["token"])
