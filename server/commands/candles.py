"""`candles import CSV`: daily candles `id,t,o,h,l,c,v` for a live (non-demo) feed."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import date
from typing import Any

from server.commands.common import CommandError, command, db
from server.market.catalogue import default_catalogue
from server.market.venue_book import VenueBook
from server.store.candle_rows import Candle

# Imported candles show nowhere under the demo feed, which makes its own history: the operator is told,
# on every import, which feed uses them and when (a server that is running loads them at its next start).
IMPORT_NOTE = ("note: imported candles are used only by a live feed (serve --feed jsonl:PATH or jsonl:-), "
               "which loads them when it starts; the demo feed ignores them")


def register(sub: Any) -> None:
    c = sub.add_parser("candles", help="daily candles").add_subparsers(dest="candles_cmd", required=True)
    imp = command(c, "import", "import daily candles from CSV (id,t,o,h,l,c,v)", _import)
    imp.add_argument("csv")
    imp.add_argument("--calendar-file", help="exchange notices beyond the repository's (as serve takes)")


def _import(ns: argparse.Namespace) -> int:
    known = default_catalogue().index
    try:
        venues = VenueBook.load(ns.calendar_file)
    except (OSError, ValueError) as exc:
        raise CommandError(f"--calendar-file: {exc}") from None
    candles: list[Candle] = []
    errors: list[str] = []
    try:
        with open(ns.csv, newline="", encoding="utf-8") as fh:
            for lineno, row in enumerate(csv.reader(fh), 1):
                if lineno == 1 and row and row[0].strip().lower() == "id":
                    continue
                try:
                    candles.append(_parse(row, known, venues))
                except ValueError as exc:
                    errors.append(f"line {lineno}: {exc}")
    except OSError as exc:
        raise CommandError(f"cannot read {ns.csv}: {exc.strerror}") from None
    if errors:
        raise CommandError("nothing imported:\n  " + "\n  ".join(errors[:20]))
    db(ns).candles.upsert(candles)
    print(f"imported {len(candles)} candles")
    print(IMPORT_NOTE, file=sys.stderr)
    return 0


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
