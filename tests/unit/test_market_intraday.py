"""Intraday candles: the numpy ring buffers, the live daily candle as their aggregate, the demo's seeded history."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

import numpy as np
import pytest

from server.market.candles.daily import CandleBook, closed_candles
from server.market.candles.intraday import (
    INTERVALS,
    INTRADAY_CAPACITY,
    IntradayBook,
    IntradayRing,
    bucket_iso,
    session_start,
)
from server.market.catalogue import default_catalogue
from server.market.state import MarketState, build_demo_state
from server.market.tick import Tick
from server.market.timefmt import TZ, day_start, iso, trading_days_back

CAT = default_catalogue()
BRENT = CAT.index["brent"]
T0 = int(datetime(2026, 11, 18, 9, 0, tzinfo=TZ).timestamp())  # a Wednesday, 09:00 Shanghai
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00\.000\+08:00$")


def at(y: int, mo: int, d: int, h: int, mi: int = 0, s: int = 0) -> float:
    return datetime(y, mo, d, h, mi, s, tzinfo=TZ).timestamp()


def ohlcv(ring: IntradayRing, row: int = 0, limit: int = INTRADAY_CAPACITY) -> list[tuple]:
    t, arrays = ring.arrays(row, limit)
    return [(int(a), *map(float, rest)) for a, *rest in zip(t, *arrays, strict=True)]


def test_ticks_in_one_bucket_aggregate_and_gaps_stay_absent() -> None:
    ring = IntradayRing(2, 60)
    for ts, price, vol in [(T0 + 10, 80.0, 10), (T0 + 40, 81.5, 5), (T0 + 59.999, 79.5, 1),
                           (T0 + 185, 79.0, 2), (T0 + 7 * 60, 80.2, 1)]:
        ring.apply(0, price, vol, ts, 0)
    assert ohlcv(ring) == [(T0, 80.0, 81.5, 79.5, 79.5, 16.0), (T0 + 180, 79.0, 79.0, 79.0, 79.0, 2.0),
                           (T0 + 420, 80.2, 80.2, 80.2, 80.2, 1.0)]  # minutes 1, 2, 4, 5, 6: absent
    assert ring.count(1) == 0 and ring.series(1, 300, 2) == []  # never ticked: nothing invented
    assert ring.series(0, 2, 2) == [
        {"t": iso(T0 + 180), "o": 79.0, "h": 79.0, "l": 79.0, "c": 79.0, "v": 2},
        {"t": iso(T0 + 420), "o": 80.2, "h": 80.2, "l": 80.2, "c": 80.2, "v": 1},
    ]


def test_rolling_across_many_buckets_keeps_the_newest_thousand_without_allocating() -> None:
    ring = IntradayRing(3, 300)
    arrays = (ring.t, ring.o, ring.h, ring.l, ring.c, ring.v)
    n = 2_500
    for k in range(n):  # every other bucket has a tick: gaps everywhere, 2.4 laps of the ring
        ring.apply(1, 100.0 + k, 1.0, T0 + 600 * k + 1, 0)
    assert ring.count(1) == INTRADAY_CAPACITY and ring.count(0) == 0
    rows = ohlcv(ring, 1)
    assert [r[0] for r in rows] == [T0 + 600 * k for k in range(n - INTRADAY_CAPACITY, n)]
    assert rows[-1][1:] == (100.0 + n - 1,) * 4 + (1.0,)
    assert [r[0] for r in ohlcv(ring, 1, 3)] == [T0 + 600 * k for k in range(n - 3, n)]
    assert all(a is b for a, b in zip(arrays, (ring.t, ring.o, ring.h, ring.l, ring.c, ring.v), strict=True))
    assert ring.nbytes() == 3 * INTRADAY_CAPACITY * 7 * 8


def test_late_tick_counts_toward_the_newest_bucket_and_none_starts_before_the_floor() -> None:
    ring = IntradayRing(1, 60)
    ring.apply(0, 10.0, 1.0, T0 + 120, 0)
    ring.apply(0, 12.0, 1.0, T0 + 5, 0)  # stamped two minutes before the newest bucket
    assert ohlcv(ring) == [(T0 + 120, 10.0, 12.0, 10.0, 12.0, 2.0)]
    floor = T0 + 3600
    other = IntradayRing(1, 60)
    other.apply(0, 9.0, 1.0, T0, floor)  # before the live trading day's session: its first bucket
    other.apply(0, 9.5, 1.0, floor + 61, floor)
    assert [r[0] for r in ohlcv(other)] == [floor, floor + 60]


def test_book_updates_every_interval_from_one_tick() -> None:
    book = IntradayBook(1)
    book.apply(0, 5.0, 2.0, T0 + 3599, 0)
    for name, sec in INTERVALS.items():
        assert ohlcv(book.rings[name]) == [(T0 + 3600 - sec, 5.0, 5.0, 5.0, 5.0, 2.0)]
    assert book.nbytes_per_instrument() == 4 * INTRADAY_CAPACITY * 56  # 224,000 bytes (start, o, h, l, c, v, seq)


def test_bucket_iso_and_session_start() -> None:
    assert bucket_iso(np.array([T0, T0 + 900])) == [iso(T0), iso(T0 + 900)]
    assert all(ISO.match(t) for t in bucket_iso(np.array([0, T0])))
    monday, tuesday = date(2026, 11, 23), date(2026, 11, 24)
    assert session_start(monday) == day_start(date(2026, 11, 21))  # Saturday 00:00: weekend ticks are Monday's
    assert session_start(tuesday) == day_start(tuesday)


def _state(end: date) -> MarketState:
    days = trading_days_back(end, 5)
    close = np.full((len(CAT.instruments), 5), 70.0)
    book = CandleBook(len(CAT.instruments), 90)
    book.load_history(days, close, close, close, close, np.zeros_like(close))
    return MarketState(CAT, book, demo=False, epoch="t")


def _today(state: MarketState, row: int) -> dict[str, tuple]:
    """Per interval: the aggregate of the buckets that start in the live trading day's session."""
    start = session_start(state.candles.last_day())
    out = {}
    for name, ring in state.intraday.rings.items():
        t, (o, h, low, c, v) = ring.arrays(row, INTRADAY_CAPACITY)
        m = t >= start
        out[name] = (float(o[m][0]), float(h[m].max()), float(low[m].min()), float(c[m][-1]), float(v[m].sum()))
    return out


