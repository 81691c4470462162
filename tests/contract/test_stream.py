"""/ws/quotes over real WebSocket clients against the real server, on both runtimes (SPEC 7)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import socket
import time
from collections.abc import Coroutine, Iterator
from datetime import datetime
from typing import Any, TypeVar

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from server.market.catalogue import default_catalogue
from tests.conftest import RUNTIMES, ServerProcess, run_cli

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+08:00$")
QUOTE_FIELDS = {"id", "kind", "name", "price", "priceText", "change", "changePct", "source", "unit",
                "currency", "updated", "venue", "tradingDay"}
TICK_FIELDS = {"type", "id", "price", "change", "ts", "seq"}
SLOW_CLOSE_S = 1.0
ALL_IDS = [inst.id for inst in default_catalogue().instruments]
T = TypeVar("T")


@pytest.fixture(scope="module", params=RUNTIMES)
def stream_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Fast ticks (50 ms) and a 1 s slow-consumer grace so the suite stays quick."""
    data_dir = tmp_path_factory.mktemp(f"ws-{request.param}") / "data"
    srv = ServerProcess(data_dir, request.param, "--public-rate", "100000", "--tick-interval-ms", "50",
                        "--ws-slow-close-s", str(SLOW_CLOSE_S))
    yield srv
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


def run(coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def client(target: str, **kw: Any) -> Any:
    """A websockets client that keeps reading the socket even when the test stops consuming messages
    (with a bounded queue it would pause reading and only see the server's close after its own timeout)."""
    return connect(target, max_queue=None, **kw)


def url(srv: ServerProcess, key: str | None, path: str = "/ws/quotes") -> str:
    return f"{srv.ws_base}{path}" + (f"?key={key}" if key is not None else "")


async def recv_json(ws: ClientConnection, timeout: float = 5.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def recv_until(ws: ClientConnection, kind: str, timeout: float = 5.0) -> dict[str, Any]:
    """Skip ticks (and anything else) until a message of ``kind``."""
    deadline = time.monotonic() + timeout
    while True:
        msg = await recv_json(ws, max(0.01, deadline - time.monotonic()))
        if msg["type"] == kind:
            return msg


async def ticks_for(ws: ClientConnection, seconds: float) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = await recv_json(ws, left)
        except TimeoutError:
            break
        if msg["type"] in ("heartbeat", "roll"):  # every 5 s (SPEC 14); a product's new main (SPEC 19)
            continue
        assert msg["type"] == "tick", msg
        out.append(msg)
    return out


async def closed_code(ws: ClientConnection, within: float) -> int | None:
    """Read until the server closes; its close code."""
    async def drain() -> None:
        while True:
            await ws.recv()

    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(drain(), within)
    assert ws.close_code is not None
    return ws.close_code


def metric(srv: ServerProcess, name: str) -> float:
    text = httpx.get(srv.base + "/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


# --- happy path -----------------------------------------------------------------------


def test_snapshot_first_with_epoch_then_ticks_with_per_instrument_seq(stream_server: ServerProcess) -> None:
    epoch = httpx.get(stream_server.base + "/readyz").json()["epoch"]

    delivered_before = metric(stream_server, "market_ws_ticks_delivered_total")

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]], float]:
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            first = await recv_json(ws)
            ticks = await ticks_for(ws, 1.0)
            connections = await asyncio.to_thread(metric, stream_server, "market_ws_connections")
            return first, ticks, connections

    first, ticks, connections = run(scenario())
    assert connections >= 1
    assert metric(stream_server, "market_ws_ticks_delivered_total") >= delivered_before + len(ticks)
    assert first["type"] == "snapshot" and first["epoch"] == epoch and ISO.match(first["updated"])
    assert len(first["quotes"]) >= 40
    for q in first["quotes"]:
        assert q.keys() >= QUOTE_FIELDS
    assert len(ticks) >= 20
    last: dict[str, int] = {}
    for t in ticks:
        futures = TICK_FIELDS | {"bid", "ask", "oi", "vol"}  # a futures tick; a product's names its main (SPEC 19)
        assert set(t) in (TICK_FIELDS, futures, futures | {"contract"}) and ISO.match(t["ts"])
        assert isinstance(t["price"], float | int) and isinstance(t["seq"], int) and t["seq"] >= 1
        assert t["seq"] > last.get(t["id"], 0), "seq must increase per instrument"
        last[t["id"]] = t["seq"]
    assert len(last) > 5


def test_subscribe_narrows_delivery_with_ack_and_fresh_snapshot(stream_server: ServerProcess) -> None:
    async def scenario() -> None:
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"op": "subscribe", "ids": ["wti", "brent"], "reqId": "s1"}))
            ack = await recv_until(ws, "subscribed")
            assert ack == {"type": "subscribed", "ids": ["brent", "wti"], "reqId": "s1"}
            snap = await recv_json(ws)  # right after the ack: nothing for other ids in between
            assert snap["type"] == "snapshot" and [q["id"] for q in snap["quotes"]] == ["brent", "wti"]
            ticks = await ticks_for(ws, 1.5)
            assert ticks, "brent/wti tick within 1.5 s at 50 ms batches"
            assert {t["id"] for t in ticks} <= {"brent", "wti"}

            await ws.send(json.dumps({"op": "unsubscribe", "ids": ["wti"], "reqId": 2}))
            ack = await recv_until(ws, "subscribed")
            assert ack == {"type": "subscribed", "ids": ["brent"], "reqId": 2}
            snap = await recv_json(ws)
            assert [q["id"] for q in snap["quotes"]] == ["brent"]
            assert {t["id"] for t in await ticks_for(ws, 0.5)} <= {"brent"}

    run(scenario())


