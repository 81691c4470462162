"""Live candles and heartbeats on /ws/quotes (SPEC 14), real servers on both runtimes and both engines.

The feed is a jsonl file the test appends to, the server runs on a fake clock (hidden --clock-start) that reads a
minute boundary a few seconds after it starts, and the test reads the server's clock (a pong's ts) to stamp
ticks in the current bucket: so a bucket ends by the server clock while the test watches, and no test waits a
real minute. Final frames are compared with /kline afterwards; non-final frames are checked by the tick seconds
they stand for (never by when they arrive); heartbeat seqs are compared with the ticks the client saw before each
heartbeat. On the Redis engine two hubs sharing one feed send the same frames.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from server.market.timefmt import TZ
from tests.conftest import ServerProcess, engine_variants
from tests.redis_service import redis_prefix, require_redis

SERVERS = [("granian", "memory"), ("robyn", "memory"), ("granian", "redis"), ("robyn", "redis")]
IDS = ["brent", "wti", "methanol"]


def _clock_start() -> str:
    """A fake now 12 s before a minute boundary (a Wednesday): the server is up with several seconds left."""
    return datetime(2026, 11, 18, 10, 29, 48, tzinfo=TZ).isoformat()


class Feed:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def add(self, *ticks: tuple[str, float, float, int]) -> None:
        with self.path.open("a") as f:
            f.write("".join(json.dumps({"id": i, "price": p, "ts": ts, "volume": v}) + "\n" for i, p, ts, v in ticks))


class Live:
    def __init__(self, srv: ServerProcess, feed: Feed) -> None:
        self.srv, self.feed = srv, feed
        self.http = srv.client(headers={"X-SERVICE-Key": srv.demo_key})


def _flags(engine: str, prefix: str | None) -> list[str]:
    if engine == "redis":
        assert prefix is not None
        return ["--engine", "redis", "--redis-url", require_redis(), "--redis-prefix", prefix]
    return ["--engine", "memory"]


@pytest.fixture(params=engine_variants(SERVERS))
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    runtime, engine = request.param
    feed = Feed(tmp_path / "ticks.jsonl")
    with redis_prefix(require_redis()) if engine == "redis" else nullcontext() as prefix:
        srv = ServerProcess(tmp_path / "data", runtime, "--feed", f"jsonl:{feed.path}", "--clock-start",
                            _clock_start(), "--heartbeat-s", "1", *_flags(engine, prefix))
        box = Live(srv, feed)
        yield box
        box.http.close()
        assert srv.stop() == 0, srv.output()


async def ws_open(srv: ServerProcess) -> ClientConnection:
    return await connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key},
                         max_queue=None)


async def recv(ws: ClientConnection, timeout: float = 10.0) -> dict[str, Any]:
    return dict(json.loads(await asyncio.wait_for(ws.recv(), timeout)))


async def request(ws: ClientConnection, message: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send `message`; (its answer, what came before it)."""
    await ws.send(json.dumps(message))
    before = []
    while True:
        msg = await recv(ws)
        if msg["type"] in ("subscribed", "error", "pong") and msg.get("reqId") == message.get("reqId"):
            return msg, before
        before.append(msg)


async def server_now(ws: ClientConnection) -> tuple[float, float]:
    """(the server clock, time.monotonic()) at one moment, from a pong's ts."""
    sent = time.monotonic()
    pong, _ = await request(ws, {"op": "ping", "reqId": "clock"})
    got = time.monotonic()
    return datetime.fromisoformat(pong["ts"]).timestamp() - (got - sent) / 2, got - (got - sent) / 2


def _kline_bucket(http: httpx.Client, inst: str, interval: str, t: str) -> dict:
    series = http.get(f"/api/v1/kline/{inst}", params={"interval": interval, "limit": 5}).json()["series"]
    return next(c for c in series if c["t"] == t)


def _candle(frame: dict) -> dict:
    return {k: frame[k] for k in ("t", "o", "h", "l", "c", "v")}