def test_live_daily_candle_is_the_aggregate_of_its_session_buckets_under_the_weekend_rule() -> None:
    state = _state(date(2026, 11, 19))  # live: Thursday; the first tick rolls in Friday
    ticks = [(at(2026, 11, 20, 14), 71.0), (at(2026, 11, 20, 23, 59, 59), 72.0),  # Friday's session
             (at(2026, 11, 21, 9), 73.0), (at(2026, 11, 22, 18, 30), 69.0),  # Sat, Sun: Monday's
             (at(2026, 11, 20, 16), 80.0),  # late: stamped Friday, counts toward Monday
             (at(2026, 11, 23, 10, 2), 74.0)]  # Monday
    friday = None
    for i, (ts, price) in enumerate(ticks):
        state.apply([Tick(BRENT, price, ts, float(i + 1))])
        if i == 1:
            friday = state.candles.live(BRENT)
            assert set(_today(state, BRENT).values()) == {friday}  # Friday: (71, 72, 71, 72, 3)
    assert state.candles.last_day() == date(2026, 11, 23)
    monday = state.candles.live(BRENT)
    assert monday == (73.0, 80.0, 69.0, 74.0, 18.0)
    assert set(_today(state, BRENT).values()) == {monday}  # every interval agrees
    starts = [int(t) for t in state.intraday.rings["1h"].arrays(BRENT, 10)[0]]
    sat = int(session_start(date(2026, 11, 23)))
    assert starts == [int(at(2026, 11, 20, 14)), int(at(2026, 11, 20, 23)), sat + 9 * 3600,
                      int(at(2026, 11, 22, 18)), int(at(2026, 11, 23, 10))]  # the late tick joined Sunday 18:00
    assert friday == (71.0, 72.0, 71.0, 72.0, 3.0)


@pytest.mark.parametrize("now", [at(2026, 11, 18, 10, 30), at(2026, 11, 21, 12, 0, 5), at(2026, 11, 24, 0, 0, 20)],
                         ids=["wednesday", "saturday", "just-after-midnight"])
