"""Closed daily candles of a live (non-demo) feed, persisted so a restart keeps history."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import date
from typing import Any

Candle = tuple[str, date, float, float, float, float, float]
# a futures product's daily candle's open interest at the close and settlement (SPEC 19; NaN or None: unknown),
# kept in `settlements_1d` beside the candle (whose row keeps its shape)
Settlement = tuple[str, date, float | None, float | None]
CHUNK = 1000  # rows per write transaction: a bulk import never holds the write lock for long

CandleRow = tuple[str, str, float, float, float, float, float]
SettlementRow = tuple[str, str, float | None, float | None]


def write_chunks(candles: Sequence[Candle], settlements: Sequence[Settlement], chunk: int = CHUNK,
                 ) -> Iterator[tuple[list[CandleRow], list[SettlementRow]]]:
    """The rows of each write transaction: `chunk` candles and the settlements of those candles, so a candle and
    its settlement are committed together (a settlement of no candle given goes with the last chunk; with no
    candles at all, one transaction of settlements). Unknown values (NaN) are NULL."""
    at = {(c[0], c[1]): k // chunk for k, c in enumerate(candles)}
    last = max(len(candles) - 1, 0) // chunk
    extra: list[list[SettlementRow]] = [[] for _ in range(last + 1)]
    for inst, day, oi, s in settlements:
        extra[at.get((inst, day), last)].append((inst, day.isoformat(), _known(oi), _known(s)))
    for k in range(last + 1):
        rows = [(i, d.isoformat(), o, h, lo, c, v) for i, d, o, h, lo, c, v in candles[k * chunk:(k + 1) * chunk]]
        if rows or extra[k]:
            yield rows, extra[k]


def _known(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def settlement_of(row: Sequence[Any]) -> Settlement:
    """A `settlements_1d` row (instrument, day, oi, s) read back."""
    inst, day, oi, s = row
    return inst, date.fromisoformat(day), None if oi is None else float(oi), None if s is None else float(s)


def between_sql(inst: str | None, limit: int | None, newest: bool, mark: str) -> str:
    """The daily candles of a day range (`between`), in SQLite's (`?`) or PostgreSQL's (`%s`) parameter style;
    parameters: first, last, then the instrument and the limit when given."""
    where = f"day >= {mark} AND day <= {mark}" + (f" AND instrument = {mark}" if inst is not None else "")
    order = "DESC" if newest else "ASC"
    return (f"SELECT instrument, day, o, h, l, c, v FROM candles WHERE {where} ORDER BY day {order}, instrument"
            + (f" LIMIT {mark}" if limit is not None else ""))


def between_params(first: date, last: date, inst: str | None, limit: int | None) -> tuple[object, ...]:
    return (first.isoformat(), last.isoformat(), *((inst,) if inst is not None else ()),
            *((limit,) if limit is not None else ()))
