"""Flat files per venue (issue 39 item 9, SPEC 18): a venue's files exist from its own close plus two minutes on
its own trading days, hold its instruments only (chosen by the catalogue's venue, so a contract id the venue
tables do not know is in them), and each row is the one the all-venue file holds; the job makes them ahead; an
import deletes them with the all-venue files. Real SQLite history, no server (tests/contract/
test_flatfile_venues.py serves them)."""

from __future__ import annotations

import asyncio
import csv
import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from server.market.catalogue import declared_instrument, default_catalogue, with_slots
from server.market.timefmt import TZ
from server.market.venues.book import VenueBook
from server.store.flatfiles.days import SETTLE_MS, FlatFileJob
from server.store.flatfiles.files import cached
from server.store.flatfiles.scopes import FlatFileSets, drop_days_everywhere, venue_root
from server.store.history.archive_sqlite import SqliteTickArchive
from server.store.history.candle_store import SqliteCandleStore
from server.store.history.threads import History
from server.store.sql.sqlite_repos import SqliteCandles
from server.store.sql.storage import SqliteStorage

BOOK = VenueBook()
CONTRACT = "methanol-202605"  # not in the venue tables: a contract another part of the catalogue lists at zce
IDS = ["brent", "methanol", CONTRACT, "pp", "urea"]
VENUE = {"brent": "ice-eu", "methanol": "zce", CONTRACT: "zce", "pp": "dce", "urea": "zce"}
CLOCKS = [BOOK.clock("zce") if i == CONTRACT else BOOK.for_instrument(i) for i in IDS]
RETENTION = {"ticks": 30, "1m": 365, "1d": 1825}
TUE, WED = date(2026, 11, 17), date(2026, 11, 18)


def _ms(day: int, hh: int, mm: int, ss: int = 0, zone: ZoneInfo = TZ) -> int:
    return int(datetime(2026, 11, day, hh, mm, ss, tzinfo=zone).timestamp() * 1000)


TICKS = [  # (id, ts, seq, price, volume)
    ("methanol", _ms(16, 21, 30), 1, 2400.0, 3.0),  # Monday night: Tuesday's
    ("methanol", _ms(17, 10, 0), 2, 2401.5, 1.0),
    ("urea", _ms(17, 10, 5), 1, 1800.0, 2.0),  # a day-session-only product of zce
    ("methanol", _ms(17, 21, 30), 3, 2403.0, 1.0),  # Tuesday night: Wednesday's
    ("methanol", _ms(18, 10, 0), 4, 2404.0, 1.0),
    (CONTRACT, _ms(18, 10, 1), 1, 2410.0, 4.0),
    ("urea", _ms(18, 9, 30), 2, 1801.0, 1.0),
    ("pp", _ms(17, 10, 0), 1, 7000.0, 1.0),
    ("pp", _ms(18, 10, 0), 2, 7001.0, 1.0),
    ("brent", _ms(17, 16, 0), 1, 80.25, 5.0),  # 08:00 London: Tuesday's
    ("brent", _ms(18, 14, 0), 2, 80.5, 1.0),  # 06:00 London: Wednesday's
]
BARS = [(i, ts - ts % 60_000, p, p, p, p, v) for i, ts, _s, p, v in TICKS]
DAILY = [("brent", TUE, 80.0, 81.0, 79.0, 80.5, 6.0), ("methanol", TUE, 2400.0, 2402.0, 2399.0, 2401.5, 4.0),
         ("pp", TUE, 7000.0, 7000.0, 7000.0, 7000.0, 1.0), ("urea", TUE, 1800.0, 1800.0, 1800.0, 1800.0, 2.0)]


@dataclass
class Held:
    sets: FlatFileSets
    history: History
    root: Path


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Held]:
    archive, store = SqliteTickArchive(tmp_path), SqliteCandleStore(tmp_path)
    archive.append(TICKS)
    store.put_closed("1m", BARS)
    archive.close()
    store.close()
    storage = SqliteStorage(tmp_path)
    daily = SqliteCandles(storage)
    asyncio.run(daily.upsert(DAILY))
    history = History.sqlite(tmp_path)
    root = tmp_path / "flatfiles"
    sets = FlatFileSets.build(history, daily, IDS, [VENUE[i] for i in IDS], CLOCKS, BOOK.venues, root, RETENTION)
    yield Held(sets, history, root)
    history.close()
    storage.close()


def _rows(held: Held, venue: str | None, dataset: str, day: date) -> list[list[str]]:
    days = held.sets.all if venue is None else held.sets.venues[venue]
    info = asyncio.run(days.file(dataset, day, "csv.gz"))
    text = gzip.decompress(days.path(dataset, day, "csv.gz").read_bytes()).decode()
    rows = list(csv.reader(io.StringIO(text)))[1:]
    assert info.rows == len(rows)
    return rows


