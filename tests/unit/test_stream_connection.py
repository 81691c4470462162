"""The connection pump and service in process, with short keepalive timings: pings answered keep a
session open (keepalive rounds driven by an injected clock); a peer that never answers is closed with 1011
and dropped after the close timeout (on the real clock: the close timeout is a loop timer)."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import uvloop
from websockets.asyncio.client import connect

from server.config import Settings
from server.core.keys import ApiKey
from server.core.limits import Gcra
from server.core.metrics import Registry
from server.market.catalogue import default_catalogue
from server.market.state import build_demo_state
from server.stream.connection import CLOSE_TIMEOUT_S
from server.stream.delivery.resume_history import TickHistory
from server.stream.limits import StreamLimits
from server.stream.protocol.messages import tick_frame
from server.stream.service import StreamService

KEY = ApiKey("key_t", "professional", None, None, 0.0, None)


async def _no_key(secret: str) -> None:
    """The key cache's storage read for a key it does not hold: this test's storage has none."""


# keepalive timings in binary fractions, so the test's clock lands on them exactly
FAST = StreamLimits(max_conn={"professional": 5}, slow_close_s=0.5, keepalive_interval_s=0.25,
                    keepalive_timeout_s=0.25)


class FakeClock:
    """The time the stream reads, moved by the test alone."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_service(clock: Callable[[], float] = time.time) -> StreamService:
    catalogue = default_catalogue()
    state, _ = build_demo_state(catalogue, 1, time.time())
    keys: Any = SimpleNamespace(lookup=lambda secret: KEY if secret == "good" else None, load=_no_key)
    return StreamService(Settings(ws_port=0), state, catalogue, "e1", Registry(), keys, Gcra(),
                         TickHistory(len(catalogue.instruments), tick_frame), clock, FAST, None)


def split_frames(data: bytes) -> list[tuple[int, bytes]]:
    """(opcode, payload) of each unmasked server frame."""
    out, i = [], 0
    while i < len(data):
        n, head = data[i + 1] & 0x7F, 2
        if n == 126:
            n, head = int.from_bytes(data[i + 2:i + 4]), 4
        elif n == 127:
            n, head = int.from_bytes(data[i + 2:i + 10]), 10
        out.append((data[i] & 0x0F, data[i + head:i + head + n]))
        i += head + n
    return out


def port_of(service: StreamService) -> int:
    assert service._server is not None
    return int(service._server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]


def run(coro: Any) -> Any:
    return uvloop.run(asyncio.wait_for(coro, 20))


async def answered(ws: Any) -> None:
    """A request and its reply: when the reply arrives, the server has read everything this client sent before
    the request, and this client has read everything the server sent before the reply."""
    await ws.send('{"op":"ping","reqId":"sync"}')
    while (reply := orjson.loads(await ws.recv())).get("reqId") != "sync":
        assert reply["type"] in ("heartbeat", "tick"), reply


def test_client_answering_pings_stays_open() -> None:
    """Keepalive rounds on the test's clock, no sleeping: a round a keepalive interval after the last ping (not
    before) pings the session; the client's pong clears it, so the next rounds ping again and never close it."""
    async def scenario() -> None:
        clock = FakeClock(1_800_000_000.0)
        service = make_service(clock)
        await service.start()
        try:
            async with connect(f"ws://127.0.0.1:{port_of(service)}/ws/quotes?key=good", max_queue=None) as ws:
                await ws.recv()
                (session,) = service.core.sessions.all_open()
                for _ in range(4):
                    clock.now = session.last_ping_at + FAST.keepalive_interval_s - 0.125
                    service.sweep_round()
                    assert session.ping_sent_at is None  # not due yet
                    clock.now = session.last_ping_at + FAST.keepalive_interval_s
                    service.sweep_round()
                    assert session.ping_sent_at == session.last_ping_at == clock.now  # pinged
                    await answered(ws)  # the client has read the ping (it precedes the reply) and sent its pong,
                    await answered(ws)  # which the server has read (it precedes this request)
                    assert session.ping_sent_at is None and session.is_open
                assert ws.close_code is None
        finally:
            await service.stop()

    run(scenario())


def test_silent_peer_is_closed_1011_then_dropped() -> None:
    async def scenario() -> tuple[bytes, float]:
        service = make_service()
        await service.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port_of(service))
            nonce = base64.b64encode(os.urandom(16)).decode()
            writer.write((f"GET /ws/quotes?key=good HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                          f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\n"
                          f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101")
            started = time.monotonic()
            data = b""
            while chunk := await reader.read(65536):  # never answers a ping nor the close
                data += chunk
            return data, time.monotonic() - started
        finally:
            await service.stop()

    data, elapsed = run(scenario())
    frames = split_frames(data)
    opcodes = [op for op, _ in frames]
    assert opcodes[0] == 0x1 and 0x9 in opcodes  # the snapshot, then a keepalive ping
    assert opcodes[-1] == 0x8 and int.from_bytes(frames[-1][1][:2]) == 1011
    # ping after ~0.25 s, no pong for 0.25 s, then the 2 s close timeout: the TCP connection is dropped
    assert 0.5 < elapsed < 0.6 + CLOSE_TIMEOUT_S + 1.0


@pytest.mark.parametrize("target", ["/ws/quotes?key=bad", "/elsewhere"])
def test_refusal_is_an_http_problem(target: str) -> None:
    async def scenario() -> bytes:
        service = make_service()
        await service.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port_of(service))
            nonce = base64.b64encode(os.urandom(16)).decode()
            writer.write((f"GET {target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
            return await reader.read()  # the server closes after the response
        finally:
            await service.stop()

    raw = run(scenario())
    assert raw.split(b"\r\n", 1)[0] in (b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 404 Not found")
    assert b"Content-Type: application/problem+json" in raw
    assert b"bad" not in raw.split(b"\r\n\r\n", 1)[1]  # the key is not echoed
