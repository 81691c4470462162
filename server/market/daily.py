"""Daily OHLCV candles in numpy ring buffers, one shared trading-day axis.

Invariant: only ``apply_tick``, ``roll_to`` and
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
"""

from __future__ import annotations

from datetime import date

import numpy as np

from server.market.timefmt import previous_weekday, trading_days_back

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
