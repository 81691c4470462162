"""A price update as the market state takes it: an instrument's row, its price, its time and the volume traded."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Tick:
    row: int
    price: float
    ts: float
    volume: float = 0.0
