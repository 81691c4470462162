"""permessage-deflate on /ws/quotes (RFC 7692, issue 22 item 4), real servers on both runtimes.

Negotiated when the client offers it, always with server_no_context_takeover, so every deflating connection gets
the same compressed bytes for a shared frame; a client that offers nothing gets raw frames; `--no-ws-deflate`
turns it off. The wire is read two ways: the `websockets` client (which decodes, and compresses what it sends
with context takeover) and a raw socket that checks RSV1 and inflates each message itself.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.extensions.permessage_deflate import PerMessageDeflate

from tests.conftest import RUNTIMES, ServerProcess

OFFER = "permessage-deflate; client_max_window_bits"
TAIL = b"\x00\x00\xff\xff"


@pytest.fixture(scope="module", params=RUNTIMES)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"deflate-{request.param}") / "data"
    server = ServerProcess(data_dir, request.param, "--tick-interval-ms", "50", "--heartbeat-s", "1")
    yield server
    assert server.stop() == 0, server.output()


def run(coro: Any, timeout: float = 20.0) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def _url(srv: ServerProcess) -> str:
    return f"{srv.ws_base}/ws/quotes"


def _headers(srv: ServerProcess) -> dict[str, str]:
    return {"X-SERVICE-Key": srv.demo_key}


async def _recv(ws: ClientConnection) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), 5.0))  # type: ignore[no-any-return]


async def _until(ws: ClientConnection, kind: str, **match: Any) -> dict[str, Any]:
    while True:
        msg = await _recv(ws)
        if msg["type"] == kind and all(msg.get(k) == v for k, v in match.items()):
            return msg


class Raw:
    """A WebSocket client on a bare socket: reads frames as they are on the wire."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, extensions: str) -> None:
        self.reader, self.writer, self.extensions = reader, writer, extensions

    @classmethod
    async def open(cls, srv: ServerProcess, offer: str | None) -> Raw:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.ws_port)
        nonce = base64.b64encode(os.urandom(16)).decode()
        ext = f"Sec-WebSocket-Extensions: {offer}\r\n" if offer else ""
        writer.write((f"GET /ws/quotes HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\nX-SERVICE-Key: {srv.demo_key}\r\n"
                      f"{ext}\r\n").encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        assert head.startswith("HTTP/1.1 101"), head
        exts = [line.split(":", 1)[1].strip() for line in head.split("\r\n")
                if line.lower().startswith("sec-websocket-extensions:")]
        return cls(reader, writer, ",".join(exts))

    async def frame(self) -> tuple[int, bytes]:
        """(first byte, payload) of the next server frame."""
        first, second = await asyncio.wait_for(self.reader.readexactly(2), 5.0)
        assert not second & 0x80  # server frames are never masked
        n = second & 0x7F
        if n >= 126:
            n = int.from_bytes(await self.reader.readexactly(2 if n == 126 else 8), "big")
        return first, await self.reader.readexactly(n)

    async def message(self) -> tuple[bool, dict[str, Any]]:
        """(was compressed, decoded JSON) of the next data frame; each compressed message inflates on its own."""
        first, payload = await self.frame()
        assert first & 0x80 and first & 0x0F == 1, hex(first)  # final text frames only
        compressed = bool(first & 0x40)
        if compressed:
            payload = zlib.decompressobj(wbits=-15).decompress(payload + TAIL)  # a fresh window: no takeover
        return compressed, json.loads(payload)

    def send(self, payload: bytes, compress: bool) -> None:
        first = 0x81
        if compress:
            enc = zlib.compressobj(wbits=-15)
            payload = (enc.compress(payload) + enc.flush(zlib.Z_SYNC_FLUSH))[:-4]
            first |= 0x40
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        assert len(payload) < 126
        self.writer.write(bytes([first, 0x80 | len(payload)]) + mask + body)

    def close(self) -> None:
        self.writer.close()


def test_offered_deflate_is_negotiated_and_every_message_decodes(srv: ServerProcess) -> None:
    """The websockets client (compression="deflate", its default) gets snapshot, ticks, acks, errors, candle
    frames, heartbeats; what it sends is compressed with client context takeover, and the server decodes it."""
    async def go() -> None:
        async with connect(_url(srv), additional_headers=_headers(srv), max_queue=None) as ws:
            exts = ws.protocol.extensions
            assert len(exts) == 1 and isinstance(exts[0], PerMessageDeflate)
            assert exts[0].remote_no_context_takeover  # the client was told: server_no_context_takeover
            snap = await _recv(ws)
            assert snap["type"] == "snapshot" and len(snap["quotes"]) > 10
            tick = await _until(ws, "tick")
            assert {"id", "price", "seq"} <= tick.keys()
            for i in range(3):  # several client messages: the client's compression context carries over
                await ws.send(json.dumps({"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1m"],
                                          "reqId": f"s{i}"}))
                ack = await _until(ws, "subscribed", reqId=f"s{i}")
                assert ack["ids"] == ["brent", "wti"] and ack["candles"] == ["1m"]
            await ws.send(json.dumps({"op": "subscribe", "ids": ["nope"], "reqId": "bad"}))
            err = await _until(ws, "error", reqId="bad")
            assert err["code"] == "unknown_ids"
            candle = await _until(ws, "candle")
            assert candle["interval"] == "1m" and candle["id"] in ("brent", "wti")
            beat = await _until(ws, "heartbeat")
            assert set(beat["seqs"]) == {"brent", "wti"}
            tick = await _until(ws, "tick")
            assert tick["id"] in ("brent", "wti")

    run(go())