def test_final_frames_come_within_a_second_of_the_bucket_end_and_equal_kline(live: Live) -> None:
    async def run() -> None:
        ws = await ws_open(live.srv)
        ack, _ = await request(ws, {"op": "subscribe", "ids": IDS, "candles": ["1m", "5m", "1d"], "reqId": "s"})
        assert ack == {"type": "subscribed", "ids": IDS, "reqId": "s", "candles": ["1m", "5m", "1d"]}
        now, mono = await server_now(ws)
        end = (math.floor(now / 60) + 1) * 60  # the minute boundary ahead (the fake clock puts it ~10 s ahead)
        if end - now < 5:
            # started too slowly for this boundary: the next one (a slow machine only). The ticks below must be
            # applied before the end (a loaded Redis hub took more than 2.5 s once: they then counted toward the
            # next bucket, and no final came for this one)
            end += 60
        start = end - 60
        first = max(start, now)
        live.feed.add(("brent", 80.0, first, 3), ("wti", 75.5, first, 1))
        live.feed.add(("brent", 81.25, first + 0.5, 2), ("brent", 79.5, first + 0.7, 4))
        seqs: dict[str, int] = {}
        finals: dict[tuple[str, str], dict] = {}
        received_at: dict[tuple[str, str], float] = {}
        deadline = mono + (end - now) + 8
        while len(finals) < 2 and time.monotonic() < deadline:
            # the server clock passing the end: wait for the brent and wti 1m finals
            msg = await recv(ws, max(0.1, deadline - time.monotonic()))
            if msg["type"] == "tick":
                seqs[msg["id"]] = msg["seq"]
            if msg["type"] == "candle" and msg["final"] and msg["interval"] == "1m":
                finals[(msg["id"], msg["interval"])] = msg
                received_at[(msg["id"], msg["interval"])] = now + (time.monotonic() - mono)
        assert set(finals) == {("brent", "1m"), ("wti", "1m")}, finals
        for key, frame in finals.items():
            assert end <= received_at[key] + 0.3 and received_at[key] <= end + 1.0 + 0.3, (key, received_at[key], end)
            assert frame["t"] == datetime.fromtimestamp(start, TZ).isoformat(timespec="milliseconds")
            assert frame["seq"] == seqs[frame["id"]]  # the last tick included
        assert _candle(finals[("brent", "1m")]) == {"t": finals[("brent", "1m")]["t"], "o": 80.0, "h": 81.25,
                                                    "l": 79.5, "c": 79.5, "v": 9}
        # afterwards /kline answers the very same candle, and a late tick stamped inside the ended bucket counts
        # toward the next one: the final frame stays true
        live.feed.add(("brent", 90.0, start + 30, 5))
        while (await recv(ws))["type"] != "tick":
            pass
        await ws.close()
        for (inst, interval), frame in finals.items():
            assert _kline_bucket(live.http, inst, interval, frame["t"]) == _candle(frame)

    asyncio.run(asyncio.wait_for(run(), 150))  # the next boundary may be a minute away


