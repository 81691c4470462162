"""Daily OHLCV candles in numpy ring buffers on one day axis, each row on its own venue's trading days.

Invariant: only ``apply_tick``, ``roll_to``, ``advance`` and ``load_history`` mutate the buffers. The columns
are the days of a ``TradingAxis`` (the union of every row's trading days, server/market/candles/trading_axis.py); a
row's candle on a day its venue is shut exists in the arrays but is never shown (``opened`` is False there), so
each instrument has one candle per trading day of its venue (SPEC 16). Each row has its own live candle: the
newest column the row trades on whose day is not after the row's current trading day (``advance`` sets it from
the venue clocks, a tick moves it forward): a CME row stays on Tuesday while a Chinese night session's tick at
21:30 Shanghai time opened Wednesday's column. The columns after a row's live one are not shown either.

A candle is *opened* by its first tick, which sets open, high and low. Until then its open/high/low are NaN
and its close carries the row's previous close (set when it becomes the row's live candle). The live candle is
not shown until then (a day that has not traded has no candle yet); a day that closed without a tick reads as
flat at that close with volume 0, the only flat candle, and a gap-up
day opens at its first tick, not at yesterday's close. An instrument that has never traded (a live feed before
its first tick) has a NaN close too; those candles are left out of ``series``.

``ticked`` marks the candles this process applied ticks to: the only ones a live feed writes back to storage
(never a flat fill over an imported candle).
"""

from __future__ import annotations

from datetime import date

import numpy as np

from server.market.candles.trading_axis import TradingAxis, WeekdayAxis, axis_days_back

OHLCV = tuple[float, float, float, float, float]
Arrays5 = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
NO_DAY = np.iinfo(np.int32).max  # a row without a trading day of its own yet follows the newest column


