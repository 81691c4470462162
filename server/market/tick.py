"""A price update as the market state takes it: an instrument's row, its price, its time and the volume traded.

A futures tick may carry what a futures board shows beside the price (SPEC 19): `TickDetail`; None for spot
assessments, FX and feeds that send only prices. A field of it that is None was not in this tick.
"""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(slots=True)
class Tick:
    row: int
    price: float
    ts: float
    volume: float = 0.0
    detail: TickDetail | None = None
