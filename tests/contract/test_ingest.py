"""A dedicated data source (SPEC 20, docs/ingest.md) over real HTTP, on both runtimes: an operator grants an
enterprise account a namespace, the account declares instruments and makes an ingest key, publishes JSON lines, and
its read key sees them; another account's keys see nothing of them, and an ingest key reads nothing.

Waiting for another process (the key refresh) polls with a deadline: nothing in this process to await."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests import poll
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


until = partial(poll.until, timeout=10.0)  # this module's wait and polling interval


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
                 "/api/v1/instruments/acme.naphtha", "/api/v1/udf/search", "/api/v1/udf/config", "/api/v1/spreads",
                 "/api/v1/flatfiles?dataset=ticks", "/api/v1/curve/methanol", "/api/v1/venues", "/api/v1/inventory"):
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


def lines_for(ids: list[str], start: float, n: int, step: float) -> list[dict[str, Any]]:
    """`n` ticks for each of `ids`, `step` seconds apart from `start`, prices walking up by a cent."""
    return [{"id": i, "price": round(100 + k * 0.01, 2), "ts": start + k * step, "volume": 1}
            for k in range(n) for i in ids]


def test_an_account_publishes_a_thousand_ticks_a_second_over_both_routes(srv: ServerProcess) -> None:
    """20 instruments, 1,000 ticks a second for 2 s over POST /api/v1/ingest, then 2 s over WS /ws/ingest (one
    batch of 100 ticks every 100 ms each); the owner's read key finds every tick in the quotes, candles, UDF history
    and the stream; the batches are answered by count."""
    bulk = account(srv, "bulk@example.com", namespace="bulk")
    ids = [f"bulk.i{k:02d}" for k in range(20)]
    for inst in ids:
        assert bulk.post("/api/console/instruments", json={"id": inst, **INSTRUMENT}).status_code == 201
    publisher, reader = key(bulk, "ingest"), key(bulk)
    assert until(lambda: get(srv, reader, "/api/v1/quotes").status_code == 200)
    start = time.time() - 10.0  # every tick in the past: none is refused as ahead of the server's clock
    batches = [lines_for(ids, start + b * 0.1, 5, 0.02) for b in range(40)]  # 40 x 100 ticks

    async def run() -> tuple[list[dict[str, Any]], list[str]]:
        seen: list[str] = []
        async with connect(srv.ws_base + "/ws/quotes", additional_headers={"X-SERVICE-Key": reader}) as stream:
            await stream.send(json.dumps({"op": "subscribe", "ids": ids, "reqId": 1}))
            while json.loads(await stream.recv()).get("type") != "subscribed":
                pass

            async def read() -> None:  # the subscriber reads as the ticks come (a reader that lags is conflated)
                while len(seen) < 4000:
                    frame = json.loads(await stream.recv())
                    if frame.get("type") == "tick":
                        seen.append(frame["id"])

            reading = asyncio.create_task(read())
            answers = await publish()
            async with asyncio.timeout(10):
                await reading
        return answers, seen

    async def publish() -> list[dict[str, Any]]:
        answers = []
        loop = asyncio.get_running_loop()
        async with httpx.AsyncClient(base_url=srv.base, timeout=10.0) as http:
            t0 = loop.time()
            for b, batch in enumerate(batches[:20]):
                await asyncio.sleep(max(0.0, t0 + b * 0.1 - loop.time()))  # a paced source: 1,000 ticks/s
                resp = await http.post("/api/v1/ingest", content="\n".join(map(json.dumps, batch)),
                                       headers={"X-SERVICE-Key": publisher, "content-type": "application/x-ndjson"})
                assert resp.status_code == 200, resp.text
                answers.append(resp.json())
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": publisher}) as ws:
            t0 = loop.time()
            for b, batch in enumerate(batches[20:]):
                await asyncio.sleep(max(0.0, t0 + b * 0.1 - loop.time()))
                await ws.send("\n".join(map(json.dumps, batch)))
                answers.append(json.loads(await ws.recv()))
        return answers

    answers, seen = asyncio.run(run())
    assert answers == [{"accepted": 100, "rejected": [], "rejectedCount": 0}] * 40
    assert sorted(set(seen)) == ids and len(seen) == 4000  # every tick streamed, once
    quotes = get(srv, reader, "/api/v1/quotes", ids=",".join(ids)).json()["quotes"]
    assert [q["price"] for q in quotes] == [100.04] * 20 and all(q["id"] in ids for q in quotes)
    for inst in (ids[0], ids[-1]):
        assert get(srv, reader, f"/api/v1/quotes/{inst}").json()["volume"] == 200
        bars = get(srv, reader, f"/api/v1/kline/{inst}", interval="1m", limit=10).json()["series"]
        assert sum(b["v"] for b in bars) == 200
        for interval in ("5m", "15m", "1h", "1d"):
            assert get(srv, reader, f"/api/v1/kline/{inst}", interval=interval).json()["series"], interval
        udf = get(srv, reader, "/api/v1/udf/history", symbol=inst, resolution="1", to=int(time.time()) + 60,
                  countback=10).json()
        assert udf["s"] == "ok" and sum(udf["v"]) == 200


def test_the_stream_refuses_another_accounts_instruments(srv: ServerProcess, source: dict[str, Any]) -> None:
    async def subscribe(secret: str) -> dict[str, Any]:
        async with connect(srv.ws_base + "/ws/quotes", additional_headers={"X-SERVICE-Key": secret}) as ws:
            snapshot = json.loads(await ws.recv())
            assert snapshot["type"] == "snapshot"
            assert not any(q["id"].startswith(("acme.", "~")) for q in snapshot["quotes"])
            await ws.send(json.dumps({"op": "subscribe", "ids": ["acme.naphtha"], "reqId": 2}))
            return dict(json.loads(await ws.recv()))

    assert asyncio.run(subscribe(source["read"]))["type"] == "subscribed"
    refused = asyncio.run(subscribe(source["other_read"]))
    assert refused["type"] == "error" and refused["code"] == "unknown_ids" and "acme.naphtha" in refused["detail"]

    async def opened(path: str, secret: str) -> int:
        try:
            async with connect(srv.ws_base + path, additional_headers={"X-SERVICE-Key": secret}):
                return 101
        except InvalidStatus as exc:
            return int(exc.response.status_code)

    assert asyncio.run(opened("/ws/quotes", source["ingest"])) == 403  # an ingest key reads nothing
    assert asyncio.run(opened("/ws/ingest", source["read"])) == 403  # a read key publishes nothing


def test_the_ingest_socket_answers_each_batch(srv: ServerProcess, source: dict[str, Any]) -> None:
    async def run() -> list[dict[str, Any]]:
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": source["ingest"]}) as ws:
            out = []
            for batch in ('{"id":"acme.naphtha","price":613}\nnope\n{"id":"brent","price":1}', "\n\n"):
                await ws.send(batch)
                out.append(json.loads(await ws.recv()))
            return out

    first, empty = asyncio.run(run())
    assert first["accepted"] == 1 and [r["line"] for r in first["rejected"]] == [2, 3]
    assert empty == {"accepted": 0, "rejected": [], "rejectedCount": 0}
    assert get(srv, source["read"], "/api/v1/quotes/acme.naphtha").json()["price"] == 613


def test_an_account_over_its_ticks_a_second_waits(srv: ServerProcess) -> None:
    """An account at 100 ticks a second (`users limits`; the hub's --ingest-rate of 3,000 would leave it in debt for
    a second only, less than the steps below may take on a loaded machine): one batch of 6,000 ticks passes (the
    bucket goes about 59 s into debt), the next is 429 with Retry-After and nothing of it kept, on both routes."""
    burst = account(srv, "burst@example.com", namespace="burst")
    assert burst.post("/api/console/instruments", json={"id": "burst.x", **INSTRUMENT}).status_code == 201
    out = run_cli(srv.data_dir, "users", "limits", "burst@example.com", "--ticks-per-second", "100")
    assert out.returncode == 0, out.stderr
    secret = key(burst, "ingest")  # made after the limit: the hub's first refresh of it carries the 100
    start = time.time() - 60
    big = lines_for(["burst.x"], start, 6000, 0.001)
    resp = until(lambda: (r := ingest(srv, secret, big)).status_code == 200 and r)  # the key's first refresh
    assert resp.json()["accepted"] == 6000
    refused = problem(ingest(srv, secret, lines_for(["burst.x"], start + 7, 1, 1)), 429, "rate_limited")
    assert refused["retryAfter"] >= 30 and "100 ticks a second" in refused["detail"]

    async def over_ws() -> dict[str, Any]:
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": secret}) as ws:
            await ws.send(json.dumps({"id": "burst.x", "price": 1, "ts": start + 8}))
            return dict(json.loads(await ws.recv()))

    assert asyncio.run(over_ws())["error"]["status"] == 429
    reader = key(burst)
    assert until(lambda: get(srv, reader, "/api/v1/quotes/burst.x").status_code == 200)
    assert get(srv, reader, "/api/v1/quotes/burst.x").json()["volume"] == 6000  # nothing of the refused kept


def test_a_deleted_instrument_is_gone_for_everyone(srv: ServerProcess) -> None:
    gone = account(srv, "gone@example.com", namespace="gone")
    assert gone.post("/api/console/instruments", json={"id": "gone.x", **INSTRUMENT}).status_code == 201
    reader, publisher = key(gone), key(gone, "ingest")
    assert until(lambda: get(srv, reader, "/api/v1/quotes/gone.x").status_code == 200)
    assert until(lambda: ingest(srv, publisher, [{"id": "gone.x", "price": 5}]).status_code == 200)
    assert gone.delete("/api/console/instruments/gone.x").status_code == 204
    problem(gone.delete("/api/console/instruments/gone.x"), 404, "not_found")
    problem(get(srv, reader, "/api/v1/quotes/gone.x"), 404, "not_found")
    assert ingest(srv, publisher, [{"id": "gone.x", "price": 5}]).json()["rejectedCount"] == 1
    problem(gone.post("/api/console/instruments", json={"id": "gone.x", **INSTRUMENT}), 409, "conflict")
    out = run_cli(srv.data_dir, "users", "plan", "gone@example.com", "professional")  # moved off the plan
    assert out.returncode == 0, out.stderr
    refused = until(lambda: (r := ingest(srv, publisher, [{"id": "gone.y", "price": 5}])).status_code == 403 and r)
    assert refused and refused.json()["code"] == "plan_required" and refused.json()["requiredPlan"] == "enterprise"


def test_published_ticks_count_in_the_owner_usage(srv: ServerProcess) -> None:
    """Each accepted tick counts as a message of its ingest key (`wsMessages` of `/api/console/usage`, both routes:
    3 over POST /api/v1/ingest, 2 over /ws/ingest; rejected lines count nothing), each request as a request."""
    meter = account(srv, "meter@example.com", namespace="meter")
    assert meter.post("/api/console/instruments", json={"id": "meter.x", **INSTRUMENT}).status_code == 201
    made = meter.post("/api/console/keys", json={"label": "pub", "scope": "ingest"}).json()
    secret, key_id = made["key"], made["id"]
    now = time.time()
    lines = [{"id": "meter.x", "price": 10 + i, "ts": now - 30 + i} for i in range(3)] + ["not a tick"]
    resp = until(lambda: (r := ingest(srv, secret, lines)).status_code == 200 and r)  # the key's first refresh
    assert resp and resp.json()["accepted"] == 3 and resp.json()["rejectedCount"] == 1

    async def over_ws() -> dict[str, Any]:
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": secret}) as ws:
            await ws.send("\n".join(json.dumps({"id": "meter.x", "price": 20 + i, "ts": now - 20 + i})
                                    for i in range(2)) + "\n{}")
            return dict(json.loads(await ws.recv()))

    assert asyncio.run(over_ws())["accepted"] == 2

    def counted() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = meter.get("/api/console/usage", params={"key": key_id}).json()["items"]
        return items if sum(i["wsMessages"] for i in items) >= 5 and sum(i["wsConnections"] for i in items) else None

    items = until(counted, timeout=15.0, every=1.0)  # one flush interval (5 s); each poll takes the console bucket
    assert items and {i["keyId"] for i in items} == {key_id}
    assert sum(i["wsMessages"] for i in items) == 5 and sum(i["wsConnections"] for i in items) == 1
    assert sum(i["requests"] for i in items) >= 1


def test_the_ingest_socket_frames_validate_against_asyncapi(srv: ServerProcess) -> None:
    """/asyncapi.json's ingest channel: the batch sent, its answer (good and bad lines) and a refused batch's error
    (429: the account's ticks a second, after one batch over --ingest-rate) validate against their payloads."""
    doc = httpx.get(srv.base + "/asyncapi.json", timeout=5).json()
    channel = doc["channels"]["ingest"]
    assert channel["address"] == "/ws/ingest"
    reply = {m["$ref"].rsplit("/", 1)[1] for m in doc["operations"]["publish"]["reply"]["messages"]}
    assert reply == {"IngestAnswer", "IngestError"}

    def check(name: str, value: Any) -> None:
        root = {"allOf": [channel["messages"][name]["payload"]], "components": doc["components"]}
        errors = [e.message for e in Draft202012Validator(root).iter_errors(value)]
        assert not errors, (name, errors)

    pub = account(srv, "schema@example.com", namespace="schema")
    assert pub.post("/api/console/instruments", json={"id": "schema.x", **INSTRUMENT}).status_code == 201
    secret = key(pub, "ingest")
    assert until(lambda: ingest(srv, secret, []).status_code == 200)  # the key's first refresh
    good = '{"id":"schema.x","price":5}\nnope\n{"id":"brent","price":1}'

    def big() -> bytes:  # stamped from now on: a line before the bar the good batch published is refused as late
        start = time.time()
        return "\n".join(json.dumps({"id": "schema.x", "price": 5, "ts": start + i * 0.0001})
                         for i in range(15000)).encode()

    async def run() -> list[dict[str, Any]]:
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": secret}) as ws:
            out = []
            for n, batch in enumerate((good, good)):
                check("IngestBatch", batch)
                if n:  # a batch over the frame cap through POST: the account's bucket (3,000 a second) in debt
                    assert ingest(srv, secret, big()).json()["accepted"] == 15000  # 4 s of debt
                await ws.send(batch)
                out.append(json.loads(await ws.recv()))
            return out

    answer, refused = asyncio.run(run())
    check("IngestAnswer", answer)
    assert answer["accepted"] == 1 and answer["rejectedCount"] == 2
    check("IngestError", refused)
    assert refused["error"]["status"] == 429 and refused["error"]["retryAfter"] >= 1


def test_a_batch_sent_again_with_its_idempotency_key_is_kept_once(srv: ServerProcess) -> None:
    """The same Idempotency-Key and body again (a client whose answer was lost): the first answer again, with
    `Idempotent-Replayed: true`, and nothing kept twice; the key with another body: 422 idempotency_key_reused,
    nothing kept; a key that is not 1-255 visible ASCII: 400 naming the header."""
    once = account(srv, "once@example.com", namespace="once")
    assert once.post("/api/console/instruments", json={"id": "once.x", **INSTRUMENT}).status_code == 201
    secret, reader = key(once, "ingest"), key(once)
    start = time.time() - 60
    body = [*lines_for(["once.x"], start, 5, 0.1), "not json"]
    first = until(lambda: (r := ingest(srv, secret, body, **{"Idempotency-Key": "batch-1"})).status_code == 200
                  and r)
    assert first.json()["accepted"] == 5 and [r["line"] for r in first.json()["rejected"]] == [6]
    assert "idempotent-replayed" not in first.headers
    again = ingest(srv, secret, body, **{"Idempotency-Key": "batch-1"})
    assert again.status_code == 200 and again.json() == first.json(), again.text
    assert again.headers["idempotent-replayed"] == "true"
    later = lines_for(["once.x"], start + 1, 5, 0.1)
    reused = problem(ingest(srv, secret, later, **{"Idempotency-Key": "batch-1"}), 422, "idempotency_key_reused")
    assert "another body" in reused["detail"] and reused["errors"][0]["field"] == "Idempotency-Key"
    for bad in ("", "two words", "x" * 256, "tab\there"):
        refused = problem(ingest(srv, secret, later, **{"Idempotency-Key": bad}), 400, "invalid_parameter")
        assert refused["errors"][0]["field"] == "Idempotency-Key"
    assert until(lambda: get(srv, reader, "/api/v1/quotes/once.x").json().get("volume") == 5)
    fresh = ingest(srv, secret, later, **{"Idempotency-Key": "batch-2"})
    assert fresh.status_code == 200 and fresh.json()["accepted"] == 5
    # 10, not 15: neither the replay nor the refused body was kept
    assert until(lambda: get(srv, reader, "/api/v1/quotes/once.x").json().get("volume") == 10)
    assert ingest(srv, secret, later).json()["accepted"] == 5  # without a key: kept again, as before