def test_raw_frames_are_rsv1_and_the_same_bytes_for_every_deflating_client(srv: ServerProcess) -> None:
    async def go() -> None:
        a = await Raw.open(srv, OFFER)
        b = await Raw.open(srv, "permessage-deflate")
        plain = await Raw.open(srv, None)
        try:
            assert a.extensions.startswith("permessage-deflate") and "server_no_context_takeover" in a.extensions
            assert "server_no_context_takeover" in b.extensions
            assert plain.extensions == ""
            snap_compressed, snap = await a.message()
            assert snap_compressed and snap["type"] == "snapshot"
            raw_compressed, raw_snap = await plain.message()
            assert not raw_compressed and raw_snap["type"] == "snapshot"
            # the same tick (id, seq) reaches a and b as the same compressed frame: compressed once, shared. b's
            # first ticks (after its snapshot) are ones a also gets, later in a's stream than a's own first ticks
            # (a subscribed first): so read b's, then a's until a has passed them (bounded)
            def decode(first: int, payload: bytes) -> dict:
                return json.loads(zlib.decompressobj(wbits=-15).decompress(payload + TAIL) if first & 0x40 else payload)

            await b.message()  # b's snapshot
            frames_b: dict[tuple[str, int], tuple[int, bytes]] = {}
            for _ in range(80):
                first, payload = await b.frame()
                msg = decode(first, payload)
                if msg["type"] == "tick":
                    frames_b[(msg["id"], msg["seq"])] = (first, payload)
            assert frames_b
            same = 0
            for _ in range(5000):
                first, payload = await a.frame()
                msg = decode(first, payload)
                if msg["type"] == "tick" and (msg["id"], msg["seq"]) in frames_b:
                    assert frames_b[(msg["id"], msg["seq"])] == (first, payload)
                    same += 1
                    if same == len(frames_b):
                        break
            assert same == len(frames_b)  # every tick b got, a got as the very same bytes
            # a client with no offer: every frame raw (RSV1 clear), plain JSON
            for _ in range(20):
                was_compressed, msg = await plain.message()
                assert not was_compressed and msg["type"] in ("tick", "heartbeat")
            # a compressed client message (RSV1) is decoded, an uncompressed one too (RFC 7692 allows both)
            a.send(json.dumps({"op": "ping", "reqId": "z"}).encode(), compress=True)
            a.send(json.dumps({"op": "ping", "reqId": "u"}).encode(), compress=False)
            seen = []
            while len(seen) < 2:
                _, msg = await a.message()
                if msg["type"] == "pong":
                    seen.append(msg["reqId"])
            assert seen == ["z", "u"]
        finally:
            for c in (a, b, plain):
                c.close()

    run(go())


def test_window_size_the_client_asks_for_is_honoured_and_8_bits_is_declined(srv: ServerProcess) -> None:
    """server_max_window_bits=10: the snapshot inflates within a 1 KiB window; 8 (which zlib cannot produce)
    is declined: that client gets raw frames. Several offers: the first acceptable one wins."""
    async def go() -> None:
        small = await Raw.open(srv, "permessage-deflate; server_max_window_bits=10")
        eight = await Raw.open(srv, "permessage-deflate; server_max_window_bits=8")
        two = await Raw.open(srv, "permessage-deflate; server_max_window_bits=8, permessage-deflate; "
                                  "client_no_context_takeover")
        try:
            assert "server_max_window_bits=10" in small.extensions
            first, payload = await small.frame()
            assert first & 0x40
            assert json.loads(zlib.decompressobj(wbits=-10).decompress(payload + TAIL))["type"] == "snapshot"
            assert eight.extensions == ""
            compressed, msg = await eight.message()
            assert not compressed and msg["type"] == "snapshot"
            assert "client_no_context_takeover" in two.extensions and "=8" not in two.extensions
            compressed, msg = await two.message()
            assert compressed and msg["type"] == "snapshot"
        finally:
            for c in (small, eight, two):
                c.close()

    run(go())


def test_client_without_compression_gets_raw_frames(srv: ServerProcess) -> None:
    async def go() -> None:
        async with connect(_url(srv), additional_headers=_headers(srv), compression=None) as ws:
            assert ws.protocol.extensions == []
            assert (await _recv(ws))["type"] == "snapshot"
            await ws.send(json.dumps({"op": "ping", "reqId": "p"}))
            assert (await _until(ws, "pong"))["reqId"] == "p"

    run(go())


def test_no_ws_deflate_flag_turns_it_off(tmp_path: Any) -> None:
    server = ServerProcess(tmp_path / "data", "granian", "--no-ws-deflate")
    try:
        async def go() -> None:
            async with connect(_url(server), additional_headers=_headers(server)) as ws:
                assert ws.protocol.extensions == []  # offered, not accepted
                assert (await _recv(ws))["type"] == "snapshot"
            raw = await Raw.open(server, OFFER)
            try:
                assert raw.extensions == ""
                compressed, msg = await raw.message()
                assert not compressed and msg["type"] == "snapshot"
            finally:
                raw.close()

        run(go())
    finally:
        assert server.stop() == 0, server.output()
