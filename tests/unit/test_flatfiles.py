"""Flat files (issue 31): CSV.gz and Parquet of a day, made once with sha256/bytes/rows, and byte ranges for
resumable downloads (Range parsing, 416 for unsatisfiable)."""

from __future__ import annotations

import asyncio
import csv
import gzip
import hashlib
import io
from datetime import date, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from server.market.timefmt import TZ
from server.market.venues.book import VenueBook
from server.store.flatfiles.byte_range import ByteRange, RangeNotSatisfiable, iter_file, parse_range
from server.store.flatfiles.days import FlatFileDays
from server.store.flatfiles.files import cached, data_version, day_file, day_rows, drop_days, file_path
from server.store.history.archive_sqlite import SqliteTickArchive
from server.store.history.candle_store import SqliteCandleStore
from server.store.history.retention import DEFAULT_DAYS
from server.store.history.threads import History

T0 = 1_790_000_040_000  # 2026-09-21T22:14:00+08:00
DAY = date(2026, 9, 22)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[SqliteTickArchive, SqliteCandleStore]:
    a, s = SqliteTickArchive(tmp_path / "data"), SqliteCandleStore(tmp_path / "data")
    a.append([("wti", T0 + k, k + 1, 70.25, 2.0) for k in range(3)] + [("brent", T0, 7, 80.5, 1.0)])
    s.put_closed("1m", [("brent", T0, 1.0, 2.0, 0.5, 1.5, 10.0)])
    s.put_closed("1d", [("brent", T0 - 14 * 3_600_000 - 840_000, 1.0, 2.0, 0.5, 1.5, 10.0)])  # 2026-09-21 00:00+8
    return a, s


def test_ticks_csv_gz(tmp_path: Path, stores: tuple[SqliteTickArchive, SqliteCandleStore]) -> None:
    a, s = stores
    root = tmp_path / "flat"
    info = day_file(root, "ticks", DAY, "csv.gz", lambda: day_rows("ticks", a, s, T0, T0 + 1000))
    path = file_path(root, "ticks", DAY, "csv.gz")
    body = path.read_bytes()
    assert info.bytes == len(body) and info.sha256 == hashlib.sha256(body).hexdigest() and info.rows == 4
    rows = list(csv.reader(io.StringIO(gzip.decompress(body).decode())))
    assert rows[0] == ["id", "ts", "seq", "price", "volume"]
    assert rows[1] == ["brent", "2026-09-21T22:14:00.000+08:00", "7", "80.5", "1.0"]
    assert rows[2][:3] == ["wti", "2026-09-21T22:14:00.000+08:00", "1"] and rows[4][1].endswith(":00.002+08:00")
    assert cached(root, "ticks", DAY, "csv.gz") == info
    assert day_file(root, "ticks", DAY, "csv.gz", lambda: iter(())) == info  # reused, not made again
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []


def test_candles_parquet_and_csv(tmp_path: Path, stores: tuple[SqliteTickArchive, SqliteCandleStore]) -> None:
    a, s = stores
    root = tmp_path / "flat"
    info = day_file(root, "candles-1m", DAY, "parquet", lambda: day_rows("candles-1m", a, s, T0, T0 + 60_000))
    table = pq.read_table(file_path(root, "candles-1m", DAY, "parquet"))
    assert info.rows == 1 and table.column_names == ["id", "t", "o", "h", "l", "c", "v"]
    assert table.column("t")[0].as_py().isoformat() == "2026-09-21T22:14:00+08:00"
    d = day_file(root, "candles-1d", DAY, "csv.gz", lambda: day_rows("candles-1d", a, s, 0, 2**62))
    text = gzip.decompress(file_path(root, "candles-1d", DAY, "csv.gz").read_bytes()).decode()
    assert d.rows == 1 and text.splitlines()[1] == "brent,2026-09-21,1.0,2.0,0.5,1.5,10.0"
    p = day_file(root, "candles-1d", DAY, "parquet", lambda: day_rows("candles-1d", a, s, 0, 2**62))
    assert pq.read_table(file_path(root, "candles-1d", DAY, "parquet")).column("t")[0].as_py() == date(2026, 9, 21)
    assert p.rows == 1
    empty = day_file(root, "ticks", date(2026, 9, 1), "parquet", lambda: iter(()))
    assert empty.rows == 0 and pq.read_table(file_path(root, "ticks", date(2026, 9, 1), "parquet")).num_rows == 0


