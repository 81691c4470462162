"""The demo market: a seeded geometric random walk per instrument, its ticks and its synthetic history.

Pure: it takes the clock as an argument and owns a numpy Generator derived from its seed
(server/feeds/ runs it as the demo feed source).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from datetime import date, timedelta

import numpy as np

from server.market.candles.intraday import INTERVALS, session_start
from server.market.catalogue import Catalogue
from server.market.contracts.specs import PRODUCTS
from server.market.demo_curve import CurveModel
from server.market.main_series import MainSeries
from server.market.tick import Tick, TickDetail
from server.market.timefmt import day_start, trading_days_back
from server.market.venues.clock import VenueClock
from server.market.venues.data import Publication

# Seconds of continuous trading that one ``daily_vol`` is spread over. Using a
# single session (rather than 24 h) keeps tick-to-tick moves visible on screen;
# the mean reversion below stops a long-running demo from drifting away.
TRADING_DAY_SECONDS = 4 * 3600.0
# Pull of the live price back to its starting level, per second (half-life ~ 2.4 days).
MEAN_REVERSION_PER_S = 1.0 / (5 * 86400.0)
MOVE_FRACTION = (0.10, 0.40)

# Intraday history: path points per base bucket (open, two inside, close); a day's base bucket is the
# shortest interval whose ring still needs it (1m for the newest 1,000 minutes of sessions, ..., 1h for older days).
SUBSTEPS = 4
# The volume profile of a session window: mid-session weight 1, up to 1 + EDGE_WEIGHT at its open and at its
# close, decaying over EDGE_WIDTH of the window (the U shape of exchange volume; heavier at the open and close).
EDGE_WEIGHT = 3.0
EDGE_WIDTH = 0.08

History = tuple[list[date], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# per interval: (t, o, h, l, c, v), each shaped (n, k); t is the bucket start in epoch seconds
Buckets = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# a trading day's session windows as (start, end) in epoch seconds, ascending; empty on a day the venue is shut
DayWindows = Callable[[date], Sequence[tuple[int, int]]]


def _round_rows(values: np.ndarray, decimals: np.ndarray) -> np.ndarray:
    """Round each row (axis 0) of ``values`` to its instrument's decimals."""
    scale = 10.0 ** decimals.astype(np.float64)
    shape = (-1,) + (1,) * (values.ndim - 1)
    return np.round(values * scale.reshape(shape)) / scale.reshape(shape)


def _on_grid(values: np.ndarray, step: np.ndarray, decimals: np.ndarray) -> np.ndarray:
    """Each row (axis 0) of ``values`` on its instrument's price grid: a multiple of ``step`` (a futures product's
    tick, SPEC 19; else one unit of its last decimal), written with its decimals."""
    s = step.reshape((-1,) + (1,) * (values.ndim - 1))
    return _round_rows(np.round(values / s) * s, decimals)


