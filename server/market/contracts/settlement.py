"""Settlement and daily price limits (SPEC 19): pure arithmetic on prices, volumes and a product's rule.

A product settles by its rule (`ProductSpec.settlement`): "vwap-day", the trading day's volume-weighted average
price; "vwap-window HH:MM-HH:MM", the volume-weighted average of the ticks inside that window of venue local
time (start inclusive, end exclusive). Either is rounded to the nearest tick; with no volume to weigh (no tick in
the window, or ticks without volume) the day's last price settles. The next day's limits are
prevSettle * (1 +- limit_pct), rounded to the tick inward (the up limit down, the down limit up), so a limit
never lies outside the band; a product with limit_pct 0 has none. A price exactly at a limit is inside.
"""

from __future__ import annotations

import math

NO_LIMITS = (math.nan, math.nan)  # (down, up): no daily limit


def round_to_tick(price: float, tick: float) -> float:
    """The nearest multiple of ``tick`` (a half tick up), free of binary noise (2415.0, not 2414.9999): a VWAP
    of 71.075 (71.07499999999999 in binary) settles at 71.08."""
    steps = math.floor(price / tick + 0.5 + 1e-9)
    return _clean(steps * tick, tick)


def _clean(value: float, tick: float) -> float:
    places = max(0, -math.floor(math.log10(tick)) + 1) if tick < 1 else 0
    return round(value, places + 2)


def limits(prev_settle: float, limit_pct: float, tick: float) -> tuple[float, float]:
    """(limitDown, limitUp) for a day after settling at ``prev_settle``; NaNs without a limit or a settlement."""
    if not limit_pct or not math.isfinite(prev_settle):
        return NO_LIMITS
    eps = 1e-9  # a band edge that is a multiple of the tick stays one (floating-point noise never drops a tick)
    up = math.floor(prev_settle * (1 + limit_pct) / tick + eps) * tick
    down = math.ceil(prev_settle * (1 - limit_pct) / tick - eps) * tick
    return _clean(down, tick), _clean(up, tick)


def within(price: float, down: float, up: float) -> bool:
    """True when ``price`` lies within [down, up] (a NaN bound: no bound on that side)."""
    return not (price > up or price < down)


def window_minutes(window: tuple[str, str] | None) -> tuple[int, int] | None:
    """("19:28", "19:30") -> (1168, 1170): minutes of the local day."""
    if window is None:
        return None
    (h1, m1), (h2, m2) = (w.split(":") for w in window)
    return int(h1) * 60 + int(m1), int(h2) * 60 + int(m2)


def in_window(minute_of_day: int, window: tuple[int, int]) -> bool:
    start, end = window
    return start <= minute_of_day < end


def settle_price(pv: float, volume: float, last: float, tick: float) -> float:
    """The VWAP ``pv / volume`` rounded to the tick; the last price when nothing was weighed (NaN before any)."""
    if volume > 0:
        return round_to_tick(pv / volume, tick)
    return round_to_tick(last, tick) if math.isfinite(last) else math.nan
