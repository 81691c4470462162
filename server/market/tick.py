"""A price update as the market state takes it: an instrument's row, its price, its time and the volume traded.

A futures tick may carry what a futures board shows beside the price (SPEC 19): `TickDetail`; None for spot
assessments, FX and feeds that send only prices. A field of it that is None was not in this tick.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

# A tick stamped further ahead of the clock than this is a bad line of the feed (SPEC 10) and a bad row of an import.
MAX_FUTURE_S = 300.0
# The largest price, volume and board field a line may carry (docs/input-rules.md): a day's volume is summed into
# int64 candles and rendered with round(), so a tick of 1e19 lots (or 1e308) overflowed them into 500s on
# /quotes and /kline. Far above any market's: 1e12 a unit, 1e9 lots a tick, 1e15 for a board's totals.
MAX_PRICE = 1e12
MAX_VOLUME = 1e9
MAX_DETAIL = 1e15


@dataclass(slots=True, frozen=True)
class TickDetail:
    bid: float | None = None
    ask: float | None = None
    bid_size: float | None = None
    ask_size: float | None = None
    oi: float | None = None  # open interest after this tick
    cum_volume: float | None = None  # the trading day's running volume (instead of this tick's `volume`)
    turnover: float | None = None  # the trading day's running turnover
    settle: float | None = None  # the day's published settlement
    limit_up: float | None = None  # the day's published limits
    limit_down: float | None = None
    prev_settle: float | None = None  # the previous trading day's published settlement (CTP's PreSettlementPrice)


DETAIL_FIELDS = 11  # TickDetail's fields, in the order detail_text writes them
DETAIL_FIELDS_BEFORE = 10  # before prev_settle: what a hub of an earlier build writes and reads (the Redis log)


def detail_text(detail: TickDetail) -> str:
    """A tick's detail as one space-free text: the fields of `TickDetail` in order, comma-separated, each the
    shortest text that reads back as the same float (`repr`), empty for None: the Redis tick log's token
    (server/engine/redis_ticks.py). Without a `prev_settle` the first ten only, as a hub of an earlier build
    writes and reads them."""
    values = astuple(detail)
    if detail.prev_settle is None:
        values = values[:DETAIL_FIELDS_BEFORE]
    return ",".join("" if v is None else repr(v) for v in values)


def detail_compact(detail: TickDetail) -> str:
    """`detail_text` without what reads back the same anyway: a whole number without its ".0", no trailing empty
    fields (`2109,2111,24,14,150694` for a book and open interest: 24 bytes a tick in the tick archive's `detail`
    column against 42, docs/storage.md)."""
    parts = ["" if v is None else repr(v) for v in astuple(detail)]
    return ",".join(p[:-2] if p.endswith(".0") else p for p in parts).rstrip(",")


def detail_of(text: str) -> TickDetail | None:
    """`detail_text` or `detail_compact` read back (fields left out at the end: None); None when it is not a
    detail (more than ten fields, or one that is not a number)."""
    values = text.split(",")
    if len(values) > DETAIL_FIELDS:
        return None
    try:
        return TickDetail(*(float(v) if v else None for v in values))
    except ValueError:
        return None


@dataclass(slots=True)
class Tick:
    row: int
    price: float
    ts: float
    volume: float = 0.0
    detail: TickDetail | None = None