def test_unknown_ids_reject_the_whole_request(stream_server: ServerProcess) -> None:
    async def scenario() -> None:
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"op": "subscribe", "ids": ["brent"]}))
            assert (await recv_until(ws, "subscribed"))["reqId"] is None
            await ws.send(json.dumps({"op": "subscribe", "ids": ["wti", "no-such", "zzz"], "reqId": 7}))
            err = await recv_until(ws, "error")
            assert err["code"] == "unknown_ids" and err["reqId"] == 7
            assert "no-such" in err["detail"] and "zzz" in err["detail"]
            assert {t["id"] for t in await ticks_for(ws, 1.0)} <= {"brent"}  # set unchanged

    run(scenario())


def test_ping_pong_echoes_req_id(stream_server: ServerProcess) -> None:
    async def scenario() -> None:
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"op": "ping", "reqId": "p-9"}))
            pong = await recv_until(ws, "pong")
            assert pong["reqId"] == "p-9" and ISO.match(pong["ts"])

    run(scenario())


@pytest.mark.parametrize(("raw", "code"), [
    ("{not json", "invalid_json"),
    ('{"op":"dance","reqId":"d"}', "unknown_op"),
    ('{"op":"subscribe","ids":"brent"}', "invalid_message"),
    ('{"op":"subscribe","ids":[1,2]}', "invalid_message"),
    ("[]", "invalid_message"),
])
def test_bad_messages_give_errors_and_the_session_stays_open(stream_server: ServerProcess, raw: str,
                                                             code: str) -> None:
    async def scenario() -> None:
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            await recv_json(ws)
            await ws.send(raw)
            err = await recv_until(ws, "error")
            assert err["code"] == code and err["detail"]
            await ws.send(json.dumps({"op": "ping", "reqId": 1}))
            assert (await recv_until(ws, "pong"))["reqId"] == 1
            assert ws.close_code is None

    run(scenario())


# --- refusals --------------------------------------------------------------------------


def _refused(srv: ServerProcess, target: str, status: int, code: str) -> None:
    async def scenario() -> None:
        with pytest.raises(InvalidStatus) as info:
            async with connect(target):
                pass
        resp = info.value.response
        assert resp.status_code == status
        assert resp.headers["Content-Type"] == "application/problem+json"
        body = json.loads(resp.body)
        assert body["status"] == status and body["code"] == code and {"type", "title", "detail"} <= body.keys()

    run(scenario())


def test_refusals_missing_invalid_free_unknown_path(stream_server: ServerProcess) -> None:
    _, free = stream_server.create_key("free")
    _refused(stream_server, url(stream_server, None), 401, "unauthorized")
    _refused(stream_server, url(stream_server, "mk_not-a-real-key"), 401, "unauthorized")
    _refused(stream_server, url(stream_server, free), 403, "plan_required")
    _refused(stream_server, url(stream_server, stream_server.demo_key, "/ws/other"), 404, "not_found")
    assert metric(stream_server, 'market_ws_handshake_refusals_total{reason="free_plan"}') >= 1


def test_plain_http_on_the_ws_port_is_a_problem(stream_server: ServerProcess) -> None:
    resp = httpx.get(url(stream_server, stream_server.demo_key).replace("ws://", "http://"), timeout=5)
    assert resp.status_code == 426 and resp.headers["content-type"] == "application/problem+json"
    assert resp.json()["code"] == "upgrade_required"


def test_over_the_plan_connection_limit_is_429(stream_server: ServerProcess) -> None:
    _, key = stream_server.create_key("professional")

    async def scenario() -> None:
        conns = [await client(url(stream_server, key)) for _ in range(5)]
        try:
            for ws in conns:
                assert (await recv_json(ws))["type"] == "snapshot"
            with pytest.raises(InvalidStatus) as info:
                await connect(url(stream_server, key))
            resp = info.value.response
            assert resp.status_code == 429 and json.loads(resp.body)["code"] == "too_many_connections"
            await conns[0].close()
            again = await client(url(stream_server, key))  # a freed slot is usable at once
            await again.close()
        finally:
            for ws in conns:
                await ws.close()

    run(scenario())


def test_asyncapi_document_is_served(stream_server: ServerProcess) -> None:
    resp = httpx.get(stream_server.base + "/asyncapi.json", timeout=5)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    doc = resp.json()
    assert doc["asyncapi"] == "3.0.0"
    channel = doc["channels"]["quotes"]
    assert channel["address"] == "/ws/quotes"
    assert {"1001", "1008", "1009", "4001", "4008"} <= set(channel["x-close-codes"])
    assert doc["servers"]["local"]["host"].endswith(f":{stream_server.ws_port}") or doc["servers"]