def test_demo_seed_joins_the_daily_history_and_ends_at_the_live_price(now: float) -> None:
    state, _feed = build_demo_state(CAT, 42, now)
    again, _ = build_demo_state(CAT, 42, now)
    for name in INTERVALS:  # deterministic for a seed and a clock
        a, b = state.intraday.rings[name], again.intraday.rings[name]
        assert np.array_equal(a.t, b.t) and np.array_equal(a.c, b.c) and np.array_equal(a.v, b.v)
    rows = range(len(CAT.instruments))
    for row in rows:
        live = state.candles.live(row)
        assert set(_today(state, row).values()) == {live}, CAT.instruments[row].id
        for name, sec in INTERVALS.items():
            ring = state.intraday.rings[name]
            t, (o, h, low, c, v) = ring.arrays(row, INTRADAY_CAPACITY)
            assert ring.count(row) == INTRADAY_CAPACITY  # seeded full
            assert np.all(np.diff(t) == sec) and t[-1] == now // sec * sec  # contiguous, up to now's bucket
            assert c[-1] == state.prices[row] and np.all(low <= np.minimum(o, c)) and np.all(h >= np.maximum(o, c))
    # the closed days the 1h ring holds whole: their buckets aggregate to their daily candles
    days, (o, h, low, c, v) = closed_candles(state.candles)
    t, (bo, bh, bl, bc, bv) = state.intraday.rings["1h"].arrays(BRENT, INTRADAY_CAPACITY)
    checked = 0
    for k, day in enumerate(days):
        start, end = session_start(day), day_start(day + timedelta(days=1))
        m = (t >= start) & (t < end)
        if t[0] > start or not m.any():
            continue
        checked += 1
        assert (bo[m][0], bh[m].max(), bl[m].min(), bc[m][-1], bv[m].sum()) == (
            o[BRENT, k], h[BRENT, k], low[BRENT, k], c[BRENT, k], v[BRENT, k]), day
    assert checked >= 25


def test_demo_live_ticks_keep_the_equality() -> None:
    now = at(2026, 11, 21, 12)  # Saturday: Monday's live candle
    state, feed = build_demo_state(CAT, 7, now)
    for i in range(1, 400):
        state.apply(feed.next_batch(now + i * 0.5, 0.5))
    assert state.candles.last_day() == date(2026, 11, 23)
    for row in range(len(CAT.instruments)):
        assert set(_today(state, row).values()) == {state.candles.live(row)}


def test_kept_candle_texts_are_the_formatted_candles_byte_for_byte_as_the_ring_moves() -> None:
    """IntradayRing.texts keeps each bucket's JSON once it is older than the newest: whatever ticks, new buckets,
    a wrap of the ring (and the pruning of texts that left it) or a reload did, the joined texts are
    orjson.dumps(format(...)) of the same columns."""
    import orjson

    from server.market.candles.intraday import joined

    ring = IntradayRing(2, 60, capacity=50)
    rng = np.random.default_rng(7)

    def check(row: int, limit: int) -> None:
        cols = ring.columns(row, limit)
        assert joined(ring.texts(row, cols, 2)) == orjson.dumps(ring.format(row, cols, 2))
        half = cols[: len(cols) // 2]  # a window without the newest bucket
        assert joined(ring.texts(row, half, 2)) == orjson.dumps(ring.format(row, half, 2))

    assert joined(ring.texts(0, ring.columns(0, 10), 2)) == b"[]"
    ts = float(T0)
    for step in range(400):  # 8 passes around the ring of row 0, one newest bucket changed between reads
        for _ in range(int(rng.integers(1, 4))):
            ring.apply(0, float(np.round(70 + rng.normal(), 3)), float(rng.integers(1, 50)), ts, 0, step)
            ts += float(rng.integers(5, 50))
        check(0, int(rng.integers(1, 60)))
    assert len(ring._texts[0]) <= 2 * ring.capacity
    check(1, 10)  # a row without ticks
    ring.apply(1, 3.0, 1.0, ts, 0)
    check(1, 10)
    assert joined(ring.texts(0, ring.columns(0, 50), 3)) == orjson.dumps(ring.format(0, ring.columns(0, 50), 3))
    t, o, h, low, c, v = (np.zeros((2, 3)) for _ in range(6))
    t[:] = ring.t[0, ring.columns(0, 3)]  # buckets whose texts are kept, loaded with other values
    o[:], h[:], low[:], c[:], v[:] = 1.25, 1.5, 1.0, 1.125, 7.5
    ring.load(t.astype(np.int64), o, h, low, c, v)
    check(0, 50)
    assert b'"o":1.25' in joined(ring.texts(0, ring.columns(0, 50), 2))