class DemoWalk:
    """Seeded geometric random walk calibrated per instrument."""

    def __init__(self, catalogue: Catalogue, seed: int) -> None:
        self.catalogue = catalogue
        self.seed = seed
        insts = catalogue.instruments
        self.n = len(insts)
        self.decimals = np.array([i.decimals for i in insts], dtype=np.int64)
        self.vol = np.array([i.daily_vol for i in insts])
        self.volume_base = np.array([i.volume_base for i in insts])
        # futures (SPEC 19): each product's tick (every price the demo publishes is a multiple of it), its open
        # interest, and the state's daily limits to stay within
        self.product_tick = np.array([PRODUCTS[p].tick if (p := i.product or i.id) in PRODUCTS else np.nan
                                      for i in insts])
        self.futures = np.isfinite(self.product_tick)
        self._tick_size = np.fmax(np.nan_to_num(self.product_tick, nan=0.0), 10.0 ** -self.decimals.astype(np.float64))
        # children keyed by index: a fourth leaves the first three (and so older histories) unchanged
        init_seq, tick_seq, self._history_seq, self._intraday_seq, book_seq = np.random.SeedSequence(seed).spawn(5)
        init_rng = np.random.default_rng(init_seq)
        base = np.array([i.base_price for i in insts])
        start = base * np.exp(init_rng.normal(0.0, 1.5 * self.vol))
        self._anchor = start.copy()
        self._true = start  # unrounded internal price; ticks publish it rounded
        self._rng = np.random.default_rng(tick_seq)
        self._last_ts: float | None = None
        self._book_rng = np.random.default_rng(book_seq)
        self.oi = np.where(self.futures, np.round(self.volume_base * 3.0), np.nan)
        self.curve = CurveModel(catalogue, seed)  # the contracts' term structure (SPEC 19): `place` sets it at a time
        self._oi_scale = self.volume_base[self.curve.base] * 3.0  # a contract's open interest at its peak
        # a product row with contracts walks the curve's level and publishes its main contract's ticks (SPEC 19)
        self.series = np.zeros(self.n, dtype=bool)
        self.series[self.curve.base[self.curve.rows]] = True
        self.mains: MainSeries | None = None  # the market state's: which contract is each product's main
        self.bounds: tuple[np.ndarray, np.ndarray] | None = None  # (limitDown, limitUp) per row; NaN: none

    def place(self, now: float, expiries: Sequence[float] | None = None) -> None:
        """Lay every contract on its product's curve at ``now`` (its price, open interest and trading volume);
        `expiries`: each contract's last trading day's close (epoch seconds) from its venue clock."""
        rows, curve = self.curve.rows, self.curve
        if not rows.size:
            return
        if expiries is not None:
            curve.set_expiries(expiries)
        base = curve.base[rows]
        self._true[rows] = self._true[base] * curve.factor(rows, now)
        self._anchor[rows] = self._true[rows]
        shape = curve.oi_now(rows, now)
        self.oi[rows] = np.round(self._oi_scale[rows] * shape)
        self.volume_base[rows] = np.maximum(self.volume_base[base] * shape, 1.0)

    def resume(self, prices: np.ndarray) -> None:
        """Walk on from these published prices (another process ran the walk until now). An instrument whose own
        walk already shows that price keeps its unrounded position (a hub that ran the walk itself, as the memory
        engine's always has, continues exactly)."""
        ok = np.isfinite(prices) & (prices > 0) & (prices != self.live_prices()) & ~self.curve.is_contract
        self._true[ok] = prices[ok]  # a contract follows its product's walk (`place` is run again by the caller)

    def live_prices(self) -> np.ndarray:
        """Current published (rounded) price of every instrument."""
        return np.maximum(_on_grid(self._true, self._tick_size, self.decimals), self._tick_size)

    def history(self, end_day: date, n: int = 90, days: list[date] | None = None) -> History:
        """``n`` trading days ending at ``end_day`` (or these ``days``) whose last day closes at the live price
        (``fit_to_venues`` moves that to each row's live day)."""
        days = trading_days_back(end_day, n) if days is None else days
        n = len(days)
        rng = np.random.default_rng(self._history_seq)
        vol = self.vol[:, None]
        rets = rng.standard_t(5, size=(self.n, n)) * vol * math.sqrt(3.0 / 5.0)
        log_c = np.log(self.live_prices())[:, None] - (np.cumsum(rets[:, ::-1], axis=1)[:, ::-1] - rets)
        c = np.exp(log_c)
        prev_c = np.concatenate([c[:, :1] * np.exp(-rets[:, :1]), c[:, :-1]], axis=1)
        o = prev_c * np.exp(rng.normal(0.0, 0.25, size=(self.n, n)) * vol)
        top = np.maximum(o, c) * np.exp(np.abs(rng.normal(0.0, 0.5, size=(self.n, n))) * vol)
        bottom = np.minimum(o, c) * np.exp(-np.abs(rng.normal(0.0, 0.5, size=(self.n, n))) * vol)
        o, c, top, bottom = (np.maximum(_on_grid(a, self._tick_size, self.decimals), self._tick_size[:, None])
                             for a in (o, c, top, bottom))
        c[:, -1] = self.live_prices()
        h = np.maximum(top, np.maximum(o, c))
        low = np.minimum(bottom, np.minimum(o, c))
        v = np.round(self.volume_base[:, None] * rng.lognormal(0.0, 0.3, size=(self.n, n)))
        return days, o, h, low, c, v

    def intraday_history(self, history: History, now: float, sessions: Sequence[DayWindows | None],
                         capacity: int = 1000) -> dict[str, list[tuple[list[int], Buckets]]]:
        """Intraday buckets of every interval, per group of rows sharing their ``sessions`` (a row's trading days'
        windows; None: published once a day, no intraday history), up to ``now``.

        Each trading day of a row is a random path from the day's open to its close that touches its high and low,
        laid on the buckets of its session windows only (none at night, in a break or on a shut day), so the
        buckets of a day aggregate exactly to its daily candle (open, high, low, close; the day's volume split by
        ``volume_profile``). A group's live day (the newest whose first window began by ``now``) has buckets up to
        the one holding ``now`` and keeps only the elapsed part of its volume: written into ``history``'s volume
        (in place), so the daily candle stays the aggregate. Deterministic for a seed and ``now``."""
        rng = np.random.default_rng(self._intraday_seq)
        groups: dict[int, tuple[DayWindows, list[int]]] = {}
        for row, windows_of in enumerate(sessions):
            if windows_of is not None:
                groups.setdefault(id(windows_of), (windows_of, []))[1].append(row)
        out: dict[str, list[tuple[list[int], Buckets]]] = {name: [] for name in INTERVALS}
        for windows_of, rows in groups.values():
            seeded = _seeded_days(history[0], windows_of, now, capacity)
            day_buckets = self._group_buckets(rng, rows, seeded, history, now)
            for name, sec in INTERVALS.items():
                chunks = [b for (_, _, base), b in zip(seeded, day_buckets, strict=True) if base <= sec]
                if chunks:
                    joined = tuple(np.concatenate([ch[i] for ch in chunks], axis=1) for i in range(6))
                    out[name].append((rows, tuple(a[:, -capacity:] for a in _coarsen(joined, sec))))  # type: ignore[arg-type]
        return out

    def _group_buckets(self, rng: np.random.Generator, rows: list[int],
                       seeded: list[tuple[int, Sequence[tuple[int, int]], int]], history: History,
                       now: float) -> list[Buckets]:
        """The base buckets of each seeded day of ``rows`` (``_seeded_days``), in that order. Days whose windows
        have the same shape (relative to their first bucket) are drawn together, one row per (instrument, day)."""
        _, o, h, low, c, v = history
        shapes: dict[tuple, list[tuple[int, np.ndarray]]] = {}
        weights_of: dict[tuple, np.ndarray] = {}
        for i, (j, windows, base) in enumerate(seeded):
            full = bucket_starts(windows, base, math.inf)
            t = full[full <= now]
            key = (base, len(t), tuple((start - int(t[0]), end - int(t[0])) for start, end in windows))
            if key not in weights_of:
                weights_of[key] = volume_profile(full - t[0], base, [(s, e) for s, e in key[2]])
            weights = weights_of[key]
            elapsed = weights[:len(t)].sum() / weights.sum()
            if elapsed < 1.0:  # the live day: the volume traded so far
                v[rows, j] = np.maximum(np.round(v[rows, j] * elapsed), 1.0)
            shapes.setdefault(key, []).append((i, t))
        out: list[Buckets] = [()] * len(seeded)  # type: ignore[list-item]
        for key, members in shapes.items():
            cols = [seeded[i][0] for i, _ in members]
            day = tuple(a[np.ix_(rows, cols)].ravel() for a in (o, h, low, c, v))  # (instrument, day) rows
            starts = np.repeat(np.stack([t for _, t in members])[None], len(rows), axis=0).reshape(len(day[0]), -1)
            made = self._day_buckets(rng, np.repeat(rows, len(members)), starts, key[0],
                                     weights_of[key][:key[1]], day)
            for k, (i, _) in enumerate(members):
                out[i] = tuple(a.reshape(len(rows), len(members), -1)[:, k] for a in made)  # type: ignore[assignment]
        return out

    def _day_buckets(self, rng: np.random.Generator, rows: np.ndarray, t: np.ndarray, base: int,
                     weights: np.ndarray, day: tuple[np.ndarray, ...]) -> Buckets:
        """Buckets at the starts ``t`` (one row of them per row of ``day``; ``base`` seconds each) whose aggregate
        is ``day`` (o, h, l, c, v of instruments ``rows``), the volume split in proportion to ``weights`` (with
        noise)."""
        o, h, low, c, v = (a[:, None] for a in day)
        decimals = self.decimals[rows]
        n, n_buckets = t.shape
        points = n_buckets * SUBSTEPS
        frac = np.linspace(0.0, 1.0, points)
        steps = rng.standard_normal((n, points)) * (self.vol[rows, None] / math.sqrt(86400.0 / base * SUBSTEPS))
        walk = np.cumsum(steps, axis=1)
        walk -= walk[:, :1] + frac * (walk[:, -1:] - walk[:, :1])  # a bridge: 0 at both ends
        path = np.exp(np.log(o) + frac * (np.log(c) - np.log(o)) + walk)
        path[:, :1], path[:, -1:] = o, c  # exactly: exp(log(x)) may not be x, and an end must not stretch
        # stretch what lies above max(o, c) up to the high and below min(o, c) down to the low
        top, bottom = np.maximum(o, c), np.minimum(o, c)
        peak, trough = path.max(axis=1, keepdims=True), path.min(axis=1, keepdims=True)
        up = np.divide(h - top, peak - top, out=np.zeros_like(top), where=peak > top)
        down = np.divide(bottom - low, bottom - trough, out=np.zeros_like(top), where=trough < bottom)
        path = np.where(path > top, top + (path - top) * up, path)
        path = np.where(path < bottom, bottom - (bottom - path) * down, path)
        path = np.clip(_on_grid(path, self._tick_size[rows], decimals), low, h)
        at = np.arange(n)
        # the high and the low are touched exactly: where the stretch left them, else at an inside point
        at_high = np.where(peak[:, 0] > top[:, 0], path.argmax(axis=1), rng.integers(1, points - 1, n))
        at_low = np.where(trough[:, 0] < bottom[:, 0], path.argmin(axis=1), rng.integers(1, points - 1, n))
        at_low = np.where(at_low == at_high, at_high % (points - 2) + 1, at_low)
        path[at, at_high] = h[:, 0]
        path[at, at_low] = low[:, 0]
        path[:, 0], path[:, -1] = o[:, 0], c[:, 0]
        cube = path.reshape(n, n_buckets, SUBSTEPS)
        shares = np.cumsum(weights * rng.lognormal(0.0, 0.3, size=(n, n_buckets)), axis=1)
        volumes = np.diff(np.round(v * shares / shares[:, -1:]), axis=1, prepend=0.0)
        points_of = [cube[:, :, k] for k in range(SUBSTEPS)]  # a reduction over a 4-wide axis is ~10x slower
        return (t.astype(np.int64), points_of[0], functools.reduce(np.maximum, points_of),
                functools.reduce(np.minimum, points_of), points_of[-1], volumes)

    def next_batch(self, ts: float, interval_s: float) -> list[Tick]:
        """Move a random 10-40% subset of instruments one random-walk step."""
        rng = self._rng
        frac = rng.uniform(*MOVE_FRACTION)
        movers = np.flatnonzero(rng.random(self.n) < frac)
        if movers.size == 0:
            movers = rng.integers(0, self.n, size=1)
        dt = max(interval_s, 1e-3)
        contract = self.curve.is_contract[movers]
        walkers = movers[~contract]
        sigma = self.vol[walkers] * math.sqrt(dt / (frac * TRADING_DAY_SECONDS))
        pull = -MEAN_REVERSION_PER_S * dt / frac * np.log(self._true[walkers] / self._anchor[walkers])
        self._true[walkers] *= np.exp(pull + sigma * rng.standard_normal(walkers.size))
        if contract.any():  # a contract: its product's walk on the curve (an expired one trades no more)
            movers = movers[~contract | (self.curve.expiry_ts[movers] > ts)]
            on_curve = movers[self.curve.is_contract[movers]]
            self._true[on_curve] = self._true[self.curve.base[on_curve]] * self.curve.factor(on_curve, ts)
        movers = movers[~self.series[movers]]  # a product's level moved; its ticks are its main's (below)
        movers = movers[movers < self.catalogue.custom_from]  # declared instruments: their owners' ticks only
        if not movers.size:
            return []
        grid = self._tick_size[movers]
        prices = np.maximum(_on_grid(self._true[movers], grid, self.decimals[movers]), grid)
        if self.bounds is not None:  # a futures product stays within its daily limits (a limit price is valid)
            down, up = self.bounds[0][movers], self.bounds[1][movers]
            self._true[movers] = np.fmin(np.fmax(self._true[movers], down), up)
            prices = np.fmin(np.fmax(prices, down), up)
        per_move = self.volume_base[movers] * dt / (frac * TRADING_DAY_SECONDS)
        volumes = np.maximum(1.0, np.round(per_move * rng.lognormal(0.0, 0.5, size=movers.size)))
        details = self._details(movers, prices, volumes, ts)
        ticks = [Tick(int(r), float(p), ts, float(q), details.get(int(r)))
                 for r, p, q in zip(movers, prices, volumes, strict=True)]
        return ticks + self._as_products(ticks, ts) if contract.any() else ticks

    def _as_products(self, ticks: list[Tick], ts: float) -> list[Tick]:
        """Each main contract's tick again under its product's row (the main continuous series, SPEC 19)."""
        mains, base = self.mains, self.curve.base
        out: list[Tick] = []
        if mains is None:
            return out
        main_of: dict[int, int | None] = {}
        for t in ticks:
            if self.curve.is_contract[t.row]:
                product = int(base[t.row])
                if product not in main_of:
                    main_of[product] = mains.main_at(product, ts)
                if main_of[product] == t.row:
                    out.append(Tick(product, t.price, t.ts, t.volume, t.detail))
        return out

    def _details(self, movers: np.ndarray, prices: np.ndarray, volumes: np.ndarray,
                 ts: float) -> dict[int, TickDetail]:
        """The futures movers' book: bid a tick or none below the price, ask one or two ticks above the bid,
        sizes of 1-80 lots, open interest moving with the volume traded (a contract's: its curve's profile at
        ``ts``, within a few lots)."""
        at = np.flatnonzero(self.futures[movers])
        if not at.size:
            return {}
        rows, rng = movers[at], self._book_rng
        tick, dec = self._tick_size[rows], self.decimals[rows]  # the product's tick
        bid = _on_grid(prices[at] - tick * rng.integers(0, 2, at.size), tick, dec)
        ask = _on_grid(bid + tick * rng.integers(1, 3, at.size), tick, dec)
        sizes = rng.integers(1, 81, size=(2, at.size))
        self.oi[rows] = np.maximum(self.oi[rows] + np.round(volumes[at] * rng.normal(0.0, 0.4, at.size)), 0.0)
        on_curve = rows[self.curve.is_contract[rows]]
        if on_curve.size:
            model = self._oi_scale[on_curve] * self.curve.oi_now(on_curve, ts)
            self.oi[on_curve] = np.round(np.clip(self.oi[on_curve], model * 0.995, model * 1.005))
        return {int(r): TickDetail(bid=float(b), ask=float(a), bid_size=float(bs), ask_size=float(asz),
                                   oi=float(oi))
                for r, b, a, bs, asz, oi in zip(rows, bid, ask, sizes[0], sizes[1], self.oi[rows], strict=True)}

    def board_history(self, history: History) -> tuple[np.ndarray, np.ndarray]:
        """(oi, settle) of every history candle, NaN for other instruments: the settlement is the day's typical
        price (h + l + 2c) / 4 rounded to the tick, the open interest a slow walk ending at today's."""
        _, _, h, low, c, _ = history
        rng = np.random.default_rng(self._history_seq.spawn(1)[0])
        settle = np.full(c.shape, np.nan)
        rows = np.flatnonzero(self.futures)
        tick = self.product_tick[rows][:, None]
        typical = (h[rows] + low[rows] + 2 * c[rows]) / 4  # round_to_tick, vectorised: a half tick up, no binary noise
        places = np.where(tick < 1, np.maximum(0, -np.floor(np.log10(tick)) + 1), 0) + 2
        steps = np.floor(typical / tick + 0.5 + 1e-9)
        settle[rows] = np.round(steps * tick * 10.0 ** places) / 10.0 ** places
        drift = np.cumsum(rng.normal(0.0, 0.03, size=c.shape)[:, ::-1], axis=1)[:, ::-1]
        oi = np.round(self.oi[:, None] * np.exp(drift - drift[:, -1:]))
        rows = self.curve.rows
        if rows.size:  # a contract's: its curve's profile at each close, ending at today's
            ords = np.array([d.toordinal() for d in history[0]])
            model = self._oi_scale[rows][:, None] * self.curve.oi_days(rows, ords)
            oi[rows] = np.where(model > 0, np.round(model * np.exp(rng.normal(0.0, 0.002, model.shape))), np.nan)
            oi[rows, -1] = np.where(model[:, -1] > 0, self.oi[rows], np.nan)
        return oi, settle


