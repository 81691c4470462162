"""Closed daily candles of a live (non-demo) feed, persisted so a restart keeps history."""

from __future__ import annotations

from datetime import date

Candle = tuple[str, date, float, float, float, float, float]
CHUNK = 1000  # rows per write transaction: a bulk import never holds the write lock for long


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
