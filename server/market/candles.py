"""Daily OHLCV candles in numpy ring buffers, one shared trading-day axis.

Invariant: only ``apply_tick``, ``apply_ticks``, ``roll_to`` and
``load_history`` mutate the buffers. Every instrument has exactly one candle
per trading day (Mon-Fri), so all rows share the ``days`` column; the last
column is the live candle, the others are closed.

A candle is *opened* by its first tick, which sets open, high and low. Until
then its open/high/low are NaN and its close carries the previous close (a
rolled-in day, or a day missing from storage): such a candle reads as flat at
that close with volume 0, so a day that closes without a tick is the only
flat candle, and a gap-up day opens at its first tick, not at yesterday's close.
An instrument that has never traded (a live feed before its first tick) has a
NaN close too; those candles are left out of ``series``.

``ticked`` marks the candles this process applied ticks to: the only ones a
live feed writes back to storage (never a flat fill over an imported candle).

Intraday candles (``IntradayBook``: 1m, 5m, 15m, 1h) are ring buffers too, 1,000
buckets per interval per instrument, holding only buckets that had a tick; each
instrument has its own ring position. 4 intervals x 1,000 x (int64 start + 5
float64 + int64 seq of the bucket's last tick) = 224,000 bytes per instrument, allocated once. They live in memory
only (README "Decisions"). A served bucket's JSON text is kept too (``IntradayRing.texts``, ~190 bytes a bucket).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import numpy as np
import orjson

from server.market.timefmt import day_start, previous_weekday, trading_days_back

OHLCV = tuple[float, float, float, float, float]
Arrays5 = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class CandleBook:
    def __init__(self, n_instruments: int, capacity: int = 90) -> None:
        if capacity < 2:
            raise ValueError("capacity must be >= 2")
        self.n = n_instruments
        self.capacity = capacity
        self.days = np.zeros(capacity, dtype=np.int32)
        shape = (n_instruments, capacity)
        self.o = np.full(shape, np.nan)
        self.h = np.full(shape, np.nan)
        self.l = np.full(shape, np.nan)
        self.c = np.full(shape, np.nan)
        self.v = np.zeros(shape)
        self.q = np.zeros(shape, dtype=np.int64)  # seq of the last tick applied to each candle (0: none here)
        self.ticked = np.zeros(shape, dtype=bool)
        self.head = 0  # column of the oldest candle
        self.count = 0

    # --- ring geometry -----------------------------------------------------
    def _col(self, age: int) -> int:
        """Column of the candle ``age`` steps before the live one (0 = live)."""
        return (self.head + self.count - 1 - age) % self.capacity

    def _order(self) -> np.ndarray:
        """Columns in ascending day order."""
        return (self.head + np.arange(self.count)) % self.capacity

    def __len__(self) -> int:
        return self.count

    # --- mutation ------------------------------------------------------------
    def load_history(
        self, days: list[date], o: np.ndarray, h: np.ndarray, l: np.ndarray,  # noqa: E741
        c: np.ndarray, v: np.ndarray,
    ) -> None:
        """Replace the buffers with ``days`` (ascending) and arrays shaped (n, len(days))."""
        k = len(days)
        for arr in (o, h, l, c, v):
            if np.shape(arr) != (self.n, k):
                raise ValueError(f"history arrays must have shape {(self.n, k)}")
        keep = min(k, self.capacity)
        start = k - keep
        self.days[:keep] = [d.toordinal() for d in days[start:]]
        for dst, src in ((self.o, o), (self.h, h), (self.l, l), (self.c, c), (self.v, v)):
            dst[:, :keep] = np.asarray(src, dtype=np.float64)[:, start:]
        self.ticked[:] = False
        self.q[:] = 0
        self.head = 0
        self.count = keep

    def roll_to(self, day: date) -> bool:
        """Append unopened candles for each missing trading day up to ``day``; True if any.

        At most ``capacity`` days are generated, however far ``day`` lies ahead.
        """
        if self.count == 0:
            self._append(day.toordinal(), np.full(self.n, np.nan))
            return True
        last = self.last_day()
        if day <= last:
            return False
        new_days = [d for d in trading_days_back(previous_weekday(day), self.capacity) if d > last]
        if not new_days:
            return False
        prev = self.c[:, self._col(0)].copy()
        for d in new_days:
            self._append(d.toordinal(), prev)
        return True

    def _append(self, ordinal: int, close: np.ndarray) -> None:
        """A new unopened column: open/high/low NaN, the close carried, volume 0."""
        if self.count < self.capacity:
            col = (self.head + self.count) % self.capacity
            self.count += 1
        else:
            col = self.head
            self.head = (self.head + 1) % self.capacity
        self.days[col] = ordinal
        for arr in (self.o, self.h, self.l):
            arr[:, col] = np.nan
        self.c[:, col] = close
        self.v[:, col] = 0.0
        self.q[:, col] = 0
        self.ticked[:, col] = False

    def live_column(self) -> int:
        return self._col(0)

    def apply_tick(self, row: int, price: float, volume: float, day: date, seq: int = 0) -> None:
        self.roll_to(day)
        col = self._col(0)
        if np.isnan(self.o[row, col]):
            self.o[row, col] = self.h[row, col] = self.l[row, col] = price
        else:
            self.h[row, col] = max(self.h[row, col], price)
            self.l[row, col] = min(self.l[row, col], price)
        self.c[row, col] = price
        self.v[row, col] += volume
        self.q[row, col] = seq
        self.ticked[row, col] = True

    def apply_ticks(self, rows: np.ndarray, prices: np.ndarray, volumes: np.ndarray, day: date) -> None:
        """Vectorised ``apply_tick`` for ticks in time order; rows may repeat."""
        if len(rows) == 0:
            return
        self.roll_to(day)
        col = self._col(0)
        rows = np.asarray(rows, dtype=np.intp)
        prices = np.asarray(prices, dtype=np.float64)
        uniq, first = np.unique(rows, return_index=True)
        unopened = np.isnan(self.o[uniq, col])
        self.o[uniq[unopened], col] = prices[first[unopened]]
        np.fmax.at(self.h[:, col], rows, prices)
        np.fmin.at(self.l[:, col], rows, prices)
        np.add.at(self.v[:, col], rows, np.asarray(volumes, dtype=np.float64))
        rev_uniq, rev_first = np.unique(rows[::-1], return_index=True)
        self.c[rev_uniq, col] = prices[::-1][rev_first]
        self.ticked[uniq, col] = True

    # --- reading -------------------------------------------------------------
    def last_day(self) -> date:
        if self.count == 0:
            raise LookupError("candle book is empty")
        return date.fromordinal(int(self.days[self._col(0)]))

    def first_day(self) -> date:
        """Day of the oldest candle held."""
        if self.count == 0:
            raise LookupError("candle book is empty")
        return date.fromordinal(int(self.days[self.head]))

    def live(self, row: int) -> OHLCV:
        """The live candle; open/high/low are NaN until the day's first tick."""
        col = self._col(0)
        return (float(self.o[row, col]), float(self.h[row, col]), float(self.l[row, col]),
                float(self.c[row, col]), float(self.v[row, col]))

    def prev_close(self, row: int) -> float:
        """Close of the candle before the live one (the live open if there is none)."""
        if self.count >= 2:
            return float(self.c[row, self._col(1)])
        return float(self.o[row, self._col(0)]) if self.count else float("nan")

    def prev_closes(self) -> np.ndarray:
        if self.count >= 2:
            return self.c[:, self._col(1)].copy()
        if self.count == 1:
            return self.o[:, self._col(0)].copy()
        return np.full(self.n, np.nan)

    def live_arrays(self) -> Arrays5:
        """Copies of the live candle's (o, h, l, c, v), each shaped (n,)."""
        if self.count == 0:
            nan = np.full(self.n, np.nan)
            return nan, nan.copy(), nan.copy(), nan.copy(), np.zeros(self.n)
        col = self._col(0)
        return tuple(arr[:, col].copy() for arr in (self.o, self.h, self.l, self.c, self.v))  # type: ignore[return-value]

    def series(self, row: int, days: int, decimals: int) -> list[dict]:
        """The last ``days`` candles of ``row``, ascending, prices rounded to ``decimals``."""
        cols = self._order()[-days:] if days > 0 else self._order()[:0]
        return self.format(row, cols.tolist(), decimals)

    def held(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(day ordinals, columns) of ``row``'s candles that have a close (all but never-traded ones), ascending."""
        cols = self._order()
        cols = cols[~np.isnan(self.c[row, cols])]
        return self.days[cols], cols

    def format(self, row: int, cols: list[int], decimals: int) -> list[dict]:
        """Candles of ``row`` at these columns (never-traded ones left out): the one format of every daily candle
        served (/kline, range queries, UDF history, candle frames)."""
        out: list[dict] = []
        for col in cols:
            close = float(self.c[row, col])
            if close != close:  # never traded
                continue
            c = round(close, decimals)
            opened = self.o[row, col] == self.o[row, col]
            out.append({
                "t": date.fromordinal(int(self.days[col])).isoformat(),
                "o": round(float(self.o[row, col]), decimals) if opened else c,
                "h": round(float(self.h[row, col]), decimals) if opened else c,
                "l": round(float(self.l[row, col]), decimals) if opened else c,
                "c": c,
                "v": round(float(self.v[row, col])),
            })
        return out

    def all_days(self) -> list[date]:
        return [date.fromordinal(int(d)) for d in self.days[self._order()]]

    def closed_candles(self, rows: list[int] | np.ndarray | None = None) -> tuple[list[date], Arrays5]:
        """Closed (non-live) candles as held: (days, (o, h, l, c, v)), arrays (len(rows), k)."""
        cols = self._order()[:-1] if self.count else self._order()
        sel = np.arange(self.n) if rows is None else np.asarray(rows, dtype=np.intp)
        days = [date.fromordinal(int(d)) for d in self.days[cols]]
        arrays = tuple(arr[np.ix_(sel, cols)] for arr in (self.o, self.h, self.l, self.c, self.v))
        return days, arrays  # type: ignore[return-value]

    def ticked_candles(self) -> list[tuple[int, date, OHLCV]]:
        """(row, day, (o, h, l, c, v)) of every candle this process applied ticks to, oldest first."""
        out = []
        for col in self._order().tolist():
            day = date.fromordinal(int(self.days[col]))
            for row in np.flatnonzero(self.ticked[:, col]).tolist():
                out.append((row, day, (float(self.o[row, col]), float(self.h[row, col]), float(self.l[row, col]),
                                       float(self.c[row, col]), float(self.v[row, col]))))
        return out


# --- intraday ------------------------------------------------------------------------------------

# interval name -> bucket length in seconds; every length divides a day, so buckets never straddle
# local midnight (Asia/Shanghai is a whole-hour offset: epoch-aligned buckets are local-aligned)
INTERVALS: dict[str, int] = {"1m": 60, "5m": 300, "15m": 900, "1h": 3600}
INTRADAY_CAPACITY = 1000
_LOCAL_OFFSET_S = 8 * 3600


def session_start(day: date) -> float:
    """Epoch seconds at which trading day ``day``'s ticks begin: local midnight after the previous
    trading day (Saturday 00:00 for a Monday, as weekend ticks count for Monday; else ``day``'s own)."""
    return day_start(previous_weekday(day - timedelta(days=1)) + timedelta(days=1))


_ISO: dict[int, str] = {}  # bucket start -> its text: buckets recur in every query and frame, their text never changes
_ISO_MAX = 1 << 18  # ~40 MB at most; cleared when full (4 intervals x 1,000 buckets x instruments' own starts)


def bucket_iso(starts: np.ndarray) -> list[str]:
    """Bucket starts (epoch seconds) as ISO 8601 with the +08:00 offset, in ``timefmt.iso``'s format."""
    keys = np.asarray(starts, dtype=np.int64).tolist()
    cache = _ISO
    out = [cache.get(k) for k in keys]
    if None in out:
        missing = [k for k, text in zip(keys, out, strict=True) if text is None]
        local = (np.asarray(missing, dtype=np.int64) + _LOCAL_OFFSET_S).astype("datetime64[s]")
        if len(cache) + len(missing) > _ISO_MAX:
            cache.clear()
        for k, text in zip(missing, np.datetime_as_string(local, unit="s").tolist(), strict=True):
            cache[k] = f"{text}.000+08:00"
        out = [cache[k] for k in keys]
    return out  # type: ignore[return-value]


class IntradayRing:
    """One interval's OHLCV buckets per instrument: only buckets that had a tick, the oldest overwritten.

    Each instrument has its own ring position (instruments tick at different times, so their buckets
    differ). A tick opens a new bucket when it falls after the instrument's newest one; a tick stamped
    in or before the newest bucket counts toward the newest (time in a candle book only moves forward,
    as a late tick counts toward the live daily candle). Rolling writes one column in place: nothing
    is allocated or shifted, whatever the gap since the last tick.
    """

    def __init__(self, n_instruments: int, seconds: int, capacity: int = INTRADAY_CAPACITY) -> None:
        if capacity < 1 or seconds < 1:
            raise ValueError("capacity and seconds must be >= 1")
        self.n = n_instruments
        self.seconds = seconds
        self.capacity = capacity
        shape = (n_instruments, capacity)
        self.t = np.zeros(shape, dtype=np.int64)  # bucket start, epoch seconds
        self.o = np.zeros(shape)
        self.h = np.zeros(shape)
        self.l = np.zeros(shape)
        self.c = np.zeros(shape)
        self.v = np.zeros(shape)
        self.q = np.zeros(shape, dtype=np.int64)  # seq of the last tick in each bucket
        # per instrument, as Python ints (a tick reads them without boxing numpy scalars)
        self._last = [capacity - 1] * n_instruments  # column of the newest bucket
        self._count = [0] * n_instruments
        self._newest = [-(2**62)] * n_instruments  # start of the newest bucket
        # per instrument: no bucket starts before this (the end of a bucket the stream sent as final by the clock,
        # so a tick arriving later, stamped inside it, cannot change what was sent as final: it counts toward
        # the bucket that starts here; server/stream/candle_frames.py)
        self.sealed = [-(2**62)] * n_instruments
        # a tick reads and writes single cells through memoryviews (Python floats): about half the cost of numpy scalars
        # (typed Any: typeshed knows memoryview items as int only, whatever the format; these are "q" and "d")
        self._cells: tuple[Any, ...] = tuple(a.data for a in (self.t, self.o, self.h, self.l, self.c, self.v, self.q))
        # per instrument: the JSON text of each of its buckets older than the newest, by bucket start ({} until a
        # range or series is served; ``texts``). Only the newest bucket of an instrument ever changes (a tick opens
        # a newer one or counts toward the newest), so an older bucket's text is final; ``load`` clears them all
        self._texts: list[dict[int, bytes]] = [{} for _ in range(n_instruments)]
        self._texts_decimals = [-1] * n_instruments
        self._newest_text: list[tuple[tuple[Any, ...], bytes] | None] = [None] * n_instruments

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.t, self.o, self.h, self.l, self.c, self.v, self.q))

    def newest_start(self, row: int) -> int | None:
        return self._newest[row] if self._count[row] else None

    def newest_values(self, row: int) -> tuple[int, float, float, float, float, float, int] | None:
        """(start, o, h, l, c, v, seq) of ``row``'s newest bucket (Python scalars through the memoryviews), None
        before its first tick: what the stream reads after every batch."""
        if not self._count[row]:
            return None
        cell = (row, self._last[row])
        t, o, h, l, c, v, q = self._cells  # noqa: E741
        return t[cell], o[cell], h[cell], l[cell], c[cell], v[cell], q[cell]

    def seal(self, row: int, until: int) -> None:
        """No bucket of ``row`` starts before ``until`` from now on (a later tick stamped earlier counts there)."""
        if until > self.sealed[row]:
            self.sealed[row] = until

    def count(self, row: int) -> int:
        return self._count[row]

    def apply(self, row: int, price: float, volume: float, ts: float, floor: int, seq: int = 0) -> None:
        """Count a tick at ``ts``; a bucket never starts before ``floor`` (a bucket start) nor ``sealed[row]``."""
        sec = self.seconds
        start = int(ts // sec) * sec
        sealed = self.sealed[row]
        if start < floor or start < sealed:
            start = floor if floor > sealed else sealed
        t, o, h, l, c, v, q = self._cells  # noqa: E741
        if start > self._newest[row]:
            col = self._last[row] + 1
            if col == self.capacity:
                col = 0
            self._last[row] = col
            if self._count[row] < self.capacity:
                self._count[row] += 1
            self._newest[row] = start
            cell = (row, col)
            t[cell] = start
            o[cell] = h[cell] = l[cell] = c[cell] = price
            v[cell] = volume
            q[cell] = seq
            return
        cell = (row, self._last[row])
        if price > h[cell]:
            h[cell] = price
        if price < l[cell]:
            l[cell] = price
        c[cell] = price
        v[cell] += volume
        q[cell] = seq

    def load(self, t: np.ndarray, o: np.ndarray, h: np.ndarray, l: np.ndarray,  # noqa: E741
             c: np.ndarray, v: np.ndarray) -> None:
        """Replace every instrument's buckets with these, shaped (n, k), ``t`` ascending and aligned."""
        k = t.shape[1]
        for arr in (t, o, h, l, c, v):
            if np.shape(arr) != (self.n, k):
                raise ValueError(f"bucket arrays must have shape {(self.n, k)}")
        if k and np.any(t % self.seconds):
            raise ValueError("bucket starts must be multiples of the interval")
        keep = min(k, self.capacity)
        self.t[:, :keep] = t[:, k - keep:]
        for dst, src in ((self.o, o), (self.h, h), (self.l, l), (self.c, c), (self.v, v)):
            dst[:, :keep] = np.asarray(src, dtype=np.float64)[:, k - keep:]
        self.q[:] = 0
        self._texts = [{} for _ in range(self.n)]
        self._newest_text = [None] * self.n
        self._count = [keep] * self.n
        self._last = [keep - 1 if keep else self.capacity - 1] * self.n
        self._newest = self.t[:, keep - 1].tolist() if keep else [-(2**62)] * self.n

    def columns(self, row: int, limit: int) -> np.ndarray:
        """Columns of the newest ``limit`` buckets of ``row``, oldest first."""
        k = min(limit, self._count[row])
        return (self._last[row] - k + 1 + np.arange(k)) % self.capacity

    def arrays(self, row: int, limit: int) -> tuple[np.ndarray, Arrays5]:
        """(t, (o, h, l, c, v)) of the newest ``limit`` buckets of ``row``, ascending (copies)."""
        cols = self.columns(row, limit)
        return self.t[row, cols], tuple(a[row, cols] for a in (self.o, self.h, self.l, self.c, self.v))  # type: ignore[return-value]

    def series(self, row: int, limit: int, decimals: int) -> list[dict]:
        return self.format(row, self.columns(row, limit), decimals)

    def held(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(bucket starts in epoch seconds, columns) of every bucket of ``row`` held, ascending."""
        cols = self.columns(row, self.capacity)
        return self.t[row, cols], cols

    def newest(self, row: int) -> int | None:
        """Column of ``row``'s newest bucket, None before its first tick."""
        return self._last[row] if self._count[row] else None

    def format(self, row: int, cols: np.ndarray | list[int], decimals: int) -> list[dict]:
        """Buckets of ``row`` at these columns: the one format of every intraday candle served (/kline, range
        queries, UDF history, candle frames), so they are equal by construction. Vectorised (numpy rounds to
        ``decimals`` and volumes half to even, as Python's ``round`` does for prices held at that precision):
        1,000 buckets in a few hundred microseconds."""
        cols = np.asarray(cols, dtype=np.intp)
        t = self.t[row, cols]
        o, h, l, c = (np.round(a[row, cols], decimals).tolist() for a in (self.o, self.h, self.l, self.c))  # noqa: E741
        v = np.rint(self.v[row, cols]).astype(np.int64).tolist()
        return [{"t": ts, "o": oo, "h": hh, "l": ll, "c": cc, "v": vv}
                for ts, oo, hh, ll, cc, vv in zip(bucket_iso(t), o, h, l, c, v, strict=True)]


    def texts(self, row: int, cols: np.ndarray, decimals: int) -> list[bytes]:
        """The JSON of each of ``format(row, cols, decimals)``'s candles without its braces (``joined`` makes the
        series' JSON of them, byte for byte ``orjson.dumps(format(...))``), each bucket's text built once: a bucket
        older than the newest never changes again, and the newest's is kept per its values. The texts are split
        out of one ``orjson.dumps`` of the missing candles (an object of orjson's own keeps a 4 KiB buffer: a
        thousand of them would hold 4 MB) and have no nested braces, so ``},{`` separates them."""
        newest = self._newest[row] if self._count[row] else None  # read first: what is older now stays final
        cols = np.asarray(cols, dtype=np.intp)
        starts = self.t[row, cols].tolist()
        cache = self._texts[row]
        if self._texts_decimals[row] != decimals:
            cache.clear()
            self._newest_text[row] = None
            self._texts_decimals[row] = decimals
        last = None  # the newest bucket's text, when it is asked for: kept per its values, never in ``cache``
        if starts and starts[-1] == newest:
            now = self.newest_values(row)
            if now is not None and now[0] == newest:  # else a newer bucket opened meanwhile: format it below
                values = now[:6]
                kept = self._newest_text[row]
                if kept is None or kept[0] != values:
                    kept = self._newest_text[row] = (values, orjson.dumps(_candle(values, decimals))[1:-1])
                last = kept[1]
        out: list[Any] = list(map(cache.get, starts if last is None else starts[:-1]))
        if None in out:
            missing = [i for i, text in enumerate(out) if text is None]
            made = orjson.dumps(self.format(row, cols[missing], decimals))[2:-2].split(b"},{")
            for i, text in zip(missing, made, strict=True):
                out[i] = text
                if starts[i] != newest:
                    cache[starts[i]] = text
        if last is not None:
            out.append(last)
        if len(cache) > 2 * self.capacity:  # buckets that left the ring
            oldest = int(self.t[row, self.columns(row, self.capacity)[0]])
            self._texts[row] = {s: text for s, text in cache.items() if s >= oldest}
        return out


def joined(texts: list[bytes]) -> bytes:
    """The JSON array of candles from ``IntradayRing.texts``."""
    return b"[{" + b"},{".join(texts) + b"}]" if texts else b"[]"


def _candle(values: tuple[Any, ...], decimals: int) -> dict:
    """``IntradayRing.format``'s candle of one bucket's (start, o, h, l, c, v), with the same numpy rounding."""
    t, o, h, l, c, v = values  # noqa: E741
    oo, hh, ll, cc = np.round(np.array([o, h, l, c], dtype=np.float64), decimals).tolist()
    return {"t": bucket_iso(np.array([t]))[0], "o": oo, "h": hh, "l": ll, "c": cc,
            "v": np.rint(np.array([v], dtype=np.float64)).astype(np.int64).tolist()[0]}


class IntradayBook:
    """One ``IntradayRing`` per interval of ``INTERVALS``; a tick updates every ring."""

    def __init__(self, n_instruments: int, capacity: int = INTRADAY_CAPACITY) -> None:
        self.n = n_instruments
        self.rings = {name: IntradayRing(n_instruments, sec, capacity) for name, sec in INTERVALS.items()}
        self._rings = tuple(self.rings.values())

    def apply(self, row: int, price: float, volume: float, ts: float, floor: int, seq: int = 0) -> None:
        for ring in self._rings:
            ring.apply(row, price, volume, ts, floor, seq)

    def series(self, interval: str, row: int, limit: int, decimals: int) -> list[dict]:
        return self.rings[interval].series(row, limit, decimals)

    def series_json(self, interval: str, row: int, limit: int, decimals: int) -> bytes:
        """``orjson.dumps(series(...))``, from the buckets' kept texts."""
        ring = self.rings[interval]
        return joined(ring.texts(row, ring.columns(row, limit), decimals))

    def nbytes_per_instrument(self) -> int:
        return sum(r.nbytes() for r in self._rings) // max(self.n, 1)


# --- windows of held candles (range queries, UDF history) ------------------------------------------------------


def window(starts: np.ndarray, start: float, end: float, limit: int, earliest: bool) -> tuple[int, int, int | None]:
    """Indexes [lo, hi) into ascending ``starts`` of the candles with start <= s < end: the earliest ``limit``
    (``earliest``) or the latest ``limit``; and, for ``earliest``, the index of the first candle left out (None
    when none is). Two binary searches: no candle outside the answer is looked at."""
    lo = int(np.searchsorted(starts, start, "left"))
    hi = int(np.searchsorted(starts, end, "left"))
    if hi <= lo:
        return lo, lo, None
    if earliest:
        if hi - lo > limit:
            return lo, lo + limit, lo + limit
        return lo, hi, None
    return max(lo, hi - limit), hi, None
