"""Intraday candles (``IntradayBook``: 1m, 5m, 15m, 1h) in numpy ring buffers, 1,000
buckets per interval per instrument, holding only buckets that had a tick; each
instrument has its own ring position. 4 intervals x 1,000 x (int64 start + 5
float64 + int64 seq of the bucket's last tick) = 224,000 bytes per instrument, allocated once. They live in memory
only (README "Decisions"). A served bucket's JSON text is kept too (``IntradayRing.texts``, ~190 bytes a bucket).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

import numpy as np
import orjson

from server.market.candles.daily import Arrays5
from server.market.timefmt import day_start, previous_weekday

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
        # the bucket that starts here; server/stream/delivery/candle_frames.py)
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
             c: np.ndarray, v: np.ndarray, rows: Sequence[int] | None = None) -> None:
        """Replace the buckets of these ``rows`` (default: every instrument) with these, shaped (len(rows), k),
        ``t`` ascending and aligned (the newest ``capacity`` kept)."""
        rows = range(self.n) if rows is None else rows
        k = t.shape[1]
        for arr in (t, o, h, l, c, v):
            if np.shape(arr) != (len(rows), k):
                raise ValueError(f"bucket arrays must have shape {(len(rows), k)}")
        if k and np.any(t % self.seconds):
            raise ValueError("bucket starts must be multiples of the interval")
        keep = min(k, self.capacity)
        at = np.asarray(rows, dtype=np.intp)[:, None]
        for dst, src in ((self.t, t), (self.o, o), (self.h, h), (self.l, l), (self.c, c), (self.v, v)):
            dst[at, np.arange(keep)] = np.asarray(src)[:, k - keep:]
        self.q[at, :] = 0
        for i, row in enumerate(rows):
            self._texts[row] = {}
            self._newest_text[row] = None
            self._count[row] = keep
            self._last[row] = keep - 1 if keep else self.capacity - 1
            self._newest[row] = int(t[i, -1]) if keep else -(2**62)

    def load_row(self, row: int, buckets: Sequence[tuple[int, float, float, float, float, float]]) -> None:
        """Replace ``row``'s buckets with these (start in epoch seconds, o, h, l, c, v), ascending: a stored
        history read back at start (the newest ``capacity`` kept)."""
        t, o, h, l, c, v = np.array(buckets, dtype=np.float64).reshape(-1, 6).T[:, None, :]  # noqa: E741
        self.load(t.astype(np.int64), o, h, l, c, v, rows=[row])

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

    def reset_row(self, row: int) -> None:
        """No bucket for ``row`` (a reserved row bound to another declared instrument, SPEC 20)."""
        for ring in self._rings:
            ring.load_row(row, [])
            ring.sealed[row] = -(2**62)

    def behind(self, row: int, at: float, before: float | None = None) -> tuple[str, int] | None:
        """(interval, bucket start) of the first ring where a tick bucketed at ``at`` would not open or join its own
        bucket (``apply`` counts it toward a later one: the newest, or the first not sealed; ``before``: a tick of
        the row counted before it, not applied yet); None when it lands in its own bucket of every interval."""
        for name, ring in self.rings.items():
            sec, newest = ring.seconds, ring.newest_start(row)
            bound = max(ring.sealed[row], -(2**62) if newest is None else newest,
                        -(2**62) if before is None else int(before // sec) * sec)
            if int(at // sec) * sec < bound:
                return name, bound
        return None

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