class CandleBook:
    def __init__(self, n_instruments: int, capacity: int = 90, axis: TradingAxis | None = None) -> None:
        if capacity < 2:
            raise ValueError("capacity must be >= 2")
        self.n = n_instruments
        self.capacity = capacity
        self.axis: TradingAxis = axis if axis is not None else WeekdayAxis(n_instruments)
        if self.axis.n != n_instruments:
            raise ValueError("the trading axis and the book disagree on the instrument count")
        self.days = np.zeros(capacity, dtype=np.int32)
        shape = (n_instruments, capacity)
        self.o = np.full(shape, np.nan)
        self.h = np.full(shape, np.nan)
        self.l = np.full(shape, np.nan)
        self.c = np.full(shape, np.nan)
        self.v = np.zeros(shape)
        self.q = np.zeros(shape, dtype=np.int64)  # seq of the last tick applied to each candle (0: none here)
        self.oi = np.full(shape, np.nan)  # futures (SPEC 19): the open interest at the candle's close
        self.s = np.full(shape, np.nan)  # futures: the day's settlement, once known
        self.futures = np.zeros(n_instruments, dtype=bool)  # rows whose candles carry `oi` and `s`
        self.ticked = np.zeros(shape, dtype=bool)
        self.opened = np.ones(shape, dtype=bool)  # the row's venue trades on the column's day
        self.row_day = np.full(n_instruments, NO_DAY, dtype=np.int32)  # each row's current trading day
        self.row_col = np.zeros(n_instruments, dtype=np.intp)  # each row's live column
        self.row_prev = np.full(n_instruments, np.nan)  # each row's close before its live candle
        self.row_prev_settle = np.full(n_instruments, np.nan)  # each row's settlement before its live candle
        self._rows = np.arange(n_instruments)
        self.head = 0  # column of the oldest candle
        self.count = 0

    # --- ring geometry -----------------------------------------------------
    def _col(self, age: int) -> int:
        """Column of the candle ``age`` steps before the newest one (0 = newest)."""
        return (self.head + self.count - 1 - age) % self.capacity

    def order(self) -> np.ndarray:
        """Columns in ascending day order."""
        return (self.head + np.arange(self.count)) % self.capacity

    def __len__(self) -> int:
        return self.count

    def _reindex(self) -> None:
        """Each row's live column and previous close, after the axis or a row's day moved; a live candle not
        opened yet carries the row's previous close."""
        if self.count == 0:
            return
        cols = self.order()
        shown = self.opened[:, cols] & (self.days[cols][None, :] <= self.row_day[:, None])  # each row's candles
        k = shown.shape[1]
        idx = np.arange(k)[None, :]
        last = np.where(shown, idx, -1).max(axis=1)
        before = np.where(shown & (idx < last[:, None]), idx, -1).max(axis=1)
        live = cols[np.maximum(last, 0)]
        self.row_col = np.where(last >= 0, live, cols[-1])
        prev_cols = cols[np.maximum(before, 0)]
        self.row_prev = np.where(before >= 0, self.c[self._rows, prev_cols], np.nan)
        self.row_prev_settle = np.where(before >= 0, self.s[self._rows, prev_cols], np.nan)
        carry = (before >= 0) & np.isnan(self.o[self._rows, self.row_col]) & ~self.ticked[self._rows, self.row_col]
        self.c[self._rows[carry], self.row_col[carry]] = self.row_prev[carry]

    # --- mutation ------------------------------------------------------------
    def load_history(
        self, days: list[date], o: np.ndarray, h: np.ndarray, l: np.ndarray,  # noqa: E741
        c: np.ndarray, v: np.ndarray, oi: np.ndarray | None = None, s: np.ndarray | None = None,
    ) -> None:
        """Replace the buffers with ``days`` (ascending axis days) and arrays shaped (n, len(days)) (futures:
        ``oi`` and ``s`` too, NaN where unknown)."""
        k = len(days)
        for arr in (o, h, l, c, v):
            if np.shape(arr) != (self.n, k):
                raise ValueError(f"history arrays must have shape {(self.n, k)}")
        keep = min(k, self.capacity)
        start = k - keep
        self.days[:keep] = [d.toordinal() for d in days[start:]]
        for dst, src in ((self.o, o), (self.h, h), (self.l, l), (self.c, c), (self.v, v)):
            dst[:, :keep] = np.asarray(src, dtype=np.float64)[:, start:]
        for j, day in enumerate(days[start:]):
            self.opened[:, j] = self.axis.open_rows(day)
        self.ticked[:] = False
        self.q[:] = 0
        self.oi[:] = self.s[:] = np.nan
        for dst, extra in ((self.oi, oi), (self.s, s)):
            if extra is not None:
                dst[:, :keep] = np.asarray(extra, dtype=np.float64)[:, start:]
        self.head = 0
        self.count = keep
        self._reindex()

    def roll_to(self, day: date) -> bool:
        """Append unopened columns for each axis day after the newest up to ``day``; True if any.

        At most ``capacity`` days are generated, however far ``day`` lies ahead.
        """
        if self.count and day.toordinal() <= self.days[self._col(0)]:
            return False
        after = self.last_day() if self.count else None
        new_days = axis_days_back(self.axis, day, self.capacity, after)
        if not new_days:
            return False
        for d in new_days:
            self._append(d)
        self._reindex()
        return True

    def advance(self, row_days: np.ndarray) -> bool:
        """Each row's current trading day (ordinals) moves forward to ``row_days`` (never back); the axis rolls to
        the newest of them. True if any row's live candle or the axis changed."""
        moved = np.maximum(np.where(self.row_day == NO_DAY, 0, self.row_day), row_days).astype(np.int32)
        rolled = self.roll_to(date.fromordinal(int(moved.max())))
        if not rolled and np.array_equal(moved, self.row_day):
            return False
        self.row_day = moved
        self._reindex()
        return True

    def _append(self, day: date) -> None:
        """A new unopened column: open/high/low NaN, the close carried, volume 0."""
        prev = self.c[:, self._col(0)].copy() if self.count else np.full(self.n, np.nan)
        if self.count < self.capacity:
            col = (self.head + self.count) % self.capacity
            self.count += 1
        else:
            col = self.head
            self.head = (self.head + 1) % self.capacity
        self.days[col] = day.toordinal()
        for arr in (self.o, self.h, self.l, self.oi, self.s):
            arr[:, col] = np.nan
        self.c[:, col] = prev
        self.v[:, col] = 0.0
        self.q[:, col] = 0
        self.ticked[:, col] = False
        self.opened[:, col] = self.axis.open_rows(day)

    def apply_tick(self, row: int, price: float, volume: float, day: date, seq: int = 0) -> None:
        """A tick of trading day ``day`` (its venue's): into the row's live candle (a late tick's too)."""
        move_row(self, row, day)
        col = self.row_col[row]
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
        """The newest day of the axis (some rows' live candle may be an older column: ``live_day``)."""
        if self.count == 0:
            raise LookupError("candle book is empty")
        return date.fromordinal(int(self.days[self._col(0)]))

    def live_day(self, row: int) -> date:
        """The trading day of ``row``'s live candle."""
        if self.count == 0:
            raise LookupError("candle book is empty")
        return date.fromordinal(int(self.days[self.row_col[row]]))

    def first_day(self) -> date:
        """Day of the oldest candle held."""
        if self.count == 0:
            raise LookupError("candle book is empty")
        return date.fromordinal(int(self.days[self.head]))

    def live(self, row: int) -> OHLCV:
        """The row's live candle; open/high/low are NaN until the day's first tick."""
        col = self.row_col[row]
        return (float(self.o[row, col]), float(self.h[row, col]), float(self.l[row, col]),
                float(self.c[row, col]), float(self.v[row, col]))

    def prev_close(self, row: int) -> float:
        """Close of the row's candle before its live one (the live open if there is none)."""
        prev = self.row_prev[row]
        if prev == prev:
            return float(prev)
        return float(self.o[row, self.row_col[row]]) if self.count else float("nan")

    def live_arrays(self) -> Arrays5:
        """Copies of the live candle's (o, h, l, c, v), each shaped (n,)."""
        if self.count == 0:
            nan = np.full(self.n, np.nan)
            return nan, nan.copy(), nan.copy(), nan.copy(), np.zeros(self.n)
        rows, cols = self._rows, self.row_col
        return tuple(arr[rows, cols] for arr in (self.o, self.h, self.l, self.c, self.v))  # type: ignore[return-value]

    def shown_columns(self, row: int) -> np.ndarray:
        """``row``'s candle columns, ascending: its venue's trading days up to its live candle, which shows from its
        first tick (SPEC 16: before its session opens the series ends with the previous trading day)."""
        cols = self.order()
        cols = cols[self.opened[row, cols] & (self.days[cols] <= self.row_day[row])]
        return cols[:-1] if len(cols) and np.isnan(self.o[row, cols[-1]]) else cols

    def series(self, row: int, days: int, decimals: int) -> list[dict]:
        """The last ``days`` candles of ``row``, ascending, prices rounded to ``decimals``."""
        cols = self.shown_columns(row)[-days:] if days > 0 else self.order()[:0]
        return self.format(row, cols.tolist(), decimals)

    def held(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(day ordinals, columns) of ``row``'s candles that have a close (all but never-traded ones), ascending."""
        cols = self.shown_columns(row)
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
            if self.futures[row]:
                oi, settle = float(self.oi[row, col]), float(self.s[row, col])
                out[-1]["oi"] = round(oi) if oi == oi else None
                out[-1]["s"] = round(settle, decimals) if settle == settle else None
        return out




def all_days(book: CandleBook) -> list[date]:
    return [date.fromordinal(int(d)) for d in book.days[book.order()]]


def closed_candles(book: CandleBook, rows: list[int] | np.ndarray | None = None) -> tuple[list[date], Arrays5]:
    """The axis' candles before its newest column, as held (shut days included): (days, (o, h, l, c, v)),
    arrays (len(rows), k)."""
    cols = book.order()[:-1] if book.count else book.order()
    sel = np.arange(book.n) if rows is None else np.asarray(rows, dtype=np.intp)
    days = [date.fromordinal(int(d)) for d in book.days[cols]]
    arrays = tuple(arr[np.ix_(sel, cols)] for arr in (book.o, book.h, book.l, book.c, book.v))
    return days, arrays  # type: ignore[return-value]


def move_row(book: CandleBook, row: int, day: date) -> None:
    """The row's trading day forward to ``day`` (never back): its live candle is ``day``'s."""
    ordinal = day.toordinal()
    current = book.row_day[row]
    if ordinal > current or current == NO_DAY:
        book.row_day[row] = ordinal
        if not book.roll_to(day):
            book._reindex()


def unopen_live(book: CandleBook, rows: list[int]) -> None:
    """These rows' live candles back to unopened at the previous close (before their ticks are applied again)."""
    for row in rows:
        col = book.row_col[row]
        book.o[row, col] = book.h[row, col] = book.l[row, col] = np.nan
        book.c[row, col] = book.row_prev[row]
        book.v[row, col] = 0.0
        book.q[row, col] = 0
        book.ticked[row, col] = False


def ticked_candles(book: CandleBook) -> list[tuple[int, date, OHLCV]]:
    """(row, day, (o, h, l, c, v)) of every candle this process applied ticks to, oldest first."""
    out = []
    for col in book.order().tolist():
        day = date.fromordinal(int(book.days[col]))
        for row in np.flatnonzero(book.ticked[:, col]).tolist():
            out.append((row, day, (float(book.o[row, col]), float(book.h[row, col]), float(book.l[row, col]),
                                   float(book.c[row, col]), float(book.v[row, col]))))
    return out


# --- intraday ------------------------------------------------------------------------------------

# interval name -> bucket length in seconds; every length divides a day, so buckets never straddle
# local midnight (Asia/Shanghai is a whole-hour offset: epoch-aligned buckets are local-aligned)


def reset_row(book: CandleBook, row: int, day: int) -> None:
    """No candle for ``row``, its venue's days as the axis now tells them, live on ``day`` (an ordinal): a reserved
    row bound to a declared instrument (SPEC 20, docs/ingest.md)."""
    for arr in (book.o, book.h, book.l, book.c, book.oi, book.s):
        arr[row] = np.nan
    book.v[row], book.q[row], book.ticked[row], book.futures[row] = 0.0, 0, False, False
    for col in range(book.capacity):
        if book.days[col]:
            book.opened[row, col] = book.axis.open_rows(date.fromordinal(int(book.days[col])))[row]
    book.row_day[row] = day
    if not book.roll_to(date.fromordinal(day)):
        book._reindex()
