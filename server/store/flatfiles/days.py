"""Which flat files there are and what each holds (SPEC 18): one file per dataset per closed trading day.

A trading day's file holds, for every instrument whose venue trades that day, the rows of that instrument's
trading day (SPEC 16: a night session's ticks and minutes belong to the next trading day's file): the archive is
read over a window a little wider than the day (its previous close to its close) and each row is kept when its
venue's ``trading_day`` is the file's day. Rows come by instrument id, then time.

A day's files exist once it has *closed*: ``SETTLE_MS`` after the last close among the venues trading it (the
closing tick's grace is 60 s, the archive commits at least once a second). A file is made on first use, on a
history reader thread, and kept (server/store/flatfiles/files.py: written under a temporary name, then renamed, with its
sidecar of bytes, sha256 and rows); ``FlatFileJob`` makes the newest closed days' files ahead of the first
request and deletes the files of days the retention no longer keeps. Days are listed within the dataset's
retention (ticks: the ticks' days; candles-1m: 1m's; candles-1d: 1d's), and only days with rows.

A venue's files (``venue`` set; server/store/flatfiles/scopes.py builds one ``FlatFileDays`` per venue) are the same
thing over that venue's instruments only: its trading days, its close (plus ``SETTLE_MS``), its rows, in its own
folder. Its minute bars are read per instrument over the venue's window (not every instrument's, as the all-venue
file reads them), its daily candles are those of its instruments: each row is the one the all-venue file of that
day holds for that instrument.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, timedelta
from pathlib import Path

from server.market.timefmt import local_date
from server.market.venues.clock import VenueClock
from server.store.flatfiles.files import DATASETS, FORMATS, FlatFile, cached, day_file, drop_days, file_path
from server.store.flatfiles.files import data_version as version_of
from server.store.history.archive import TickArchive
from server.store.history.candle_store import CandleStore
from server.store.history.threads import History, HistoryRounds
from server.store.sql.repositories import Candles

log = logging.getLogger("market.flatfiles")

SETTLE_MS = 120_000  # a day's files are made this long after its last venue's close
MARGIN_MS = 120_000  # read this much around a venue's day (rows outside it are dropped by their trading day)
PAGE = 5_000  # minute bars read at a time for a venue's file (a day of one instrument is at most 1,440)
EMPTY_TTL_S = 60.0  # a day found empty is read again after this (another hub may have committed rows to it)
MAX_DAYS_KEPT = 20_000  # closes_at's memo: more than the longest retention's days (10 years) reaches
KIND = {"ticks": "ticks", "candles-1m": "1m", "candles-1d": "1d"}  # the retention kind of each dataset


class FlatFileDays:
    def __init__(self, history: History, daily: Candles, ids: Sequence[str], clocks: Sequence[VenueClock],
                 root: Path, retention: Mapping[str, int], venue: str | None = None,
                 version_root: Path | None = None) -> None:
        """`ids` and `clocks`: every instrument and its venue's clock, in the same order (for `venue`: that venue's
        instruments only); `retention`: days kept per kind (ticks, 1m, 1d ...)."""
        self.history, self.daily, self.root, self.retention, self.venue = history, daily, root, retention, venue
        self.version_root = root if version_root is None else version_root  # where imports move the data version
        self.by_id = sorted(zip(ids, clocks, strict=True))  # the files' order: by instrument id
        self.venues = list({id(c): c for c in clocks}.values())
        self._making: dict[tuple[str, date, str], asyncio.Lock] = {}
        # (dataset, day, format) -> its file of no rows, at the data version `_empty_version` (see `file`)
        self._empty: dict[tuple[str, date, str], tuple[FlatFile, float]] = {}  # ..., when found empty (monotonic)
        self._empty_version: str | None = None
        self._closes: dict[date, int | None] = {}  # closes_at's answers

    # --- which days -------------------------------------------------------------------------------------------
    def closes_at(self, day: date) -> int | None:
        """Epoch ms from which the day's files exist; None when no venue trades that day. Remembered per day (the
        venues' calendars are loaded once, at start): a year's listing asks it of every day of every dataset."""
        closes_at = self._closes.get(day, 0)
        if closes_at == 0:
            closes = [c.close_ms(day) for c in self.venues if c.is_trading_day(day)]
            closes_at = max(closes) + SETTLE_MS if closes else None
            if len(self._closes) >= MAX_DAYS_KEPT:
                self._closes.clear()
            self._closes[day] = closes_at
        return closes_at

    def floor(self, dataset: str, now_ms: int) -> date:
        """The first day the dataset's retention keeps."""
        return local_date(now_ms / 1000) - timedelta(days=self.retention[KIND[dataset]])

    def days(self, dataset: str, start: date, end: date, now_ms: int) -> list[date]:
        """The closed trading days in [start, end] that the retention keeps, ascending."""
        out = []
        day = max(start, self.floor(dataset, now_ms))
        while day <= end:
            closes = self.closes_at(day)
            if closes is not None:
                if closes > now_ms:
                    break
                out.append(day)
            day += timedelta(days=1)
        return out

    def available(self, dataset: str, day: date, now_ms: int) -> bool:
        closes = self.closes_at(day)
        return closes is not None and closes <= now_ms and day >= self.floor(dataset, now_ms)

    # --- the files ----------------------------------------------------------------------------------------------
    def version(self) -> str:
        """The data version: files.data_version (moved by imports) and the ticks this hub's archive has committed (a
        live feed's late ticks, a lease taken over: rows can come to a closed day without an import); a change
        forgets the days remembered empty. Another hub's commits to a shared archive do not move it: a day is
        remembered empty for EMPTY_TTL_S at most."""
        version = f"{version_of(self.version_root)}:{self.history.stats().committed}"
        if version != self._empty_version:
            self._empty.clear()
            self._empty_version = version
        return version

    async def file(self, dataset: str, day: date, fmt: str, version: str | None = None) -> FlatFile:
        """The day's file, made once (concurrent requests for one file wait for the one making it). A day found to
        have no rows keeps no file but is remembered at the data version (`version`: read by `version()` once by a
        caller asking for many days, else here), so it is not read again until an import moves the version."""
        at = self.version() if version is None else version  # read before the rows: a later import moves it
        key = (dataset, day, fmt)
        if self._empty_version == at and self._still_empty(key):  # no file: new rows move `at` (or the TTL passes)
            return self._empty[key][0]
        found = cached(self.root, dataset, day, fmt)
        if found is not None:
            return found
        lock = self._making.setdefault(key, asyncio.Lock())
        async with lock:
            found = cached(self.root, dataset, day, fmt)
            if found is not None:
                return found
            if self._empty_version == at and self._still_empty(key):
                return self._empty[key][0]
            if dataset == "candles-1d":
                rows = await self.daily.between(day, day)  # by day, then instrument
                if self.venue is not None:
                    ids = {inst for inst, _clock in self.by_id}
                    rows = [r for r in rows if r[0] in ids]
                made = await asyncio.to_thread(day_file, self.root, dataset, day, fmt, lambda: rows)
            else:
                made = await self.history.read(
                    lambda candles, archive: day_file(self.root, dataset, day, fmt,
                                                      lambda: self._rows(dataset, day, candles, archive)))
            if not made.rows:  # no file kept: rows may still come (an import), which moves the data version
                drop_days(self.root, dataset, day, day, new_rows=False)
                if self._empty_version == at:
                    self._empty[key] = (made, time.monotonic())
            return made

    def _still_empty(self, key: tuple[str, date, str]) -> bool:
        held = self._empty.get(key)
        return held is not None and time.monotonic() - held[1] < EMPTY_TTL_S

    def path(self, dataset: str, day: date, fmt: str) -> Path:
        return file_path(self.root, dataset, day, fmt)

    def _rows(self, dataset: str, day: date, candles: CandleStore, archive: TickArchive) -> Iterator[tuple]:
        """The day's rows of `ticks` or `candles-1m` (on a history reader thread), streamed."""
        windows = {id(c): self._window(c, day) for c in self.venues if c.is_trading_day(day)}
        if dataset == "ticks":
            for inst, clock in self.by_id:
                window = windows.get(id(clock))
                if window is not None:
                    trading_day = clock.trading_day
                    yield from (t for t in archive.read(inst, *window) if trading_day(t[1]) == day)
            return
        if not windows:
            return
        if self.venue is not None:
            yield from self._venue_minutes(day, windows, candles)
            return
        lo, hi = min(w[0] for w in windows.values()), max(w[1] for w in windows.values())
        days_of: dict[str, Callable[[int], date]] = {inst: clock.trading_day for inst, clock in self.by_id}
        for bar in candles.read_all("1m", lo, hi):
            of = days_of.get(bar[0])
            if of is not None and of(bar[1]) == day:
                yield bar

    def _venue_minutes(self, day: date, windows: Mapping[int, tuple[int, int]],
                       candles: CandleStore) -> Iterator[tuple]:
        """A venue's 1m bars of the day: each of its instruments' bars over its window, a page at a time."""
        for inst, clock in self.by_id:
            window = windows.get(id(clock))
            if window is None:
                continue
            start: int | None = window[0]
            while start is not None:
                page = candles.range("1m", inst, start, window[1], PAGE)
                yield from (bar for bar in page.rows if clock.trading_day(bar[1]) == day)
                start = page.next

    @staticmethod
    def _window(clock: VenueClock, day: date) -> tuple[int, int]:
        previous = clock.previous_trading_day(day) or day - timedelta(days=7)
        return clock.close_ms(previous) - MARGIN_MS, clock.close_ms(day) + MARGIN_MS

    def drop_before(self, dataset: str, floor: date) -> int:
        """Delete the dataset's files (and sidecars) of days before `floor`; the count of days dropped."""
        return drop_days(self.root, dataset, date.min, floor - timedelta(days=1), new_rows=False)


class FlatFileJob(HistoryRounds):
    """Makes the files of the newest closed trading days ahead of the first request (both formats), and drops the
    files the retention no longer keeps; a round at start and every `every_s` after, over every set of files
    (the all-venue files first, then each venue's, then each dedicated data source's: `sets` is iterated again
    each round, so a namespace's instruments declared since are in its next round)."""

    name = "flat files"

    def __init__(self, sets: Iterable[FlatFileDays], clock: Callable[[], float], every_s: float = 600.0,
                 back_days: int = 3) -> None:
        super().__init__(every_s)
        self.sets, self.clock, self.back_days = sets, clock, back_days

    async def round(self) -> int:
        """One round; the count of files made."""
        now_ms = int(self.clock() * 1000)
        today = local_date(now_ms / 1000)
        made = 0
        for days in self.sets:
            for dataset in DATASETS:
                days.drop_before(dataset, days.floor(dataset, now_ms))
                for day in days.days(dataset, today - timedelta(days=self.back_days), today, now_ms):
                    for fmt in FORMATS:
                        if cached(days.root, dataset, day, fmt) is None:
                            made += bool((await days.file(dataset, day, fmt)).rows)
        return made

