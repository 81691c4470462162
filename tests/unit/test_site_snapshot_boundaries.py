"""The public market snapshot on refresh boundaries (SPEC 12): hubs that apply the same tick batches
build the same bytes and ETag for the same refresh, whatever their clocks; the ETag is a content hash."""

from __future__ import annotations

import asyncio
import hashlib
import time

import orjson

from server.api.site.market import GRACE_S, MarketSnapshots
from server.market.catalogue import default_catalogue
from server.market.demo import DemoWalk
from server.market.state import MarketState, build_demo_state
from server.market.tick import Tick
from server.market.timefmt import iso

REFRESH = 60.0
B0 = 1_790_000_040.0  # a multiple of 60


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _state() -> MarketState:
    """A hub's state at start: the same history on every hub (same seed and day)."""
    state, _ = build_demo_state(default_catalogue(), 7, B0 - 3600)
    return state


def _batches(n: int, first_ts: float, step: float) -> list[list[Tick]]:
    feed = DemoWalk(default_catalogue(), 7)
    return [feed.next_batch(first_ts + i * step, step) for i in range(n)]


def _apply(snaps: MarketSnapshots, state: MarketState, batch: list[Tick]) -> None:
    snaps.before_ticks(max(t.ts for t in batch))
    state.apply(batch)


def test_two_hubs_with_different_clocks_build_the_same_snapshot_for_each_boundary() -> None:
    clock_a, clock_b = Clock(B0 + 10.0), Clock(B0 + 17.3)  # B started later and reads later
    state_a, state_b = _state(), _state()
    a, b = MarketSnapshots(state_a, REFRESH, clock_a), MarketSnapshots(state_b, REFRESH, clock_b)
    seen: list[tuple[bytes, bytes]] = []
    for batch in _batches(400, B0 + 20.0, 0.25):  # 100 s of ticks: crosses B0 + 60
        ts = batch[0].ts
        clock_a.t, clock_b.t = ts + 0.001, ts + 0.4  # B applies every batch 0.4 s after A (lag, skew)
        _apply(a, state_a, batch)
        _apply(b, state_b, batch)
        if a.current.built_at == b.current.built_at == B0 + REFRESH:
            seen.append((a.current.whole.data, b.current.whole.data))
    assert seen, "no snapshot for the boundary B0 + 60 on both hubs"
    assert all(x == y for x, y in seen)
    doc = orjson.loads(a.current.whole.data)
    assert doc["updated"] == iso(B0 + REFRESH)
    assert a.current.whole.etag == b.current.whole.etag
    assert a.current.categories["fx"].etag == b.current.categories["fx"].etag
    # the snapshot is the state before the first batch stamped at or after the boundary
    assert max(q["updated"] for c in doc["categories"] for q in c["quotes"]) < iso(B0 + REFRESH)


def test_the_etag_is_a_hash_of_the_bytes_and_survives_a_restart_with_the_same_data() -> None:
    clock = Clock(B0 + 5.0)
    state = _state()
    first = MarketSnapshots(state, REFRESH, clock).current
    assert first.whole.etag == '"' + hashlib.blake2b(first.whole.data, digest_size=16).hexdigest() + '"'
    clock.t = B0 + 42.0  # a restart later in the same refresh, same market data
    again = MarketSnapshots(_state(), REFRESH, clock).current
    assert again.whole.data == first.whole.data and again.whole.etag == first.whole.etag
    state.apply([Tick(0, float(state.prices[0]) * 1.01, B0 + 43.0)])
    moved = MarketSnapshots(state, REFRESH, clock).current
    assert moved.whole.etag != first.whole.etag


def test_an_idle_market_keeps_its_bytes_and_a_tick_stamped_far_ahead_does_not_close_a_boundary() -> None:
    clock = Clock(B0 + 5.0)
    state = _state()
    snaps = MarketSnapshots(state, REFRESH, clock)
    first = snaps.current
    clock.t = B0 + 3 * REFRESH + 1
    assert not snaps.refresh() and snaps.current is first and snaps.next_refresh == B0 + 4 * REFRESH
    snaps.before_ticks(B0 + 100 * REFRESH)  # e.g. a jsonl line dated an hour ahead: left to the timer
    assert snaps.current is first
    snaps.before_ticks(B0 + 4 * REFRESH + 0.2)  # nothing moved: still the same snapshot
    assert snaps.current is first and snaps.next_refresh == B0 + 5 * REFRESH


def test_the_timer_builds_a_boundary_no_tick_batch_closed() -> None:
    async def scenario() -> None:
        state = _state()
        snaps = MarketSnapshots(state, 0.2, time.time)
        state.apply([Tick(1, float(state.prices[1]) * 1.01, time.time())])  # moved, but no batch after it
        task = asyncio.create_task(snaps.run())
        try:
            deadline = time.monotonic() + 0.2 + GRACE_S + 1.0
            while snaps.builds < 2:
                assert time.monotonic() < deadline, "the timer did not build the next boundary"
                await asyncio.sleep(0.02)
        finally:
            task.cancel()
        built = snaps.current.built_at
        assert abs(built / 0.2 - round(built / 0.2)) < 1e-6  # on a boundary
        assert snaps.current.version == state.version

    asyncio.run(scenario())


def test_a_hub_joining_mid_refresh_stamps_its_first_snapshot_with_its_own_time() -> None:
    clock = Clock(B0 + 20.0)
    state = _state()
    state.apply([Tick(0, float(state.prices[0]) * 1.01, B0 + 19.0)])  # a tick past the boundary B0
    joined = MarketSnapshots(state, REFRESH, clock, shared=True)
    assert orjson.loads(joined.current.whole.data)["updated"] == iso(B0 + 20.0)  # not B0's
    assert joined.next_refresh == B0 + REFRESH and joined.max_age() == 40
    alone = MarketSnapshots(state, REFRESH, clock)  # the memory engine: the only hub, it is B0's
    assert orjson.loads(alone.current.whole.data)["updated"] == iso(B0)
    fresh = _state()
    fresh.updated = B0 - 1.0  # nothing stamped past B0 yet: the boundary's snapshot, on any hub
    assert orjson.loads(MarketSnapshots(fresh, REFRESH, clock, shared=True).current.whole.data)["updated"] == iso(B0)
