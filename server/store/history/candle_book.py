"""A live feed's daily candles and storage: the book loaded at start, the closed days written as the day rolls.

The demo feed keeps nothing (its history is synthetic); a JSON-lines feed's candles outlive the process: the
root loads the last `HISTORY_DAYS` trading days into the market state's `CandleBook` at start, and a
`CandleKeeper` listens to the applied ticks, upserts the candles this process traded once the live day has
rolled (off the loop: the storage's writer), and all of them, today's included, at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import date

import numpy as np

from server.core.background import log_round_failure
from server.market.candles.daily import CandleBook, ticked_candles
from server.market.candles.trading_axis import TradingAxis, axis_columns, axis_days_back
from server.market.catalogue import Catalogue
from server.market.state import AppliedTick
from server.store.history.archive_keeper import ArchiveKeeper
from server.store.history.candle_rows import Candle, Settlement
from server.store.sql.db import storage_errors
from server.store.sql.repositories import Candles

log = logging.getLogger("market.feed")

HISTORY_DAYS = 90


def load_candle_book(catalogue: Catalogue, repo: Candles, axis: TradingAxis, today: date) -> CandleBook:
    """The last 90 days of the trading axis from storage; a trading day without a stored candle is unopened at the
    previous close; a stored candle on a day its venue is shut is not loaded (never shown: SPEC 16). A futures
    candle's open interest and settlement come back with it (SPEC 19: `settlements_1d`), so the live day's
    `prevSettle`, `change` and limits are what they were before the restart."""
    days = axis_days_back(axis, today, axis_columns(HISTORY_DAYS))
    n = len(catalogue.instruments)
    grid = np.full((7, n, len(days)), np.nan)  # o, h, l, c, v, oi, s
    col = {d: i for i, d in enumerate(days)}
    for inst_id, day, o, h, lo, c, v in repo.since_blocking(days[0]):  # start-up: before the server accepts
        row = catalogue.index.get(inst_id)
        if row is not None and day in col and axis.open_rows(day)[row]:
            grid[:5, row, col[day]] = (o, h, lo, c, v)
    for inst_id, day, oi, settle in repo.settlements_since_blocking(days[0]):
        row = catalogue.index.get(inst_id)
        if row is not None and day in col and not np.isnan(grid[3, row, col[day]]):  # a settlement of a candle held
            grid[5:, row, col[day]] = (np.nan if oi is None else oi, np.nan if settle is None else settle)
    _carry_close(grid)
    book = CandleBook(n, axis_columns(HISTORY_DAYS), axis)
    book.load_history(days, grid[0], grid[1], grid[2], grid[3], grid[4], grid[5], grid[6])
    return book


def _carry_close(grid: np.ndarray) -> None:
    """A day without a stored candle carries the previous close (open/high/low stay NaN, volume 0).

    The candle book reads such a day as flat at that close; it is never written back to storage.
    """
    for j in range(1, grid.shape[2]):
        missing = np.isnan(grid[3, :, j])
        grid[3, missing, j] = grid[3, missing, j - 1]
    grid[4] = np.nan_to_num(grid[4])


def export_candles(catalogue: Catalogue, book: CandleBook) -> tuple[list[Candle], list[Settlement]]:
    """The candles this process applied ticks to (never a flat fill over an imported candle), and of those of
    futures products their open interest and settlement (SPEC 19; NaN: not known yet)."""
    ids = [inst.id for inst in catalogue.instruments]
    candles: list[Candle] = []
    settlements: list[Settlement] = []
    column = {int(book.days[col]): col for col in book.order().tolist()}
    for row, day, (o, h, lo, c, v) in ticked_candles(book):
        candles.append((ids[row], day, o, h, lo, c, v))
        if book.futures[row]:
            col = column[day.toordinal()]
            settlements.append((ids[row], day, float(book.oi[row, col]), float(book.s[row, col])))
    return candles, settlements


class CandleKeeper:
    """Writes a live feed's traded candles: after each roll-over of the live day, and at shutdown."""

    def __init__(self, catalogue: Catalogue, book: CandleBook, repo: Candles,
                 archive: ArchiveKeeper | None = None) -> None:
        """`archive`: the durable tick archive (SPEC 18) the same ticks go to (None: not kept)."""
        self.catalogue = catalogue
        self.book = book
        self.archive = archive
        self.repo = repo
        self._persisted_day = book.last_day()
        self._persisted_days = book.row_day.copy()  # each row's trading day when the candles were last written
        self._writing: asyncio.Task[None] | None = None

    def on_ticks(self, applied: list[AppliedTick]) -> None:
        """An applied-ticks listener: the ticks to the archive's buffer; a row's live day moved on since the last
        write (its venue's day closed: its candle complete, a futures product's settlement known) -> write (one
        write at a time)."""
        if self.archive is not None:
            self.archive.on_ticks(applied)
        book = self.book
        if self._writing is None and (book.last_day() != self._persisted_day
                                      or not np.array_equal(book.row_day, self._persisted_days)):
            self._persisted_day, self._persisted_days = book.last_day(), book.row_day.copy()
            self._writing = asyncio.get_running_loop().create_task(self._write(), name="candle-keeper")

    def on_lead(self, leading: bool) -> None:
        """The feed's lease came to this hub or left it (the tick path's lead listener): the archive's concern."""
        if self.archive is not None:
            self.archive.on_lead(leading)

    async def _write(self) -> None:
        try:
            await self.repo.upsert(*export_candles(self.catalogue, self.book))
            if self.archive is not None:
                await self.archive.store_closed()
        except storage_errors() as exc:  # the next roll-over or the final flush retries
            log_round_failure(log, "persisting closed candles", exc)
        finally:
            self._writing = None

    def flush(self) -> None:
        """Every traded candle, today's included, and every archived tick committed (at shutdown, once the loop's
        work has stopped)."""
        try:
            self.repo.upsert_blocking(*export_candles(self.catalogue, self.book))
            if self.archive is not None:
                self.archive.store_closed_blocking()
        finally:
            if self.archive is not None:
                self.archive.close()