def test_each_venue_has_its_own_close_plus_two_minutes(held: Held) -> None:
    zce, ice, every = held.sets.venues["zce"], held.sets.venues["ice-eu"], held.sets.all
    zce_close = _ms(18, 15, 0)  # Wednesday 15:00 Shanghai; its files from 15:02
    assert zce.closes_at(WED) == zce_close + SETTLE_MS == _ms(18, 15, 2)
    assert not zce.available("ticks", WED, _ms(18, 15, 2) - 1) and zce.available("ticks", WED, _ms(18, 15, 2))
    london = ZoneInfo("Europe/London")
    ice_from = _ms(18, 23, 2, zone=london)  # 07:02 Thursday in Shanghai
    assert not ice.available("ticks", WED, ice_from - 1) and ice.available("ticks", WED, ice_from)
    assert every.closes_at(WED) == ice_from  # the all-venue day waits for the last venue, as before
    assert zce.days("ticks", date(2026, 11, 14), WED, _ms(18, 15, 3)) == [date(2026, 11, 16), TUE, WED]
    assert every.days("ticks", date(2026, 11, 14), WED, _ms(18, 15, 3)) == [date(2026, 11, 16), TUE]
    assert not zce.available("ticks", date(2026, 11, 15), _ms(18, 15, 3))  # a Sunday: no zce trading day
    assert held.sets.venues["saudi-cp"].closes_at(WED) is None  # not a day it publishes


def test_a_venues_file_holds_its_instruments_only(held: Held) -> None:
    wed = _rows(held, "zce", "ticks", WED)
    assert [(r[0], r[1]) for r in wed] == [
        ("methanol", "2026-11-17T21:30:00.000+08:00"), ("methanol", "2026-11-18T10:00:00.000+08:00"),
        (CONTRACT, "2026-11-18T10:01:00.000+08:00"), ("urea", "2026-11-18T09:30:00.000+08:00")]
    assert {r[0] for r in _rows(held, "dce", "ticks", WED)} == {"pp"}
    assert [r[0] for r in _rows(held, "zce", "candles-1m", WED)] == ["methanol", "methanol", CONTRACT, "urea"]


@pytest.mark.parametrize("dataset", ["ticks", "candles-1m", "candles-1d"])
def test_a_venues_rows_are_the_all_venue_files_rows(held: Held, dataset: str) -> None:
    every = _rows(held, None, dataset, TUE)
    assert {r[0] for r in every} == {"brent", "methanol", "pp", "urea"}
    for venue in ("zce", "dce", "ice-eu"):
        assert _rows(held, venue, dataset, TUE) == [r for r in every if VENUE[r[0]] == venue], venue


def test_the_job_makes_each_venues_files_and_an_import_drops_them(held: Held) -> None:
    job = FlatFileJob(list(held.sets), lambda: _ms(18, 15, 3) / 1000, back_days=1)
    made = asyncio.run(job.round())
    zce = venue_root(held.root, "zce")
    for day in (TUE, WED):
        for fmt in ("csv.gz", "parquet"):
            assert cached(zce, "ticks", day, fmt) is not None, (day, fmt)
    assert cached(held.root, "ticks", WED, "csv.gz") is None  # the all-venue Wednesday is not closed
    assert cached(venue_root(held.root, "ice-eu"), "ticks", WED, "csv.gz") is None
    # with rows, in 2 formats: all-venue Tuesday's 3 datasets; zce's and dce's Tuesday 3, Wednesday 2 (no daily
    # candle stored yet); ice-eu's Tuesday 3
    assert made == 2 * (3 + 5 + 5 + 3)
    assert asyncio.run(job.round()) == 0  # made once
    assert drop_days_everywhere(held.root, "ticks", WED, WED) == 1
    assert cached(zce, "ticks", WED, "csv.gz") is None and cached(zce, "ticks", TUE, "csv.gz") is not None


def test_the_job_makes_each_sources_files_and_sweeps_a_namespace_without_instruments(tmp_path: Path) -> None:
    """SPEC 20: a namespace's declared instruments (a reserved row bound to `acme.blend` at zce) have their own set in
    the job's round, made ahead like a venue's; a namespace none of whose instruments is declared any more keeps no
    set of days but its files past the retention are deleted all the same."""
    archive = SqliteTickArchive(tmp_path)
    archive.append([("acme.blend", _ms(17, 10, 0), 1, 80.5, 2.0)])
    archive.close()
    storage = SqliteStorage(tmp_path)
    history = History.sqlite(tmp_path)
    cat = with_slots(default_catalogue(), 1)
    cat.bind(cat.custom_from, declared_instrument("acme.blend", "usr_acme", {"zh": "x", "en": "x"},
                                                   {"zh": "x", "en": "x"}, "USD", 2, "zce", "", "continuous"))
    root = tmp_path / "flatfiles"
    sets = FlatFileSets.build(history, SqliteCandles(storage), IDS, [VENUE[i] for i in IDS], CLOCKS, BOOK.venues,
                              root, RETENTION, (cat, BOOK))
    old = root / "sources" / "gone" / "ticks"
    old.mkdir(parents=True)
    for name in ("2026-10-01.csv.gz", "2026-10-01.csv.gz.json", "2026-11-17.csv.gz"):
        (old / name).write_text("x")
    try:
        asyncio.run(FlatFileJob(sets, lambda: _ms(18, 15, 3) / 1000, back_days=1).round())
        acme = root / "sources" / "acme"
        assert cached(acme, "ticks", TUE, "csv.gz") is not None and cached(acme, "ticks", TUE, "parquet") is not None
        assert cached(root, "ticks", TUE, "csv.gz") is None  # the shared files never hold it
        assert sorted(p.name for p in old.iterdir()) == ["2026-11-17.csv.gz"]  # past the 30 days: deleted
        assert drop_days_everywhere(root, "ticks", TUE, TUE) == 1 and cached(acme, "ticks", TUE, "csv.gz") is None
    finally:
        history.close()
        storage.close()
