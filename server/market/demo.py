"""The demo market: a seeded geometric random walk per instrument, its ticks and its synthetic history.

Pure: it takes the clock as an argument and owns a numpy Generator derived from its seed
(server/feeds/ runs it as the demo feed source).
"""

from __future__ import annotations

import functools
import math
from datetime import date, timedelta

import numpy as np

from server.market.candles.intraday import INTERVALS, session_start
from server.market.catalogue import Catalogue
from server.market.contracts.settlement import round_to_tick
from server.market.contracts.specs import PRODUCTS
from server.market.tick import Tick, TickDetail
from server.market.timefmt import day_start, trading_days_back

# Seconds of continuous trading that one ``daily_vol`` is spread over. Using a
# single session (rather than 24 h) keeps tick-to-tick moves visible on screen;
# the mean reversion below stops a long-running demo from drifting away.
TRADING_DAY_SECONDS = 4 * 3600.0
# Pull of the live price back to its starting level, per second (half-life ~ 2.4 days).
MEAN_REVERSION_PER_S = 1.0 / (5 * 86400.0)
MOVE_FRACTION = (0.10, 0.40)

# Intraday history: path points per base bucket (open, two inside, close); a session's base bucket is
# the shortest interval whose ring reaches it (1m for the last 1,000 minutes, ..., 1h for older ones).
SUBSTEPS = 4

