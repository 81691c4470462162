"""`candles import CSV [--interval I]`: candles `id,t,o,h,l,c,v` for a live (non-demo) feed; `ticks import FILE`.

Daily candles (the default, `--interval 1d`) go where the hub loads its daily book from; a row on a day its
instrument's venue does not trade is a bad row (SPEC 16). Intraday ones (`1m`, `5m`, `15m`, `1h`) go to the
candle store of the durable history (SPEC 18), which a live hub loads its rings from at its next start; ticks go
to its tick archive. Bad rows are counted and named, good rows kept; exit status 1 when any row was bad."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from server.commands.common import CommandError, command, db
from server.commands.console_db import with_console
from server.commands.history_files import report, with_history
from server.config import add_history_args, history_settings, settings_clock
from server.market.catalogue import default_catalogue
from server.market.timefmt import TZ
from server.market.venues.book import VenueBook
from server.store.history.backfill import MAX_NAMED, ImportReport, TimeWindow, import_candles, import_ticks
from server.store.history.candle_rows import Candle
from server.store.history.retention import DEFAULT_DAYS, Retention
from server.store.sources.repo import SourcesRepo

# Imported candles show nowhere under the demo feed, which makes its own history: the operator is told,
# on every import, which feed uses them and when (a server that is running loads them at its next start).
IMPORT_NOTE = ("note: imported candles are used only by a live feed (serve --feed jsonl:PATH or jsonl:-), "
               "which loads them when it starts; the demo feed ignores them")


def register(sub: Any) -> None:
    c = sub.add_parser("candles", help="candles (daily, or intraday with --interval)")
    c = c.add_subparsers(dest="candles_cmd", required=True)
    imp = command(c, "import", "import candles from CSV (id,t,o,h,l,c,v), daily or --interval", _import)
    imp.add_argument("csv")
    imp.add_argument("--interval", default="1d", choices=["1m", "5m", "15m", "1h", "1d"],
                     help="the candles' interval (default 1d); t: epoch ms, ISO 8601 with offset, or a date")
    imp.add_argument("--calendar-file", help="exchange notices beyond the repository's (as serve takes)")
    add_history_args(imp)  # a row the hub's retention would delete is refused (give it serve's --retention)
    t = sub.add_parser("ticks", help="ticks of the durable history").add_subparsers(dest="ticks_cmd", required=True)
    ticks = command(t, "import", "import ticks (JSONL {id,ts,seq,price,volume} as the feed takes them, seq and "
                    "volume optional, or CSV id,ts,seq,price,volume; ts in epoch seconds as the feed's, or ISO 8601)",
                    _import_ticks)
    ticks.add_argument("file", help="JSONL or CSV, optionally .gz")
    add_history_args(ticks)  # a row the hub's retention would delete is refused: give it serve's --retention


def _import(ns: argparse.Namespace) -> int:
    known = default_catalogue().index
    if ns.interval != "1d":
        path = Path(ns.csv)
        window = _window(ns, ns.interval)
        ids = known_ids(ns)
        done = with_history(ns, lambda candles, _a: import_candles(candles, ns.interval, path, ids, window=window))
        return report("candles", done, Path(ns.data_dir), "candles-1m" if ns.interval == "1m" else None)
    try:
        venues = VenueBook.load(ns.calendar_file)
    except (OSError, ValueError) as exc:
        raise CommandError(f"--calendar-file: {exc}") from None
    candles: list[Candle] = []
    errors: list[str] = []
    window = _window(ns, "1d")
    try:
        with open(ns.csv, newline="", encoding="utf-8") as fh:
            for lineno, row in enumerate(csv.reader(fh), 1):
                if lineno == 1 and row and row[0].strip().lower() == "id":
                    continue
                try:
                    candle = _parse(row, known, venues)
                    window.check(int(datetime.combine(candle[1], time(0), TZ).timestamp() * 1000), "t")
                    candles.append(candle)
                except ValueError as exc:
                    errors.append(f"line {lineno}: {exc}")
    except OSError as exc:
        raise CommandError(f"cannot read {ns.csv}: {exc.strerror}") from None
    if candles:
        db(ns).candles.upsert(candles)
    print(IMPORT_NOTE, file=sys.stderr)
    result = ImportReport(len(candles), len(errors), errors[:MAX_NAMED])
    if candles:  # the daily flat files' span: the candles' own days
        days = [c[1] for c in candles]
        result.first_ms = int(datetime.combine(min(days), time(12), TZ).timestamp() * 1000)
        result.last_ms = int(datetime.combine(max(days), time(12), TZ).timestamp() * 1000)
    return report("candles", result, Path(ns.data_dir), "candles-1d")


def known_ids(ns: argparse.Namespace) -> set[str]:
    """The ids an intraday import takes: the catalogue's and the dedicated data sources' declared instruments (SPEC
    20: their history is backfilled as ours; their own flat files of the days touched are dropped with the rest)."""
    declared = with_console(ns, lambda r: SourcesRepo(r.db).bound())
    return set(default_catalogue().index) | {d.id for d in declared}


def _import_ticks(ns: argparse.Namespace) -> int:
    known = known_ids(ns)
    path = Path(ns.file)
    window = _window(ns, "ticks")
    return report("ticks", with_history(ns, lambda _c, archive: import_ticks(archive, path, known, window)),
                  Path(ns.data_dir), "ticks")


def _window(ns: argparse.Namespace, kind: str) -> TimeWindow:
    """The times a row of `kind` may have: what the retention keeps, up to the clock (SPEC 10's five minutes)."""
    settings = history_settings(ns)
    now = settings_clock(settings)()
    return TimeWindow(now, Retention({**DEFAULT_DAYS, **settings.retention}).cutoff_ms(kind, now))


def _parse(row: list[str], known: dict[str, int], venues: VenueBook) -> Candle:
    if len(row) != 7:
        raise ValueError(f"expected 7 columns, got {len(row)}")
    inst = row[0].strip()
    if inst not in known:
        raise ValueError(f"unknown instrument {inst!r}")
    day = date.fromisoformat(row[1].strip())
    clock = venues.for_instrument(inst)
    if not clock.is_trading_day(day):  # SPEC 16: one candle per trading day of the instrument's venue
        raise ValueError(f"{day} is not a trading day of {clock.venue.id} ({inst})")
    o, h, lo, c, v = (float(x) for x in row[2:])
    if not (lo <= min(o, c) and h >= max(o, c) and lo > 0 and v >= 0):
        raise ValueError("prices must satisfy 0 < l <= o,c <= h and v >= 0")
    return (inst, day, o, h, lo, c, v)
