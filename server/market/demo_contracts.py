"""The demo history of futures contracts (SPEC 19, build_demo_state in server/market/state.py).

A contract's candles are its product's (daily and intraday, as server/market/demo.py draws them) times its curve
factor on that day, on the product's tick, with the product's volume times the contract's share of the open
interest that day (demo_curve.py): the curve moves as one, each contract's buckets aggregate exactly to its daily
candle (the factor is one number per day and rounding to the tick keeps the order of prices; the volume is split by
rounding running totals), and nothing is drawn per contract (start-up stays cheap with ~400 contract rows). Outside
its trading days a contract has never-traded candles (no price, volume, open interest or settlement) and no
intraday buckets. A contract's live price is its newest close (an expired one's: its last trading day's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

import numpy as np

from server.market.candles.intraday import session_start
from server.market.demo import Buckets, DemoWalk, History, _on_grid
from server.market.timefmt import day_start
from server.market.venues.clock import VenueClock


def expiry_closes(walk: DemoWalk, clocks: Sequence[VenueClock]) -> list[float]:
    """Each contract row's last trading day's close (epoch seconds) by its venue clock."""
    curve = walk.curve
    if not clocks:
        return [day_start(date.fromordinal(int(curve.last[r]) + 1)) for r in curve.rows]
    return [clocks[int(r)].close_ms(date.fromordinal(int(curve.last[r]))) / 1000 for r in curve.rows]


def trade_windows(walk: DemoWalk, clocks: Sequence[VenueClock]) -> dict[int, tuple[float, float]]:
    """Each contract row's [first session start, last close) in epoch seconds."""
    curve, out = walk.curve, {}
    for row, end in zip(curve.rows, expiry_closes(walk, clocks), strict=True):
        r = int(row)
        first = date.fromordinal(int(curve.first[r]))
        before = clocks[r].previous_trading_day(first) if clocks else None
        start = clocks[r].close_ms(before) / 1000 if clocks and before is not None else day_start(first)
        out[r] = (start, end)
    return out


def derive_daily(walk: DemoWalk, history: History, live_days: np.ndarray) -> np.ndarray:
    """Every contract's daily candles from its product's (in place); its live price from them. Returns each
    contract row's volume share per day (len(rows), days)."""
    days, o, h, low, c, v = history
    curve, rows = walk.curve, walk.curve.rows
    if not rows.size:
        return np.zeros((0, len(days)))
    ords = np.array([d.toordinal() for d in days])
    base = curve.base[rows]
    factor = curve.factor_days(rows, ords)
    grid, dec = walk._tick_size[rows], walk.decimals[rows]
    for a in (o, h, low, c):
        a[rows] = _on_grid(a[base] * factor, grid, dec)
    share = curve.oi_days(rows, ords)
    v[rows] = np.round(v[base] * share)
    traded = (ords[None, :] <= live_days[rows][:, None]) & (share > 0) & np.isfinite(c[rows])
    for i, r in enumerate(rows):
        cols = np.flatnonzero(traded[i])
        if len(cols):
            walk._true[r] = c[r, cols[-1]]  # its newest close: the live price (an expired contract's last)
    return share


def derive_buckets(walk: DemoWalk, groups: list[tuple[list[int], Buckets]], history: History, share: np.ndarray,
                   day_of: Callable[[int, np.ndarray], np.ndarray]) -> list[tuple[list[int], Buckets]]:
    """Each contract's buckets of one interval from its product's (`groups` as `DemoWalk.intraday_history` makes
    them; `day_of(row, starts)`: the index into the history's days of each bucket's trading day), a product's
    contracts as one group after the given ones."""
    days, *_, v = history
    curve = walk.curve
    ords = np.array([d.toordinal() for d in days])
    by_product: dict[int, list[int]] = {}
    for r in curve.rows:
        by_product.setdefault(int(curve.base[r]), []).append(int(r))
    out = list(groups)
    for rows, arrays in groups:
        for i, p in enumerate(rows):
            contracts = by_product.get(p)
            if not contracts:
                continue
            cs = np.array(contracts)
            t, o, h, low, c, vol = (a[i] for a in arrays)
            d = day_of(p, t)
            factor = curve.factor_days(cs, ords[d])  # (contracts, buckets)
            grid, dec = walk._tick_size[cs], walk.decimals[cs]
            prices = [_on_grid(a[None, :] * factor, grid, dec) for a in (o, h, low, c)]
            ratio = np.divide(v[cs][:, d], v[p, d][None, :], out=np.zeros(factor.shape), where=v[p, d][None, :] > 0)
            split = np.stack([_split(vol, d, ratio[k]) for k in range(len(cs))])
            out.append((contracts, (np.repeat(t[None, :], len(cs), axis=0), *prices, split)))  # type: ignore[arg-type]
    return out


