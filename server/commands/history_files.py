"""Backfill for the commands (SPEC 18): the history's own connections in this process, and the import report.

`candles import --interval 1m|5m|15m|1h` writes the candle store and `ticks import` the tick archive, through
server/store/history/backfill.py: chunked transactions on the history's own file (SQLite, beside the hub's database,
WAL: a running hub keeps reading and writing) or PostgreSQL tables, so a live hub is never frozen. Bad rows
are counted and named, good rows are kept; the exit status is 1 when any row was bad.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from server.commands.common import CommandError
from server.market.timefmt import local_date
from server.store.flatfiles.scopes import drop_days_everywhere
from server.store.history.archive import TickArchive
from server.store.history.backfill import ImportReport
from server.store.history.candle_store import CandleStore

T = TypeVar("T")


def with_history(ns: argparse.Namespace, fn: Callable[[CandleStore, TickArchive], T]) -> T:
    """`fn(candles, archive)` on the history of --database-url, or of --data-dir."""
    url = getattr(ns, "database_url", None)
    if url:
        from server.store.history.archive_pg import PgCandleStore, PgTickArchive

        candles: CandleStore = PgCandleStore(url)
        archive: TickArchive = PgTickArchive(url)
    else:
        from server.store.history.archive_sqlite import SqliteTickArchive
        from server.store.history.candle_store import SqliteCandleStore

        candles, archive = SqliteCandleStore(Path(ns.data_dir)), SqliteTickArchive(Path(ns.data_dir))
    try:
        return fn(candles, archive)
    except OSError as exc:
        raise CommandError(f"cannot read {exc.filename}: {exc.strerror}") from None
    finally:
        candles.close()
        archive.close()


def report(what: str, result: ImportReport, data_dir: Path | None = None, dataset: str | None = None) -> int:
    """Print the import's outcome; 1 when any row was bad (the good ones are imported all the same). With
    `dataset`, the data dir's flat files of the days the rows touched, all-venue and each venue's, are deleted
    (made again when asked for)."""
    print(f"imported {result.rows} {what}")
    if data_dir is not None and dataset is not None and result.first_ms is not None and result.last_ms is not None:
        # a row's trading day is its local date's, the day before (a US evening) or the one after (a night session)
        first = local_date(result.first_ms / 1000) - timedelta(days=1)
        last = local_date(result.last_ms / 1000) + timedelta(days=2)
        dropped = drop_days_everywhere(data_dir / "flatfiles", dataset, first, last)
        if dropped:
            print(f"{dataset} flat files of {dropped} days deleted: made again from the new rows when asked for")
    if result.bad:
        more = result.bad - len(result.errors)
        print(f"{result.bad} bad rows skipped (the others were imported):\n  " + "\n  ".join(result.errors)
              + (f"\n  ... and {more} more" if more > 0 else ""), file=sys.stderr)
        return 1
    return 0