def test_bad_dataset_or_format(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dataset"):
        day_file(tmp_path, "quotes", DAY, "csv.gz", lambda: iter(()))
    with pytest.raises(ValueError, match="format"):
        day_file(tmp_path, "ticks", DAY, "zip", lambda: iter(()))


def test_failed_production_leaves_nothing(tmp_path: Path) -> None:
    def broken() -> object:
        yield ("brent", T0, 1, 1.0, 1.0)
        raise OSError("disk gone")

    with pytest.raises(OSError):
        day_file(tmp_path, "ticks", DAY, "csv.gz", broken)  # type: ignore[arg-type]
    assert cached(tmp_path, "ticks", DAY, "csv.gz") is None
    assert list((tmp_path / "ticks").iterdir()) == []


@pytest.mark.parametrize(("header", "want"), [
    (None, None), ("", None), ("bytes=0-9", ByteRange(0, 9, 100)), ("bytes=90-", ByteRange(90, 99, 100)),
    ("bytes=-10", ByteRange(90, 99, 100)), ("bytes=-1000", ByteRange(0, 99, 100)),
    ("bytes=50-5000", ByteRange(50, 99, 100)), ("bytes = 5-5", ByteRange(5, 5, 100)),
    ("bytes=0-1,5-6", None), ("items=0-1", None), ("bytes=9-2", None), ("bytes=a-b", None), ("bytes=-", None),
    ("bytes=5", None), ("bytes=--5", None), ("bytes=\u00b2-3", None),  # a superscript digit is no digit
    ("bytes=0-" + "9" * 4301, ByteRange(0, 99, 100)), ("bytes=-" + "9" * 4301, ByteRange(0, 99, 100)),  # issue 45
    ("bytes=" + "0" * 4300 + "7-9", ByteRange(7, 9, 100)),
])
def test_parse_range(header: str | None, want: ByteRange | None) -> None:
    assert parse_range(header, 100) == want


@pytest.mark.parametrize(("header", "size"), [("bytes=100-", 100), ("bytes=100-200", 100), ("bytes=-0", 100),
                                              ("bytes=0-", 0), ("bytes=-5", 0), ("bytes=" + "9" * 4301 + "-", 100)])
def test_unsatisfiable(header: str, size: int) -> None:
    with pytest.raises(RangeNotSatisfiable) as info:
        parse_range(header, size)
    assert info.value.content_range == f"bytes */{size}" and f"for {size} bytes" in str(info.value)


def test_iter_file_chunks(tmp_path: Path) -> None:
    f = tmp_path / "f"
    body = bytes(range(256)) * 10
    f.write_bytes(body)
    assert b"".join(iter_file(f)) == body
    r = parse_range("bytes=100-1999", len(body))
    assert r is not None and r.content_range == "bytes 100-1999/2560" and r.length == 1900
    parts = list(iter_file(f, r.start, r.end, chunk=512))
    assert b"".join(parts) == body[100:2000] and max(map(len, parts)) == 512
    assert b"".join(iter_file(f, 2500)) == body[2500:]
    assert b"".join(iter_file(f, 0, 512, chunk=512)) == body[:513]  # one byte past a whole chunk


def test_csv_quotes_as_csv_writer_would(tmp_path: Path) -> None:
    rows = [('odd,"id', T0, 1, 1.5, 2.0), ("plain", T0 + 1, 2, 1e-07, 3.0)]
    info = day_file(tmp_path, "ticks", DAY, "csv.gz", lambda: iter(rows))
    text = gzip.decompress(file_path(tmp_path, "ticks", DAY, "csv.gz").read_bytes()).decode()
    expected = io.StringIO()
    w = csv.writer(expected, lineterminator="\n")
    w.writerow(["id", "ts", "seq", "price", "volume"])
    w.writerows([(r[0], "2026-09-21T22:14:00.000+08:00" if r[1] == T0 else "2026-09-21T22:14:00.001+08:00", *r[2:])
                 for r in rows])
    assert text == expected.getvalue() and info.rows == 2
    assert next(csv.reader(io.StringIO(text.splitlines()[1])))[0] == 'odd,"id'


def test_the_same_rows_make_the_same_bytes_wherever_they_are_made(tmp_path: Path,
                                                                  stores: tuple[SqliteTickArchive, SqliteCandleStore]
                                                                  ) -> None:
    """Two hubs (two roots, two temporary names, two processes) make byte-identical files of one history: the
    sha256 is the same ETag on every hub (no file name or time in the gzip header)."""
    a, s = stores
    made = [day_file(tmp_path / root, "ticks", DAY, fmt, lambda: day_rows("ticks", a, s, T0, T0 + 1000))
            for root in ("one", "two/deeper") for fmt in ("csv.gz", "parquet")]
    assert made[0].sha256 == made[2].sha256 and made[1].sha256 == made[3].sha256
    assert b".tmp" not in file_path(tmp_path / "one", "ticks", DAY, "csv.gz").read_bytes()


def test_a_listing_remembers_empty_days_until_an_import_moves_the_data_version(tmp_path: Path) -> None:
    """Issue 45: a day found to hold no rows is not read again at the same data version (a year of listings read
    every empty day on every call); an import moves the version (`drop_days`, as `ticks import` calls it), and the
    day is read again. Ticks appended to the archive without an import stay unseen: what shows it was remembered."""
    root = tmp_path / "data" / "flatfiles"
    history = History.sqlite(tmp_path / "data", interval_s=0.02)
    brent = VenueBook.load(None).for_instrument("brent")
    days = FlatFileDays(history, None, ["brent"], [brent], root, dict(DEFAULT_DAYS))  # type: ignore[arg-type]
    now_ms = int(datetime(2026, 11, 18, 14, 20, tzinfo=TZ).timestamp() * 1000)
    thursday = date(2026, 11, 12)
    tick = ("brent", int(datetime(2026, 11, 12, 16, 0, tzinfo=TZ).timestamp() * 1000), 1, 80.0, 1.0)

    async def rows() -> dict[date, int]:
        version = days.version()
        return {d: (await days.file("ticks", d, "csv.gz", version)).rows
                for d in days.days("ticks", date(2026, 11, 12), date(2026, 11, 17), now_ms)}

    # both ends included, the weekend (no venue of brent's trades) left out, and nothing not closed yet
    assert days.days("ticks", date(2026, 11, 13), date(2026, 11, 16), now_ms) == [date(2026, 11, 13),
                                                                                 date(2026, 11, 16)]
    assert days.days("ticks", date(2026, 11, 17), date(2026, 11, 25), now_ms) == [date(2026, 11, 17)]

    async def main() -> None:
        first = await rows()
        assert thursday in first and set(first.values()) == {0}
        history.write_blocking(lambda _c, archive: archive.append([tick]))
        assert (await rows())[thursday] == 0 and not list(root.glob("ticks/*.csv.gz"))
        assert (await days.file("ticks", thursday, "csv.gz")).rows == 0  # the version read by `file` itself
        version = data_version(root)
        assert drop_days(root, "ticks", thursday, thursday) == 0 and data_version(root) != version
        assert (await rows())[thursday] == 1
        assert drop_days(root, "ticks", date(2026, 1, 1), date(2026, 1, 2), new_rows=False) == 0
        assert (await rows())[thursday] == 1 and cached(root, "ticks", thursday, "csv.gz") is not None

    try:
        asyncio.run(main())
    finally:
        assert history.close()
