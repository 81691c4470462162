"""The client's charting side (SPEC 14, issue 20 item 6) against a real server: `candles()` pages through range
queries, the stream carries live candles and heartbeats, a silent connection is replaced after two missed
heartbeats and resumed, and candles a reconnect missed are fetched and handed on as final.

Time: the servers start with `--clock-start` a few seconds before a minute boundary (the server's clock then
runs at real speed from there), so a 1m bucket closes within seconds, and with `--heartbeat-s 1`."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from market_client import (
    AsyncMarketClient,
    CandleGap,
    CandleUpdate,
    Heartbeat,
    Tick,
    stream,
)
from market_client.events import Event

from tests.client.proxy import CuttableProxy
from tests.client.test_client_stream import STREAM_OPTS, accounted
from tests.conftest import ServerProcess

HEARTBEAT_S = 1.0
EVENT_TIMEOUT_S = 75.0  # a bucket boundary is at most a minute away (normally seconds: see --clock-start)


def clock_start(seconds_before_boundary: int) -> str:
    """A server clock start on a Tuesday, `seconds_before_boundary` before a minute ends (Asia/Shanghai)."""
    return f"2026-11-24T10:30:{60 - seconds_before_boundary:02d}+08:00"


def start_server(tmp_path_factory: pytest.TempPathFactory, name: str, before_boundary: int) -> ServerProcess:
    data = tmp_path_factory.mktemp(name) / "data"
    return ServerProcess(data, "granian", "--public-rate", "100000", "--tick-interval-ms", "50",
                         "--heartbeat-s", str(int(HEARTBEAT_S)), "--clock-start", clock_start(before_boundary))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = start_server(tmp_path_factory, "charting", 25)
    yield srv
    assert srv.stop() == 0, srv.output()


@pytest.fixture(scope="module")
def key(server: ServerProcess) -> str:
    return server.demo_key


# --- the stream: candles, heartbeats, silence ---------------------------------------------------------------


async def take(events: Any, until: Callable[[list[Event]], bool], timeout: float = EVENT_TIMEOUT_S) -> list[Event]:
    seen: list[Event] = []
    async with asyncio.timeout(timeout):
        async for event in events:
            seen.append(event)
            if until(seen):
                return seen
    raise AssertionError(f"stream ended after {len(seen)} events")


def final_candle(seen: list[Event]) -> bool:
    return any(isinstance(e, CandleUpdate) and e.final and e.seq is not None for e in seen)


def test_live_candles_and_heartbeats(server: ServerProcess, key: str) -> None:
    asyncio.run(live_candles_and_heartbeats(server, key))


async def live_candles_and_heartbeats(server: ServerProcess, key: str) -> None:
    async with AsyncMarketClient(server.base, key) as api, \
            api.stream(["brent", "wti"], candles=["1m"], heartbeat_s=HEARTBEAT_S) as events:
        seen = await take(events, lambda s: final_candle(s) and sum(isinstance(e, Heartbeat) for e in s) >= 2)
        candles = [e for e in seen if isinstance(e, CandleUpdate)]
        assert {(c.id, c.interval) for c in candles} <= {("brent", "1m"), ("wti", "1m")}
        last_tick: dict[str, int] = {}
        for e in seen:  # a heartbeat comes after the ticks it accounts for
            if isinstance(e, Tick):
                last_tick[e.id] = e.seq
            elif isinstance(e, Heartbeat):
                assert set(e.seqs) == {"brent", "wti"}
                assert all(e.seqs[i] <= last_tick.get(i, e.seqs[i]) for i in e.seqs), (e.seqs, last_tick)
        final = next(c for c in candles if c.final)
        assert [c.t for c in candles if c.final and c.id == final.id] == [final.t]  # one final per bucket
        bucket = datetime.fromisoformat(final.t)
        rest = await api.candles(final.id, "1m", start=bucket, end=bucket + timedelta(minutes=1))
    assert len(rest) == 1 and (rest[0].open, rest[0].high, rest[0].low, rest[0].close, rest[0].volume) == (
        final.open, final.high, final.low, final.close, final.volume)


def test_two_missed_heartbeats_replace_the_connection_and_resume(server: ServerProcess, key: str) -> None:
    asyncio.run(two_missed_heartbeats(server, key))


async def two_missed_heartbeats(server: ServerProcess, key: str) -> None:
    proxy = CuttableProxy(server.ws_port)
    await proxy.start()
    try:
        url = f"ws://127.0.0.1:{proxy.port}/ws/quotes"
        async with stream(["brent", "wti", "sc"], key=key, ws_url=url, heartbeat_s=HEARTBEAT_S,
                          **STREAM_OPTS) as events:
            seen = await take(events, lambda s: any(isinstance(e, Heartbeat) for e in s))
            assert proxy.pause() == 1
            paused_at = time.monotonic()
            mark = len(seen)
            seen += await take(events, lambda s: events.reconnects == 1 and sum(
                isinstance(e, Tick) for e in s) >= 20, timeout=15)
            assert events.dropped == {"silent": 1, "behind": 0}
            silent_for = time.monotonic() - paused_at
            # dead after two intervals (+10%), not before; then a backoff of at most 0.5 s and a new connection
            assert 2 * HEARTBEAT_S <= silent_for < 8, silent_for  # not websockets' keepalive (20 s + 20 s)
            assert events.resumes == {"recovered": 1, "refused": 0}
            seqs = accounted(seen)  # no duplicate, no gap (the paused ticks were replayed)
            assert all(seqs.values()) and not any(isinstance(e, CandleGap) for e in seen[mark:])
    finally:
        await proxy.close()


def test_candles_missed_while_disconnected_are_fetched_and_handed_on_final(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    srv = start_server(tmp_path_factory, "charting-gap", 12)
    try:
        asyncio.run(candles_missed_while_disconnected(srv))
    finally:
        assert srv.stop() == 0, srv.output()


def next_boundary(ts: datetime, margin_s: float) -> datetime:
    """The first minute boundary at least `margin_s` after `ts`."""
    boundary = ts.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return boundary if (boundary - ts).total_seconds() >= margin_s else boundary + timedelta(minutes=1)


async def candles_missed_while_disconnected(srv: ServerProcess) -> None:
    """The server's output is held from half a second before a bucket ends: the stream finds the connection
    dead 2.2 s later, after the bucket's final frame (sent within 1 s of its end) went to the dead connection,
    so the new connection's first frame is of the next bucket, and the closed one is fetched with a range query."""
    proxy = CuttableProxy(srv.ws_port)
    await proxy.start()
    try:
        url = f"ws://127.0.0.1:{proxy.port}/ws/quotes"
        async with AsyncMarketClient(srv.base, srv.demo_key) as api:
            async with api.stream(["brent"], candles=["1m"], ws_url=url, heartbeat_s=HEARTBEAT_S,
                                  **STREAM_OPTS) as events:
                seen = await take(events, lambda s: any(isinstance(e, Heartbeat) for e in s) and any(
                    isinstance(e, Tick) for e in s))
                first_tick = next(e for e in seen if isinstance(e, Tick))
                boundary = next_boundary(first_tick.ts, 3.0)
                seen += await take(events, lambda s: isinstance(s[-1], Tick) and (
                    boundary - s[-1].ts).total_seconds() <= 0.5)
                assert proxy.pause() == 1
                live = [e for e in seen if isinstance(e, CandleUpdate)][-1]
                assert not live.final and datetime.fromisoformat(live.t) == boundary - timedelta(minutes=1)
                later = await take(events, lambda s: any(isinstance(e, CandleUpdate) and e.t > live.t and
                                                         e.seq is not None for e in s), timeout=20)
                assert events.dropped["silent"] == 1
            filled = [e for e in later if isinstance(e, CandleUpdate) and e.seq is None]
            rest = await api.candles("brent", "1m", start=live.t, end=boundary)
        assert [f.t for f in filled] == [live.t] and filled[0].final  # the closed bucket, from a range query
        assert not any(isinstance(e, CandleUpdate) and e.final and e.t == live.t and e.seq is not None for e in later)
        assert (filled[0].open, filled[0].high, filled[0].low, filled[0].close, filled[0].volume) == (
            rest[0].open, rest[0].high, rest[0].low, rest[0].close, rest[0].volume)
    finally:
        await proxy.close()


def test_cli_watch_prints_live_candles(server: ServerProcess, key: str) -> None:
    """`market-client watch brent --candles 1m`: the live 1m candle between the ticks."""
    from tests.client.test_client_cli_readme import run

    out = run(["-m", "market_client", "watch", "brent", "--candles", "1m", "--count", "5", "--url", server.base,
               "--key", key])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    candles = [line for line in lines if line.startswith("candle ")]
    assert candles and all(re.match(r"candle brent 1m \S+\+08:00 o=[\d,.]+ .* (live|final)$", c) for c in candles)
    assert sum("seq=" in line for line in lines) == 5
