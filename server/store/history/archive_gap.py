"""The candles of sessions a hub was killed in (SPEC 18: never lose a bar), rebuilt from the tick archive at start.

A hub stores its closed candles when the live day rolls and at shutdown. One killed (`kill -9`, a crash, power)
before its next roll leaves that session's candles unstored, though its ticks are in the archive; started again on
a later day, it would replay only the new live session. So at start, before anything is served:

- `missing_days` makes the daily candles of the trading days before each instrument's live day that the
  candles table lacks but the archive has ticks for (the last GAP_DAYS days), stored before the daily book loads;
- `missing_settlements` settles the futures products' days before the live one that have archived ticks but no
  settlement stored (the hub was down or killed at the close): the day's last published settlement, else the
  product's rule on the day's ticks (server/market/contracts/board.py, as the live board settles), with the open
  interest of the day's last tick; stored before the daily book loads, so the live day's `prevSettle` is known;
- `missing_bars` makes the intraday buckets after the newest stored one (within GAP_DAYS) and before the live
  session, with the live rings' own rule (`IntradayRing.apply`: each tick at its venue's `bucket_ts`, no bucket
  before its trading day's floor), to store and load into the rings.

Ticks are taken in the order they were accepted (their seq), as the replay of the live session does. Pure but
for the reads the caller passes in.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from datetime import date
from functools import partial

from server.market.candles.intraday import INTERVALS, IntradayRing
from server.market.contracts.board import FuturesBoard
from server.market.tick import detail_of
from server.market.venues.clock import VenueClock
from server.store.history.archive import DetailedTick, Tick, TickArchive
from server.store.history.candle_rows import Candle, Settlement
from server.store.history.candle_store import Bar
from server.store.history.threads import History
from server.store.sql.repositories import Candles

log = logging.getLogger("market.archive")

GAP_DAYS = 7
DAY_MS = 86_400_000


def live_start_ms(clock: VenueClock, now_ms: int) -> int:
    """Where the live trading day's ticks begin (its previous trading day's close)."""
    previous = clock.previous_trading_day(clock.trading_day(now_ms))
    return clock.close_ms(previous) if previous is not None else now_ms


def missing_days(inst: str, clock: VenueClock, ticks: Sequence[Tick], held: set[date]) -> list[Candle]:
    """The daily candles of `ticks` (one instrument's, before its live day) for the trading days not in `held`."""
    days: dict[date, list[float]] = {}
    for _, ts, _seq, price, volume in sorted(ticks, key=lambda t: t[2]):
        day = clock.trading_day(ts)
        if day in held:
            continue
        bar = days.get(day)
        if bar is None:
            days[day] = [price, price, price, price, volume]
        else:
            bar[1], bar[2], bar[3] = max(bar[1], price), min(bar[2], price), price
            bar[4] += volume
    return [(inst, day, o, h, lo, c, v) for day, (o, h, lo, c, v) in sorted(days.items())]


def missing_settlements(inst: str, clock: VenueClock, ticks: Sequence[DetailedTick],
                        settled: set[date]) -> list[Settlement]:
    """The open interest and settlement of each trading day of `ticks` (one futures product's, before its live
    day; in seq order) not in `settled`; nothing for an instrument that is not a futures product."""
    board = FuturesBoard([inst], [clock.local])
    if not board.rows:
        return []
    out: list[Settlement] = []
    day: date | None = None
    for _, ts, _seq, price, volume, text in sorted(ticks, key=lambda t: t[2]):
        tick_day = clock.trading_day(ts)
        if tick_day != day:
            if day is not None and day not in settled:
                out.append((inst, day, board.oi[0], board.settlement(0)))
            board.new_day(0, math.nan)
            day = tick_day
        board.apply(0, price, volume, ts / 1000, detail_of(text) if text else None)
    if day is not None and day not in settled:
        out.append((inst, day, board.oi[0], board.settlement(0)))
    return out


def missing_bars(inst: str, clock: VenueClock, floor_of: Callable[[date], int],
                 ticks: Sequence[Tick]) -> dict[str, list[Bar]]:
    """The intraday buckets of `ticks` (one instrument's, in the gap), per interval, as the live rings make them."""
    if not ticks:
        return {name: [] for name in INTERVALS}
    rings = {name: IntradayRing(1, sec, capacity=GAP_DAYS * 1440 + 2) for name, sec in INTERVALS.items()}
    for _, ts, seq, price, volume in sorted(ticks, key=lambda t: t[2]):
        floor = floor_of(clock.trading_day(ts))
        at = clock.bucket_ts(ts) / 1000
        for ring in rings.values():
            ring.apply(0, price, volume, at, floor, seq)
    out: dict[str, list[Bar]] = {}
    for name, ring in rings.items():
        starts, cols = ring.held(0)
        out[name] = [(inst, int(t) * 1000, float(ring.o[0, c]), float(ring.h[0, c]), float(ring.l[0, c]),
                      float(ring.c[0, c]), float(ring.v[0, c])) for t, c in zip(starts.tolist(), cols.tolist(),
                                                                                  strict=True)]
    return out


def store_missing_days(history: History, repo: Candles, ids: Sequence[str], clocks: Sequence[VenueClock],
                       now_ms: int) -> int:
    """Upsert the daily candles `missing_days` finds (blocking: start-up, before the daily book loads)."""
    starts = [live_start_ms(c, now_ms) for c in clocks]
    first = min(c.trading_day(s - GAP_DAYS * DAY_MS) for c, s in zip(clocks, starts, strict=True))
    held: dict[str, set[date]] = {}
    for inst, day, *_ in repo.since_blocking(first):
        held.setdefault(inst, set()).add(day)
    settled: dict[str, set[date]] = {}
    for inst, day, _oi, settle in repo.settlements_since_blocking(first):
        if settle is not None:
            settled.setdefault(inst, set()).add(day)
    made: list[Candle] = []
    settlements: list[Settlement] = []
    for inst, clock, start in zip(ids, clocks, starts, strict=True):  # one instrument's ticks in memory at a time
        ticks = history.read_blocking(partial(read_detailed, inst=inst, start=start - GAP_DAYS * DAY_MS, end=start))
        if ticks:
            made += missing_days(inst, clock, [t[:5] for t in ticks], held.get(inst, set()))  # type: ignore[misc]
            settlements += missing_settlements(inst, clock, ticks, settled.get(inst, set()))
    if made or settlements:
        repo.upsert_blocking(made, settlements)
    if made:
        log.info("rebuilt %d daily candles of sessions not stored before (from the archived ticks)", len(made))
    if settlements:
        log.info("settled %d futures trading days not settled before (from the archived ticks)", len(settlements))
    return len(made)


def read_ticks(_candles: object, archive: TickArchive, inst: str, start: int, end: int) -> list[Tick]:
    """One instrument's archived ticks of [start, end), as a history reader's call."""
    return list(archive.read(inst, start, end))


def read_detailed(_candles: object, archive: TickArchive, inst: str, start: int, end: int) -> list[DetailedTick]:
    """The same with each tick's detail (None where it has none)."""
    return list(archive.read_detailed(inst, start, end))
