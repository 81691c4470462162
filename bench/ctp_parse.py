"""What a feed line costs to parse, in process: a CTP depth record (`ctp-jsonl`) against a jsonl line.

    taskset -c 1 .venv/bin/python -m bench.ctp_parse [--records N] [--repeat R]

Writes a realistic CTP file with tests/ctp_records.py (ZCE MA701, MA705, MA612 and DCE pp2701, pp2705 through a
night and a day session: running totals, empty sides as DBL_MAX), parses every record with the `ctp-jsonl` parser
(normalise, check, row) and the same ticks written as jsonl lines with the board's fields with the `jsonl` parser.
Prints microseconds of this process's CPU time per line, best of R repeats (a fresh parser each time, so the
running totals start from nothing), so other load on the machine only ever makes a figure worse.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import orjson

from server.feeds.ctp import CtpNormaliser
from server.feeds.ctp_lines import CtpParser
from server.feeds.jsonl import JsonlParser
from server.market.catalogue import Catalogue, default_catalogue
from server.market.contracts.listing import ContractBook
from server.market.contracts.rows import with_contracts
from server.market.contracts.specs import PRODUCTS
from server.market.venues.book import VenueBook
from tests.ctp_records import session_file

CODES = ["MA701", "MA705", "MA612", "pp2701", "pp2705"]
NOW = datetime.fromisoformat("2026-11-25T15:03:00+08:00").timestamp()


def _best(parse: Callable[[], object], lines: list[bytes], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        parse()
        best = min(best, time.process_time() - started)
    return best / len(lines) * 1e6


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--records", type=int, default=4000, help="records per contract (one a second)")
    args.add_argument("--repeat", type=int, default=5)
    opts = args.parse_args()
    venues = VenueBook.load()
    catalogue: Catalogue = with_contracts(default_catalogue(), PRODUCTS, venues, NOW)
    book = ContractBook(PRODUCTS, venues.calendars)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "depth.jsonl"
        session_file(path, CODES, [("2026-11-25", "2026-11-24T21:00:00+08:00", "2026-11-25T09:00:00+08:00",
                                    opts.records)])
        ctp_lines = path.read_bytes().splitlines()

    def ctp() -> list:
        parser = CtpParser(CtpNormaliser(PRODUCTS, book, venues.clock), catalogue.index)
        return [parser.parse(line, NOW) for line in ctp_lines]

    ticks = [t for t in ctp() if t is not None]
    assert len(ticks) == len(ctp_lines), "every generated record is a tick"
    jsonl_lines = [orjson.dumps({"id": catalogue.instruments[t.row].id, "price": t.price, "ts": t.ts,
                                 "volume": t.volume, "bid": t.detail.bid if t.detail else None,
                                 "ask": t.detail.ask if t.detail else None, "oi": t.detail.oi if t.detail else None,
                                 "turnover": t.detail.turnover if t.detail else None}) for t in ticks]

    def jsonl() -> list:
        parser = JsonlParser(catalogue)
        return [parser.parse(line, NOW) for line in jsonl_lines]

    print(f"{len(ctp_lines)} lines, best of {opts.repeat}, us of CPU per line")
    print(f"ctp-jsonl record (normalise, check, row): {_best(ctp, ctp_lines, opts.repeat):.1f}")
    print(f"jsonl line with the board's fields:       {_best(jsonl, jsonl_lines, opts.repeat):.1f}")


if __name__ == "__main__":
    main()