# --- closes ----------------------------------------------------------------------------


def test_message_flood_closes_1008(stream_server: ServerProcess) -> None:
    async def scenario() -> int | None:
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            await recv_json(ws)
            for i in range(30):
                await ws.send(json.dumps({"op": "ping", "reqId": i}))
            return await closed_code(ws, 5.0)

    assert run(scenario()) == 1008


def test_message_over_64_kib_closes_1009(stream_server: ServerProcess) -> None:
    async def scenario() -> int | None:
        async with client(url(stream_server, stream_server.demo_key), max_size=None) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"op": "ping", "reqId": "x" * (64 * 1024)}))
            return await closed_code(ws, 5.0)

    assert run(scenario()) == 1009


def test_revoked_key_closes_its_sessions_4001(stream_server: ServerProcess) -> None:
    key_id, key = stream_server.create_key("professional")

    async def scenario() -> tuple[int | None, float]:
        async with client(url(stream_server, key)) as ws, \
                client(url(stream_server, stream_server.demo_key)) as other:
            await recv_json(ws)
            await recv_json(other)
            started = time.monotonic()
            out = await asyncio.to_thread(run_cli, stream_server.data_dir, "keys", "revoke", key_id)
            assert out.returncode == 0, out.stderr
            code = await closed_code(ws, 5.0)
            elapsed = time.monotonic() - started
            assert other.close_code is None  # other keys' sessions keep streaming
            assert (await recv_until(other, "tick"))["type"] == "tick"
            return code, elapsed

    code, elapsed = run(scenario())
    assert code == 4001 and elapsed < 5.0
    _refused(stream_server, url(stream_server, key), 401, "unauthorized")


# --- slow consumers ----------------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _raw_handshake(srv: ServerProcess, key: str) -> socket.socket:
    """A client that completes the handshake and then never reads (tiny receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", srv.ws_port))
    nonce = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws/quotes?key={key} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)  # byte by byte: leave everything after the headers unread
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _masked_text(payload: bytes) -> bytes:
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 65536
    length = bytes([0x80 | len(payload)]) if len(payload) < 126 else bytes([0x80 | 126]) + len(payload).to_bytes(2)
    return b"\x81" + length + mask + body


def test_slow_client_is_conflated_then_closed_while_others_stay_on_time(stream_server: ServerProcess) -> None:
    pid = stream_server.proc.pid
    _, key = stream_server.create_key("enterprise")
    conflated_before = metric(stream_server, "market_ws_ticks_conflated_total")
    slow_before = metric(stream_server, "market_ws_slow_consumer_closes_total")
    rss_before = _rss_kib(pid)
    slow = _raw_handshake(stream_server, key)
    everything = json.dumps({"op": "subscribe", "ids": ALL_IDS}).encode()
    # each answer is an ack plus a full snapshot (~19 KB since SPEC 16's venue and tradingDay) the client never
    # reads: 10 of them pass the 64 KiB cap (ticks are held, conflated) and stay under the 256 KiB hard cap
    for _ in range(10):
        slow.sendall(_masked_text(everything))

    async def watch_fast_client() -> list[float]:
        lags: list[float] = []
        async with client(url(stream_server, stream_server.demo_key)) as ws:
            await recv_json(ws)
            deadline = time.monotonic() + 4.0
            while time.monotonic() < deadline:
                msg = await recv_json(ws, 2.0)
                if msg["type"] == "tick":
                    lags.append(time.time() - datetime.fromisoformat(msg["ts"]).timestamp())
        return lags

    lags = run(watch_fast_client())
    assert len(lags) > 100 and max(lags) < 0.5, f"fast client fell behind: max lag {max(lags):.3f}s"
    deadline = time.monotonic() + 10
    while metric(stream_server, "market_ws_slow_consumer_closes_total") <= slow_before:
        assert time.monotonic() < deadline, "slow consumer never closed"
        time.sleep(0.1)
    assert metric(stream_server, "market_ws_ticks_conflated_total") > conflated_before
    # the connection is dropped (after the 2 s close timeout at the latest): reading ends
    slow.settimeout(10)
    try:
        while slow.recv(65536):
            pass
    except ConnectionResetError:
        pass
    slow.close()
    assert _rss_kib(pid) - rss_before < 20 * 1024, "server memory grew for a client that never reads"


# --- shutdown ----------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_shutdown_closes_sessions_1001(runtime: str, tmp_path: Any) -> None:
    srv = ServerProcess(tmp_path / "data", runtime, "--tick-interval-ms", "50")

    async def scenario() -> int | None:
        async with client(url(srv, srv.demo_key)) as ws:
            await recv_json(ws)
            srv.proc.send_signal(signal.SIGTERM)
            return await closed_code(ws, 5.0)

    try:
        assert run(scenario()) == 1001
    finally:
        code = srv.stop()
    assert code == 0, srv.output()