def test_non_final_frames_at_most_one_per_second_and_heartbeats(live: Live) -> None:
    """Non-final frames: each one the candle as of the end of a different second of tick time (so at most one per
    second; the per-second guard of the server's clock itself, which only a stalled loop exercises, is unit-tested
    with an injected clock in tests/unit/test_stream_candles.py), each newer than the last. A second of tick time
    has a second frame only when one of its ticks was applied after its first frame was sent (a tick that reached
    the hub after that second's run, as a loaded machine's feed writes them): the stream's own order shows it, the
    tick coming after that frame. Heartbeats: at whole seconds, 1 s apart, each written after the ticks it accounts
    for. Nothing here depends on when frames arrive."""
    async def run() -> None:
        ws = await ws_open(live.srv)
        ack, _ = await request(ws, {"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1m", "1h"],
                                    "reqId": 1})
        assert ack["candles"] == ["1m", "1h"]
        now, mono = await server_now(ws)
        # ticks stamped 10 per second for the next 3.5 s of the server clock, written as the clock reaches them
        stamps = [now + 0.1 * i for i in range(1, 36)]
        seen: dict[str, int] = {}
        stamp_of: dict[tuple[str, int], float] = {}  # (id, seq) -> the tick's stamp, for the ticks of this test
        candles: list[dict] = []
        beats: list[dict] = []
        order = 0
        tick_at: dict[tuple[str, int], int] = {}  # (id, seq) -> the tick's place in the stream's order of messages
        writer = asyncio.get_running_loop().create_task(_write_live(live.feed, stamps, now, mono))
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            msg = await recv(ws, 5)
            order += 1
            if msg["type"] == "tick":
                assert msg["seq"] > seen.get(msg["id"], 0)
                seen[msg["id"]] = msg["seq"]
                stamp_of[msg["id"], msg["seq"]] = datetime.fromisoformat(msg["ts"]).timestamp()
                tick_at[msg["id"], msg["seq"]] = order
            elif msg["type"] == "heartbeat":
                assert set(msg["seqs"]) == {"brent", "wti"}
                for inst, seq in msg["seqs"].items():  # written after the ticks it accounts for
                    assert seq == seen.get(inst, seq), (msg, seen)
                beats.append(msg)
            elif msg["type"] == "candle":
                assert msg["id"] in ("brent", "wti") and msg["interval"] in ("1m", "1h")
                candles.append({**msg, "at": order})
        await writer
        await ws.close()
        assert len(beats) >= 4
        stamps_s = [datetime.fromisoformat(b["ts"]).timestamp() for b in beats]
        assert all(abs(s - round(s)) < 1e-6 for s in stamps_s)  # at whole seconds (--heartbeat-s 1)
        assert [round(b - a, 3) for a, b in itertools.pairwise(stamps_s)] == [1.0] * (len(beats) - 1)
        ours = [f for f in candles if not f["final"] and (f["id"], f["seq"]) in stamp_of]  # not the ack's current
        for channel in {(f["id"], f["interval"]) for f in ours}:
            frames = [f for f in ours if (f["id"], f["interval"]) == channel]
            seqs = [f["seq"] for f in frames]
            assert seqs == sorted(set(seqs)), frames  # each newer than the last
            for a, b in itertools.pairwise(frames):  # one second of ticks each, but for a late tick of that second
                if math.floor(stamp_of[a["id"], a["seq"]]) == math.floor(stamp_of[b["id"], b["seq"]]):
                    assert tick_at[b["id"], b["seq"]] > a["at"], (a, b)
        brent_1m = [f for f in ours if f["id"] == "brent" and f["interval"] == "1m"]
        assert len(brent_1m) >= 3  # the ticks span 4 seconds, each moving the candle
        for f in (f for f in ours if f["id"] == "brent"):
            assert f["seq"] <= seen["brent"] and f["l"] <= min(f["o"], f["c"]) <= max(f["o"], f["c"]) <= f["h"]

    asyncio.run(asyncio.wait_for(run(), 60))


LEAD_S = 0.3  # ticks are written this long before the server clock reaches their stamps


async def _write_live(feed: Feed, stamps: list[float], now: float, mono: float) -> None:
    """Each tick written LEAD_S before the clock reaches its stamp: applied before the candle run that covers its
    second (GRACE_S after the second ends) even when the feed file and, on Redis, the tick log take a few hundred
    ms under load (a tick applied later legitimately gets a frame of its own in a later clock second)."""
    prices = [80.0 + (i % 7) * 0.25 for i in range(len(stamps))]
    for ts, price in zip(stamps, prices, strict=True):
        await asyncio.sleep(max(0.0, ts - LEAD_S - (now + time.monotonic() - mono)))
        feed.add(("brent", price, ts, 1), ("wti", price - 5, ts, 2))