def _coarsen(buckets: Buckets, seconds: int) -> Buckets:
    """Consecutive buckets merged into buckets of ``seconds`` (a multiple of theirs, aligned)."""
    t, o, h, low, c, v = buckets
    if not np.any(t[0] % seconds):
        return buckets  # every bucket starts one of that size
    keys = t[0] // seconds
    _, first = np.unique(keys, return_index=True)
    last = np.append(first[1:], len(keys)) - 1
    return (keys[first][None, :].repeat(t.shape[0], axis=0) * seconds, o[:, first],
            np.maximum.reduceat(h, first, axis=1), np.minimum.reduceat(low, first, axis=1), c[:, last],
            np.add.reduceat(v, first, axis=1))


def bucket_starts(windows: Sequence[tuple[int, int]], seconds: int, until: float) -> np.ndarray:
    """The starts (<= ``until``) of the clock-aligned buckets of ``seconds`` that overlap these windows, ascending."""
    out = np.concatenate([np.arange(start // seconds * seconds, min(end, until + 1), seconds, dtype=np.int64)
                          for start, end in windows] or [np.zeros(0, dtype=np.int64)])
    return out[np.diff(out, prepend=-1) > 0]  # two windows may share a coarse bucket (10:00 of 10:15 and 10:30)


def volume_profile(starts: np.ndarray, seconds: int, windows: Sequence[tuple[int, int]]) -> np.ndarray:
    """The relative volume of each bucket: the U-shaped profile of each window over the part of the bucket in it."""
    weights = np.zeros(len(starts))
    for start, end in windows:
        lo, hi = np.maximum(starts, start), np.minimum(starts + seconds, end)
        x = ((lo + hi) / 2 - start) / (end - start)  # where in the window that part lies, 0 (open) to 1 (close)
        edge = EDGE_WEIGHT * (np.exp(-x / EDGE_WIDTH) + np.exp((x - 1) / EDGE_WIDTH))
        weights += np.clip(hi - lo, 0, None) / seconds * (1.0 + edge)
    return weights


def _seeded_days(days: list[date], windows_of: DayWindows, now: float,
                 capacity: int) -> list[tuple[int, Sequence[tuple[int, int]], int]]:
    """(index into ``days``, windows, base bucket seconds) of the days whose buckets some ring holds, oldest first:
    the trading days whose first window began by ``now``, newest first until every ring is full."""
    held = dict.fromkeys(INTERVALS.values(), 0)
    out = []
    for j in range(len(days) - 1, -1, -1):
        windows = windows_of(days[j])
        if not windows or windows[0][0] > now:
            continue
        base = next((sec for sec in sorted(held) if held[sec] < capacity), None)
        if base is None:
            break  # older days fall out of every ring
        for sec in held:
            held[sec] += len(bucket_starts(windows, sec, now))
        out.append((j, windows, base))
    return out[::-1]


def venue_sessions(clocks: Sequence[VenueClock]) -> list[DayWindows | None]:
    """Each row's session windows from its venue clock (one function per clock: rows sharing one are seeded
    together); None for a venue published once a day or month (no intraday history)."""
    made: dict[int, DayWindows | None] = {}
    for clock in clocks:
        if id(clock) not in made:
            made[id(clock)] = _clock_windows(clock) if clock.venue.publication is Publication.CONTINUOUS else None
    return [made[id(clock)] for clock in clocks]


def _clock_windows(clock: VenueClock) -> DayWindows:
    return lambda day: [(w.start_ms // 1000, w.end_ms // 1000) for w in clock.windows(day)]


def weekday_sessions(n: int) -> list[DayWindows | None]:
    """Without venue clocks: every row trades from ``session_start`` to the day's local midnight."""

    def windows(day: date) -> list[tuple[int, int]]:
        return [(int(session_start(day)), int(day_start(day + timedelta(days=1))))]

    return [windows] * n


def fit_to_venues(history: History, opened: np.ndarray, live_days: np.ndarray, started: np.ndarray,
                  live: np.ndarray) -> None:
    """Fit a history on the union day axis to each row's venue (SPEC 16), in place: ``opened`` (n, k) the days
    each row trades, ``live_days`` (n,) each row's current trading day (ordinal), ``started`` (n,) whether that
    day's first session began. A row's live candle ends at the live price; the columns after it (a later day a
    night session already opened for other venues) wait unopened; a live day not started yet is unopened too,
    and the day before it closes at the live price (the weekend's quote is Friday's close)."""
    days, o, h, low, c, v = history
    ords = np.array([d.toordinal() for d in days])
    for row in range(len(live)):
        shown = np.flatnonzero(opened[row] & (ords <= live_days[row]))
        if not len(shown):
            continue
        last = int(shown[-1])
        end = last if started[row] or len(shown) < 2 else int(shown[-2])
        waiting = slice(end + 1, None) if end == last else slice(last, None)
        c[row, end] = live[row]
        h[row, end] = max(h[row, end], live[row])
        low[row, end] = min(low[row, end], live[row])
        o[row, waiting] = h[row, waiting] = low[row, waiting] = np.nan
        c[row, waiting] = live[row]
        v[row, waiting] = 0.0