def _split(volumes: np.ndarray, day: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """`volumes` times each bucket's day's `ratio`, rounded so that each day's buckets sum to its rounded total."""
    if not len(volumes):
        return volumes.copy()
    total = np.cumsum(volumes)
    first = np.r_[True, day[1:] != day[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(day)), 0))
    before = (total - volumes)[start]
    scaled = np.round((total - before) * ratio)
    previous = np.where(first, 0.0, np.r_[0.0, scaled[:-1]])
    return scaled - previous


def traded_mask(walk: DemoWalk, days: list[date]) -> np.ndarray:
    return walk.curve.traded(np.array([d.toordinal() for d in days]))


def mask_untraded(history: History, traded: np.ndarray, oi: np.ndarray, settle: np.ndarray) -> None:
    """Never-traded candles (in place) where a contract does not trade."""
    _, o, h, low, c, v = history
    for a in (o, h, low, c, oi, settle):
        a[~traded] = np.nan
    v[~traded] = 0.0


def trim_buckets(groups: list[tuple[list[int], Buckets]],
                 windows: dict[int, tuple[float, float]]) -> list[tuple[list[int], Buckets]]:
    """The groups with the buckets of each contract row kept within its window: a contract whose window holds all of
    its group's buckets stays in the group, any other is split off with its own."""
    out: list[tuple[list[int], Buckets]] = []
    for rows, arrays in groups:
        t = arrays[0]
        keep, alone = [], []
        for i, r in enumerate(rows):
            if r not in windows:
                keep.append(i)
                continue
            start, end = windows[r]
            inside = (t[i] >= start) & (t[i] < end)  # the buckets after the close before its first day
            if inside.all():
                keep.append(i)
            elif inside.any():  # none: the ring holds nothing of it
                alone.append(([r], tuple(a[i:i + 1, inside] for a in arrays)))
        if keep:
            out.append(([rows[i] for i in keep], tuple(a[keep] for a in arrays)))  # type: ignore[arg-type]
        out += alone  # type: ignore[arg-type]
    return out


def bucket_days(days: list[date], clocks: Sequence[VenueClock]) -> Callable[[int, np.ndarray], np.ndarray]:
    """`day_of(row, starts)`: the index into `days` of the trading day each bucket start of `row` belongs to (the
    session after the close of the venue's previous trading day; without clocks from `session_start`)."""
    made: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def floors(row: int) -> tuple[np.ndarray, np.ndarray]:
        clock = clocks[row] if clocks else None
        key = id(clock)
        if key not in made:
            cols = [j for j, d in enumerate(days) if clock is None or clock.is_trading_day(d)]
            starts = []
            for j in cols:
                before = clock.previous_trading_day(days[j]) if clock is not None else None
                starts.append(clock.close_ms(before) / 1000 if clock is not None and before is not None
                              else session_start(days[j]))
            made[key] = (np.array(starts), np.array(cols, dtype=np.intp))
        return made[key]

    def day_of(row: int, t: np.ndarray) -> np.ndarray:
        starts, cols = floors(row)
        return cols[np.clip(np.searchsorted(starts, t, side="right") - 1, 0, len(cols) - 1)]

    return day_of