def test_subscription_messages_for_candles(live: Live) -> None:
    async def run() -> None:
        ws = await ws_open(live.srv)
        now, _ = await server_now(ws)
        live.feed.add(("brent", 80.0, now, 1), ("wti", 70.0, now, 1))
        ticked: set[str] = set()
        while ticked != {"brent", "wti"}:  # applied (on Redis: once read back from the stream)
            msg = await recv(ws)
            if msg["type"] == "tick":
                ticked.add(msg["id"])
        ack, _ = await request(ws, {"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1d", "1m", "1m"],
                                    "reqId": "a"})
        assert ack["candles"] == ["1m", "1d"]
        plain, _ = await request(ws, {"op": "subscribe", "ids": ["brent"], "reqId": "b"})
        assert "candles" not in plain  # a subscribe without candles keeps none (and its ack does not echo them)
        ack, _ = await request(ws, {"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1m", "5m"],
                                    "reqId": "c"})
        ack, _ = await request(ws, {"op": "unsubscribe", "ids": ["wti"], "candles": ["1m"], "reqId": "d"})
        assert ack == {"type": "subscribed", "ids": ["brent", "wti"], "reqId": "d", "candles": ["1m", "5m"]}
        ack, _ = await request(ws, {"op": "unsubscribe", "ids": [], "candles": ["1m"], "reqId": "e"})
        assert ack["candles"] == ["5m"] and ack["ids"] == ["brent", "wti"]
        ack, _ = await request(ws, {"op": "unsubscribe", "ids": ["brent"], "reqId": "f"})
        assert ack["ids"] == ["wti"]
        for bad in ({"candles": "1m"}, {"candles": ["2m"]}, {"candles": [1]}):
            err, _ = await request(ws, {"op": "subscribe", "ids": ["brent"], "reqId": "x", **bad})
            assert err["type"] == "error" and err["code"] == "invalid_message" and "candles" in err["detail"]
        # right after the ack: the current bucket's candle, when it has ticks (wti's, brent's)
        await ws.send(json.dumps({"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1m"], "reqId": "g"}))
        while (await recv(ws))["type"] != "subscribed":
            pass
        snapshot = await recv(ws)
        assert snapshot["type"] == "snapshot"
        current = [await recv(ws), await recv(ws)]
        assert [(c["type"], c["id"], c["interval"], c["final"]) for c in current] == [
            ("candle", "brent", "1m", False), ("candle", "wti", "1m", False)]
        assert current[0]["c"] == 80.0 and current[0]["seq"] == snapshot["seqs"]["brent"]
        await ws.close()

    asyncio.run(asyncio.wait_for(run(), 60))


def test_quiet_bucket_of_old_ticks_is_final_once_and_equal_to_kline(live: Live) -> None:
    async def run() -> None:
        ws = await ws_open(live.srv)
        await request(ws, {"op": "subscribe", "ids": ["methanol"], "candles": ["1m", "15m"], "reqId": "s"})
        now, _ = await server_now(ws)
        old = (math.floor(now / 900) - 2) * 900  # two 15-minute buckets ago: ended long before
        live.feed.add(("methanol", 2400.0, old + 10, 5), ("methanol", 2410.0, old + 20, 1),
                      ("methanol", 2390.0, old + 200, 2))  # 1m buckets: old and old + 180
        finals: list[dict] = []
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            msg = await recv(ws, 5)
            if msg["type"] == "candle" and msg["final"]:
                finals.append(msg)
        await ws.close()
        keys = [(f["interval"], f["t"]) for f in finals]
        assert len(keys) == len(set(keys)) == 3, finals  # exactly one final per bucket that had ticks
        by = {(f["interval"], f["t"]): f for f in finals}
        t0 = datetime.fromtimestamp(old, TZ).isoformat(timespec="milliseconds")
        t3 = datetime.fromtimestamp(old + 180, TZ).isoformat(timespec="milliseconds")
        assert _candle(by[("1m", t0)]) == {"t": t0, "o": 2400.0, "h": 2410.0, "l": 2400.0, "c": 2410.0, "v": 6}
        assert _candle(by[("15m", t0)]) == {"t": t0, "o": 2400.0, "h": 2410.0, "l": 2390.0, "c": 2390.0, "v": 8}
        for (interval, t), frame in by.items():
            assert _kline_bucket(live.http, "methanol", interval, t) == _candle(frame)
        assert by[("1m", t3)]["c"] == 2390.0

    asyncio.run(asyncio.wait_for(run(), 60))