History = tuple[list[date], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# per interval: (t, o, h, l, c, v), each shaped (n, k); t is the bucket start in epoch seconds
Buckets = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _round_rows(values: np.ndarray, decimals: np.ndarray) -> np.ndarray:
    """Round each row (axis 0) of ``values`` to its instrument's decimals."""
    scale = 10.0 ** decimals.astype(np.float64)
    shape = (-1,) + (1,) * (values.ndim - 1)
    return np.round(values * scale.reshape(shape)) / scale.reshape(shape)


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
        self._tick_size = 10.0 ** -self.decimals.astype(np.float64)
        # children keyed by index: a fourth leaves the first three (and so older histories) unchanged
        init_seq, tick_seq, self._history_seq, self._intraday_seq, book_seq = np.random.SeedSequence(seed).spawn(5)
        init_rng = np.random.default_rng(init_seq)
        base = np.array([i.base_price for i in insts])
        start = base * np.exp(init_rng.normal(0.0, 1.5 * self.vol))
        self._anchor = start.copy()
        self._true = start  # unrounded internal price; ticks publish it rounded
        self._rng = np.random.default_rng(tick_seq)
        self._last_ts: float | None = None
        # futures (SPEC 19): each product's tick, its open interest, and the state's daily limits to stay within
        self.product_tick = np.array([PRODUCTS[i.id].tick if i.id in PRODUCTS else np.nan for i in insts])
        self.futures = np.isfinite(self.product_tick)
        self._book_rng = np.random.default_rng(book_seq)
        self.oi = np.where(self.futures, np.round(self.volume_base * 3.0), np.nan)
        self.bounds: tuple[np.ndarray, np.ndarray] | None = None  # (limitDown, limitUp) per row; NaN: none

    def resume(self, prices: np.ndarray) -> None:
        """Walk on from these published prices (another process ran the walk until now). An instrument whose own
        walk already shows that price keeps its unrounded position (a hub that ran the walk itself, as the memory
        engine's always has, continues exactly)."""
        ok = np.isfinite(prices) & (prices > 0) & (prices != self.live_prices())
        self._true[ok] = prices[ok]

    def live_prices(self) -> np.ndarray:
        """Current published (rounded) price of every instrument."""
        return np.maximum(_round_rows(self._true, self.decimals), self._tick_size)

    def history(self, end_day: date, n: int = 90, days: list[date] | None = None,
                now: float | None = None) -> History:
        """``n`` trading days ending at ``end_day`` (or these ``days``) whose live day (the newest begun,
        ``live_day_index``) closes at the live price."""
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
        o, c, top, bottom = (np.maximum(_round_rows(a, self.decimals), self._tick_size[:, None])
                             for a in (o, c, top, bottom))
        c[:, -1 if now is None else live_day_index(days, now)] = self.live_prices()
        h = np.maximum(top, np.maximum(o, c))
        low = np.minimum(bottom, np.minimum(o, c))
        v = np.round(self.volume_base[:, None] * rng.lognormal(0.0, 0.3, size=(self.n, n)))
        return days, o, h, low, c, v

    def intraday_history(self, history: History, now: float,
                         capacity: int = 1000) -> tuple[dict[str, Buckets], np.ndarray, int]:
        """Intraday buckets of every interval, for the sessions of ``history``'s last days up to ``now``.

        Each trading day's session (``session_start`` to the next local midnight; the live one up to
        ``now``) is a random path from the day's open to its close that touches its high and low, so
        the buckets of a day aggregate exactly to its daily candle (open, high, low, close; the day's
        volume split over its buckets). The live day (the newest begun by ``now``; the days after it
        have no buckets yet) keeps only the elapsed part of its volume: returned with the buckets and
        its index, the caller puts it in that daily candle. Deterministic for a seed and ``now``.
        """
        days, o, h, low, c, v = history
        rng = np.random.default_rng(self._intraday_seq)
        live_at = live_day_index(days, now)
        live_volume = v[:, live_at].copy()
        reaches = sorted((now - capacity * sec, sec) for sec in INTERVALS.values())[::-1]  # shortest first
        sessions: list[tuple[int, float, float, int]] = []  # (day index, start, end, base bucket)
        for j in range(live_at, -1, -1):
            start, end = session_start(days[j]), day_start(days[j] + timedelta(days=1))
            if j:  # never before the previous axis day's end (a Sunday on the axis: a monthly print's day)
                start = max(start, day_start(days[j - 1] + timedelta(days=1)))
            base = next((sec for reach, sec in reaches if end > reach), None)
            if base is None:
                break  # older sessions fall out of every ring
            sessions.append((j, start, end, base))
        sessions.reverse()
        parts: dict[str, list[Buckets]] = {name: [] for name in INTERVALS}
        for j, start, end, base in sessions:
            live = j == live_at
            if live:
                end = (math.floor(now / base) + 1) * base  # up to the bucket holding now
                elapsed = min(max(now - start, 0.0) / (day_start(days[j] + timedelta(days=1)) - start), 1.0)
                live_volume = np.maximum(np.round(v[:, j] * elapsed), 1.0)
            n_buckets = round((end - start) / base)
            if n_buckets <= 0:  # the live day has not begun (the axis' newest day is a later venue's)
                continue
            day_v = live_volume if live else v[:, j]
            buckets = self._session_buckets(rng, start, base, n_buckets,
                                            (o[:, j], h[:, j], low[:, j], c[:, j], day_v))
            for name, sec in INTERVALS.items():
                if sec >= base:
                    parts[name].append(_coarsen(buckets, sec))
        out: dict[str, Buckets] = {}
        for name, chunks in parts.items():
            joined = tuple(np.concatenate([ch[i] for ch in chunks], axis=1) for i in range(6))
            out[name] = tuple(a[:, -capacity:] for a in joined)  # type: ignore[assignment]
        return out, live_volume, live_at

    def _session_buckets(self, rng: np.random.Generator, start: float, base: int, n_buckets: int,
                         day: tuple[np.ndarray, ...]) -> Buckets:
        """``n_buckets`` buckets of ``base`` seconds from ``start`` whose aggregate is ``day`` (o, h, l, c, v)."""
        o, h, low, c, v = (a[:, None] for a in day)
        n, points = self.n, n_buckets * SUBSTEPS
        frac = np.linspace(0.0, 1.0, points)
        steps = rng.standard_normal((n, points)) * (self.vol[:, None] / math.sqrt(86400.0 / base * SUBSTEPS))
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
        path = np.clip(_round_rows(path, self.decimals), low, h)
        rows = np.arange(n)
        # the high and the low are touched exactly: where the stretch left them, else at an inside point
        at_high = np.where(peak[:, 0] > top[:, 0], path.argmax(axis=1), rng.integers(1, points - 1, n))
        at_low = np.where(trough[:, 0] < bottom[:, 0], path.argmin(axis=1), rng.integers(1, points - 1, n))
        at_low = np.where(at_low == at_high, at_high % (points - 2) + 1, at_low)
        path[rows, at_high] = h[:, 0]
        path[rows, at_low] = low[:, 0]
        path[:, 0], path[:, -1] = o[:, 0], c[:, 0]
        cube = path.reshape(n, n_buckets, SUBSTEPS)
        weights = np.cumsum(rng.lognormal(0.0, 0.5, size=(n, n_buckets)), axis=1)
        cum_v = np.round(v * weights / weights[:, -1:])
        volumes = np.diff(cum_v, axis=1, prepend=0.0)
        t = np.broadcast_to(int(start) + base * np.arange(n_buckets, dtype=np.int64), (n, n_buckets))
        points_of = [cube[:, :, k] for k in range(SUBSTEPS)]  # a reduction over a 4-wide axis is ~10x slower
        return (t, points_of[0], functools.reduce(np.maximum, points_of), functools.reduce(np.minimum, points_of),
                points_of[-1], volumes)

    def next_batch(self, ts: float, interval_s: float) -> list[Tick]:
        """Move a random 10-40% subset of instruments one random-walk step."""
        rng = self._rng
        frac = rng.uniform(*MOVE_FRACTION)
        movers = np.flatnonzero(rng.random(self.n) < frac)
        if movers.size == 0:
            movers = rng.integers(0, self.n, size=1)
        dt = max(interval_s, 1e-3)
        sigma = self.vol[movers] * math.sqrt(dt / (frac * TRADING_DAY_SECONDS))
        pull = -MEAN_REVERSION_PER_S * dt / frac * np.log(self._true[movers] / self._anchor[movers])
        self._true[movers] *= np.exp(pull + sigma * rng.standard_normal(movers.size))
        prices = np.maximum(_round_rows(self._true[movers], self.decimals[movers]), self._tick_size[movers])
        if self.bounds is not None:  # a futures product stays within its daily limits (a limit price is valid)
            down, up = self.bounds[0][movers], self.bounds[1][movers]
            self._true[movers] = np.fmin(np.fmax(self._true[movers], down), up)
            prices = np.fmin(np.fmax(prices, down), up)
        per_move = self.volume_base[movers] * dt / (frac * TRADING_DAY_SECONDS)
        volumes = np.maximum(1.0, np.round(per_move * rng.lognormal(0.0, 0.5, size=movers.size)))
        details = self._details(movers, prices, volumes)
        return [Tick(int(r), float(p), ts, float(q), details.get(int(r)))
                for r, p, q in zip(movers, prices, volumes, strict=True)]

    def _details(self, movers: np.ndarray, prices: np.ndarray, volumes: np.ndarray) -> dict[int, TickDetail]:
        """The futures movers' book: bid a tick or none below the price, ask one or two ticks above the bid,
        sizes of 1-80 lots, open interest moving with the volume traded."""
        at = np.flatnonzero(self.futures[movers])
        if not at.size:
            return {}
        rows, rng = movers[at], self._book_rng
        tick, dec = np.maximum(self.product_tick[rows], self._tick_size[rows]), self.decimals[rows]  # a step shown
        bid = _round_rows(prices[at] - tick * rng.integers(0, 2, at.size), dec)
        ask = _round_rows(bid + tick * rng.integers(1, 3, at.size), dec)
        sizes = rng.integers(1, 81, size=(2, at.size))
        self.oi[rows] = np.maximum(self.oi[rows] + np.round(volumes[at] * rng.normal(0.0, 0.4, at.size)), 0.0)
        return {int(r): TickDetail(bid=float(b), ask=float(a), bid_size=float(bs), ask_size=float(asz),
                                   oi=float(oi))
                for r, b, a, bs, asz, oi in zip(rows, bid, ask, sizes[0], sizes[1], self.oi[rows], strict=True)}

    def board_history(self, history: History) -> tuple[np.ndarray, np.ndarray]:
        """(oi, settle) of every history candle, NaN for other instruments: the settlement is the day's typical
        price (h + l + 2c) / 4 rounded to the tick, the open interest a slow walk ending at today's."""
        _, _, h, low, c, _ = history
        rng = np.random.default_rng(self._history_seq.spawn(1)[0])
        settle = np.full(c.shape, np.nan)
        for row in np.flatnonzero(self.futures):
            typical = (h[row] + low[row] + 2 * c[row]) / 4
            settle[row] = [round_to_tick(x, self.product_tick[row]) if x == x else np.nan for x in typical]
        drift = np.cumsum(rng.normal(0.0, 0.03, size=c.shape)[:, ::-1], axis=1)[:, ::-1]
        oi = np.round(self.oi[:, None] * np.exp(drift - drift[:, -1:]))
        return oi, settle


def _coarsen(buckets: Buckets, seconds: int) -> Buckets:
    """Consecutive buckets merged into buckets of ``seconds`` (a multiple of theirs, aligned)."""
    t, o, h, low, c, v = buckets
    keys = t[0] // seconds
    if len(keys) and keys[-1] - keys[0] == len(keys) - 1:
        return buckets  # already that size
    _, first = np.unique(keys, return_index=True)
    last = np.append(first[1:], len(keys)) - 1
    return (keys[first][None, :].repeat(t.shape[0], axis=0) * seconds, o[:, first],
            np.maximum.reduceat(h, first, axis=1), np.minimum.reduceat(low, first, axis=1), c[:, last],
            np.add.reduceat(v, first, axis=1))


def live_day_index(days: list[date], now: float) -> int:
    """The index of the newest day whose ticks have begun by ``now`` (the axis may hold later days: a night
    session opened them for another venue, or a monthly price's next print)."""
    return max((j for j, day in enumerate(days) if session_start(day) <= now), default=len(days) - 1)


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
