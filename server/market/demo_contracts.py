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
from server.market.contracts.main import Candidate, Roll, replay
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
                   day_of: Callable[[int, np.ndarray], np.ndarray],
                   mains: dict[int, tuple[np.ndarray, list[Roll]]] | None = None) -> list[tuple[list[int], Buckets]]:
    """Each contract's buckets of one interval from its product's (`groups` as `DemoWalk.intraday_history` makes
    them; `day_of(row, starts)`: the index into the history's days of each bucket's trading day), a product's
    contracts as one group after the given ones; with `mains`, the product's own buckets become each day's main
    contract's (in place)."""
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
            made = (np.repeat(t[None, :], len(cs), axis=0), *prices, split)
            out.append((contracts, made))  # type: ignore[arg-type]
            if mains is not None and p in mains:
                splice_buckets(arrays, i, contracts, made, d, mains[p][0])  # type: ignore[arg-type]
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


def replay_mains(walk: DemoWalk, history: History, oi: np.ndarray, opened: np.ndarray,
                 live_days: np.ndarray) -> dict[int, tuple[np.ndarray, list[Roll]]]:
    """Each product row's main contract per history column (-1: none, or a day it does not trade) and its rolls: the
    rule of server/market/contracts/main.py run day by day over the history's closing open interest."""
    days, o, _, _, c, _ = history
    ords = np.array([d.toordinal() for d in days])
    curve = walk.curve
    out: dict[int, tuple[np.ndarray, list[Roll]]] = {}
    for p in sorted({int(b) for b in curve.base[curve.rows]}):
        rows = [int(r) for r in curve.rows if curve.base[r] == p]
        cols = np.flatnonzero(opened[p] & (ords <= live_days[p]))
        candidates = [[Candidate(r, int(curve.last[r]), float(oi[r, j])) for r in rows if np.isfinite(o[r, j])]
                      for j in cols]
        closes = [{r: float(c[r, j]) for r in rows} for j in cols]
        mains, rolls = replay([int(ords[j]) for j in cols], candidates, closes)
        by_col = np.full(len(ords), -1, dtype=np.intp)
        by_col[cols] = [m if isinstance(m, int) else -1 for m in mains]
        out[p] = (by_col, rolls)
    return out


def splice_daily(history: History, oi: np.ndarray, settle: np.ndarray,
                 mains: dict[int, tuple[np.ndarray, list[Roll]]]) -> None:
    """Each product row's daily candles (in place): each day's main contract's, unadjusted (SPEC 19)."""
    _, o, h, low, c, v = history
    for p, (by_col, _) in mains.items():
        cols = np.flatnonzero(by_col >= 0)
        for a in (o, h, low, c, v, oi, settle):
            a[p, cols] = a[by_col[cols], cols]


def splice_buckets(arrays: Buckets, i: int, contracts: list[int], made: Buckets, day: np.ndarray,
                   by_col: np.ndarray) -> None:
    """Row `i` of the group `arrays` (a product) takes, bucket by bucket, its main contract's of the bucket's day
    (`made`: its `contracts`' buckets, `day`: each bucket's history column)."""
    at = {r: k for k, r in enumerate(contracts)}
    main = by_col[day]
    use = np.array([m >= 0 and int(m) in at for m in main])
    which = np.array([at.get(int(m), 0) for m in main], dtype=np.intp)
    buckets = np.flatnonzero(use)
    for dst, src in zip(arrays[1:], made[1:], strict=True):
        dst[i, buckets] = src[which[buckets], buckets]