def test_heartbeats_off_with_zero(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data", "granian", "--heartbeat-s", "0", "--tick-interval-ms", "50")

    async def run() -> None:
        ws = await ws_open(srv)
        ticks = 0
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            msg = await recv(ws, 3)
            assert msg["type"] != "heartbeat"
            ticks += msg["type"] == "tick"
        assert ticks > 10
        await ws.close()

    try:
        asyncio.run(asyncio.wait_for(run(), 30))
    finally:
        assert srv.stop() == 0, srv.output()


def test_redis_hubs_send_the_same_candle_frames(tmp_path: Path) -> None:
    """Two hubs on one Redis tick stream (the leader reads the feed file), a client on each: the same candle
    frames in the same order for the same ticks (a jsonl feed: no demo history, which each hub seeds as of its
    own start)."""
    url = require_redis()
    feed = Feed(tmp_path / "ticks.jsonl")
    with redis_prefix(url) as prefix:
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--feed", f"jsonl:{feed.path}",
                 "--heartbeat-s", "1")
        hubs = [ServerProcess(tmp_path / "a", "granian", *flags)]
        try:
            hubs.append(ServerProcess(tmp_path / "b", "robyn", *flags))

            stamps_n = 35
            channels = {(i, k) for i in ("brent", "wti") for k in ("1m", "5m", "1d")}

            async def collect(srv: ServerProcess, started: asyncio.Event, end: asyncio.Future) -> list[dict]:
                """Every candle frame until each channel sent one holding the last tick (its seq): the frames'
                content ends the collection, never a fixed wait (a hub under load may send a second later)."""
                ws = await ws_open(srv)
                await request(ws, {"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1m", "5m", "1d"],
                                   "reqId": "s"})
                started.set()
                frames: list[dict] = []
                last: dict[str, int] = {}  # the seq of each instrument's last tick, once it came
                reached: set[tuple[str, str]] = set()
                while reached != channels:
                    msg = await recv(ws)
                    if msg["type"] == "tick" and end.done():
                        if datetime.fromisoformat(msg["ts"]).timestamp() >= end.result() - 0.001:
                            last[msg["id"]] = msg["seq"]
                    elif msg["type"] == "candle":
                        frames.append(msg)
                    reached = {(i, k) for f in frames for i, k in [(f["id"], f["interval"])]
                               if i in last and f["seq"] >= last[i]}
                await ws.close()
                return frames

            async def both() -> tuple[list[dict], list[dict]]:
                ready = [asyncio.Event(), asyncio.Event()]
                end: asyncio.Future = asyncio.get_running_loop().create_future()  # the last tick's stamp
                tasks = [asyncio.create_task(collect(h, e, end)) for h, e in zip(hubs, ready, strict=True)]
                await asyncio.gather(*(e.wait() for e in ready))
                ws = await ws_open(hubs[0])
                now, mono = await server_now(ws)
                await ws.close()
                # no bucket may end while the frames are collected: a final frame sent by the clock after the
                # last tick's frame would end one hub's list and not the other's (the window is < 10 s)
                start = now + 0.5 if now % 60 < 48 else math.floor(now / 60) * 60 + 60.5
                stamps = [start + 0.1 * i for i in range(stamps_n)]
                end.set_result(stamps[-1])
                await _write_live(feed, stamps, now, mono)
                a, b = await asyncio.gather(*tasks)
                return a, b

            a, b = asyncio.run(asyncio.wait_for(both(), 60))
        finally:
            for hub in hubs:
                hub.stop()
    assert len([f for f in a if not f["final"]]) >= 6, a
    assert a == b  # the same frames, in the same order, for the same ticks
