"""Today's live candles rebuilt from the archive's ticks at start (SPEC 18: after `kill -9`, the day's candle
keeps every tick older than the last commit). Pure: ticks in, OHLCV per bucket out.

The bucket and trading-day rules are parameters (they come from the venue calendars, server/market):
`bucket_start(interval, ts_ms) -> int` (ms; for "1d" the start of the tick's trading day) and
`trading_day(ts_ms) -> date`. Ticks of one instrument must come in (ts, seq) order, as `TickArchive.read`
yields them; instruments may interleave. A tick opens its bucket (o = its price) and the last tick closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from server.store.history.archive import Tick, TickArchive
from server.store.history.candle_store import INTERVALS, Bar

BucketStart = Callable[[str, int], int]
TradingDay = Callable[[int], date]


@dataclass
class LiveBar:
    """One bucket of one instrument, as rebuilt."""

    id: str
    t: int  # bucket start, ms
    o: float
    h: float
    l: float  # noqa: E741
    c: float
    v: float
    seq: int  # seq of the last tick applied
    day: date  # the trading day of its ticks

    def row(self) -> Bar:
        return (self.id, self.t, self.o, self.h, self.l, self.c, self.v)

    def apply(self, price: float, volume: float, seq: int) -> None:
        self.h = max(self.h, price)
        self.l = min(self.l, price)
        self.c = price
        self.v += volume
        self.seq = seq


Rebuilt = dict[str, dict[tuple[str, int], LiveBar]]  # interval -> (id, bucket start) -> bar


def rebuild_candles(ticks: Iterable[Tick], bucket_start: BucketStart, trading_day: TradingDay,
                    intervals: Sequence[str] = INTERVALS) -> Rebuilt:
    """Every bucket of every interval that `ticks` touch, with its OHLCV and last seq (dicts keep the order
    in which buckets were opened, i.e. time order per instrument)."""
    out: Rebuilt = {interval: {} for interval in intervals}
    for inst, ts, seq, price, volume in ticks:
        day = trading_day(ts)
        for interval in intervals:
            key = (inst, bucket_start(interval, ts))
            bar = out[interval].get(key)
            if bar is None:
                out[interval][key] = LiveBar(inst, key[1], price, price, price, price, volume, seq, day)
            else:
                bar.apply(price, volume, seq)
    return out


def rebuild_from_archive(archive: TickArchive, since_ms: int, until_ms: int, bucket_start: BucketStart,
                         trading_day: TradingDay, intervals: Sequence[str] = INTERVALS) -> Rebuilt:
    """`rebuild_candles` over the archive's ticks with since_ms <= ts < until_ms, one instrument at a time
    (blocking: run it on a storage thread, at start, before the feed's first tick)."""
    def every_tick() -> Iterable[Tick]:
        for inst in archive.instruments():
            yield from archive.read(inst, since_ms, until_ms)

    return rebuild_candles(every_tick(), bucket_start, trading_day, intervals)


def closed_rows(rebuilt: Rebuilt, interval: str, before_ms: int, width_ms: Callable[[str, int], int]) -> list[Bar]:
    """The rebuilt bars of `interval` whose bucket ended before `before_ms` (`width_ms(interval, t)` is the
    bucket's length), as rows for `CandleStore.put_closed`: buckets that closed while the process was down."""
    return [bar.row() for bar in rebuilt.get(interval, {}).values() if bar.t + width_ms(interval, bar.t) <= before_ms]
