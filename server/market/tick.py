"""A price update as the market state takes it: an instrument's row, its price, its time and the volume traded."""

from __future__ import annotations

from dataclasses import dataclass

# A tick stamped further ahead of the clock than this is a bad line of the feed (SPEC 10) and a bad row of an import.
MAX_FUTURE_S = 300.0


@dataclass(slots=True)
class Tick:
    row: int
    price: float
    ts: float
    volume: float = 0.0
