"""Pure and SQLite parts of issue 31's history: candles rebuilt from ticks, retention, backfill parsing with
bad rows named and good rows kept."""

from __future__ import annotations

import gzip
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from server.store.history.archive import Tick
from server.store.history.archive_sqlite import SqliteTickArchive
from server.store.history.backfill import MAX_NAMED, TimeWindow, import_candles, import_ticks, parse_instant, tick_ts
from server.store.history.candle_rebuild import closed_rows, rebuild_candles, rebuild_from_archive
from server.store.history.candle_store import SqliteCandleStore
from server.store.history.retention import DAY_MS, Retention, earliest_all, prune

T0 = 1_790_000_040_000  # 2026-09-21 14:14:00 UTC (a 1m bucket start)
WIDTH = {"1m": 60_000, "5m": 300_000, "15m": 900_000, "1h": 3_600_000, "1d": DAY_MS}
KNOWN = {"brent", "wti"}


def bucket_start(interval: str, ts: int) -> int:
    return ts - ts % WIDTH[interval]


def trading_day(ts: int) -> date:
    return datetime.fromtimestamp(ts / 1000, UTC).date()


def width_ms(interval: str, t: int) -> int:
    return WIDTH[interval]


def test_rebuild_ohlcv_per_bucket() -> None:
    ticks: list[Tick] = [("brent", T0, 1, 10.0, 1.0), ("wti", T0 + 1, 1, 5.0, 2.0),
                         ("brent", T0 + 30_000, 2, 12.0, 1.0), ("brent", T0 + 59_999, 3, 9.0, 1.0),
                         ("brent", T0 + 60_000, 4, 11.0, 3.0)]
    out = rebuild_candles(ticks, bucket_start, trading_day)
    m1 = out["1m"]
    assert m1[("brent", T0)].row() == ("brent", T0, 10.0, 12.0, 9.0, 9.0, 3.0) and m1[("brent", T0)].seq == 3
    assert m1[("brent", T0 + 60_000)].row() == ("brent", T0 + 60_000, 11.0, 11.0, 11.0, 11.0, 3.0)
    d = out["1d"][("brent", bucket_start("1d", T0))]
    assert (d.o, d.h, d.l, d.c, d.v, d.seq, d.day) == (10.0, 12.0, 9.0, 11.0, 6.0, 4, trading_day(T0))
    assert out["1h"][("wti", bucket_start("1h", T0))].v == 2.0
    assert closed_rows(out, "1m", T0 + 60_000, width_ms) == [m1[("brent", T0)].row(), m1[("wti", T0)].row()]
    assert rebuild_candles([], bucket_start, trading_day) == {i: {} for i in WIDTH}


def test_rebuild_from_archive_matches_pure(tmp_path: Path) -> None:
    a = SqliteTickArchive(tmp_path)
    ticks = [("brent", T0 + k * 7_000, k + 1, 80.0 + (k % 5), 1.0) for k in range(100)]
    a.append(ticks)
    assert rebuild_from_archive(a, T0, T0 + 10**9, bucket_start, trading_day) == \
        rebuild_candles(ticks, bucket_start, trading_day)
    since = rebuild_from_archive(a, T0 + 350_000, T0 + 10**9, bucket_start, trading_day, ("1m",))
    assert min(t for _, t in since["1m"]) == bucket_start("1m", T0 + 350_000)
    a.close()


def test_retention(tmp_path: Path) -> None:
    a, s = SqliteTickArchive(tmp_path), SqliteCandleStore(tmp_path)
    now = T0 / 1000
    a.append([("brent", T0 - 40 * DAY_MS, 1, 1.0, 1.0), ("brent", T0 - DAY_MS, 2, 1.0, 1.0)])
    s.put_closed("1m", [("brent", T0 - 400 * DAY_MS, 1, 1, 1, 1, 1), ("brent", T0 - 300 * DAY_MS, 1, 1, 1, 1, 1)])
    s.put_closed("1d", [("brent", T0 - 400 * DAY_MS, 1, 1, 1, 1, 1)])
    assert prune(a, s, now) == {"ticks": 1, "1m": 1, "5m": 0, "15m": 0, "1h": 0, "1d": 0}
    e = earliest_all(a, s, "brent")
    assert e["ticks"] == T0 - DAY_MS and e["1m"] == T0 - 300 * DAY_MS and e["5m"] is None
    forever = Retention({"ticks": 0, "1m": 1})
    assert prune(a, s, now, forever)["1m"] == 1 and "ticks" not in prune(a, s, now, forever)
    with pytest.raises(ValueError, match="unknown kind"):
        Retention({"2m": 3})
    with pytest.raises(ValueError, match=">= 0"):
        Retention({"ticks": -1})
    a.close()
    s.close()


def test_parse_instant() -> None:
    assert parse_instant("1790000040000") == T0 == parse_instant(T0)
    assert parse_instant("2026-09-21T22:14:00+08:00") == T0
    assert parse_instant("2026-09-22", dates=True) == parse_instant("2026-09-22T00:00:00+08:00")
    for bad in ("2026-09-21T20:54:00", "yesterday", True, float("nan")):
        with pytest.raises(ValueError):
            parse_instant(bad)  # type: ignore[arg-type]


def test_import_ticks_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"id":"brent","ts":1790000040,"seq":1,"price":80.5,"volume":2}\n'
                     '\n'
                     '{"id":"brent","ts":"2026-09-21T22:14:01+08:00","seq":2,"price":80.6}\n'
                     '{"id":"gold","ts":1790000040,"seq":1,"price":1,"volume":1}\n'
                     'not json\n'
                     '[1,2]\n'
                     '{"id":"brent","ts":1790000040,"price":1}\n'
                     '{"id":"brent","ts":1790000040,"seq":0,"price":1}\n'
                     '{"id":"brent","ts":1790000040,"seq":3,"price":-1}\n'
                     '{"id":"brent","ts":1790000040,"seq":3,"price":"NaN"}\n')
    a = SqliteTickArchive(tmp_path / "d")
    r = import_ticks(a, jsonl, KNOWN, chunk=1)
    assert (r.rows, r.bad) == (3, 6)
    assert r.errors[0] == "line 4: unknown instrument 'gold'" and r.errors[1] == "line 5: not JSON"
    assert r.errors[3].startswith("line 8: ") and "seq must be >= 1" in r.errors[3]
    # line 7 has no seq (as a feed's line): the count of brent's good ticks so far, 3
    assert [t[2] for t in a.read("brent", 0, 2**62)] == [1, 3, 2]
    csv_gz = tmp_path / "t.csv.gz"
    with gzip.open(csv_gz, "wt") as fh:
        fh.write("id,ts,seq,price,volume\nwti,1790000040,1,70,1\nwti,1790000040.001,x,70,1\nwti,1\n")
    r = import_ticks(a, csv_gz, KNOWN)
    assert (r.rows, r.bad) == (1, 2) and "seq must be an integer" in r.errors[0] and "5 columns" in r.errors[1]
    a.close()


def test_a_feeds_lines_without_seq_are_numbered_as_the_feed_numbers_them(tmp_path: Path) -> None:
    """The feed takes no seq: it numbers each instrument's accepted ticks 1, 2, ... So does the import, over the
    file's good rows (a bad row takes no number), the same on a re-run; the id is read in any case, as the feed
    reads it; a line without ts (the feed's "now") and a seq of null are bad rows."""
    f = tmp_path / "feed.jsonl"
    f.write_text('{"id":"brent","price":80.5,"ts":1790000040.0,"volume":2}\n'
                 '{"id":"WTI ","price":70,"ts":1790000040.5}\n'
                 '{"id":"brent","price":-1,"ts":1790000041.0}\n'
                 '{"id":"brent","price":80.75,"ts":1790000041.0}\n'
                 '{"id":"brent","price":81}\n'
                 '{"id":"brent","price":81,"ts":1790000042.0,"seq":null}\n'
                 '{"id":"wti","price":70.25,"ts":1790000042.0}\n')
    a = SqliteTickArchive(tmp_path / "d")
    for _ in range(2):
        r = import_ticks(a, f, KNOWN)
        assert (r.rows, r.bad) == (4, 3), r.errors
        assert [e[:8] for e in r.errors] == ["line 3: ", "line 5: ", "line 6: "] and "missing ts" in r.errors[1]
    assert list(a.read("brent", 0, 2**62)) == [("brent", T0, 1, 80.5, 2.0), ("brent", T0 + 1000, 2, 80.75, 0.0)]
    assert [(t[1], t[2]) for t in a.read("wti", 0, 2**62)] == [(T0 + 500, 1), (T0 + 2000, 2)]
    a.close()


def test_a_ticks_ts_is_epoch_seconds_as_the_feeds() -> None:
    """docs/storage.md, "What `ts` means": epoch seconds (fractions allowed, as text too) or ISO 8601 with an
    offset (naive: Asia/Shanghai, as the feed reads it); a number that is plainly epoch milliseconds is named."""
    assert tick_ts(1790000040) == T0 == tick_ts(1790000040.0) == tick_ts("1790000040.000")
    assert tick_ts("2026-09-21T22:14:00+08:00") == T0 == tick_ts("2026-09-21T22:14:00")  # naive: Shanghai
    assert tick_ts(1790000040.25) == T0 + 250
    for ms in (T0, str(T0), 1e11):
        with pytest.raises(ValueError, match="plainly epoch milliseconds"):
            tick_ts(ms)
    for bad in ("0001-01-01T00:00:00+08:00", -1, "1e9", "nan", True, None, float("inf")):
        with pytest.raises(ValueError):
            tick_ts(bad)


def test_import_refuses_ticks_the_retention_would_delete_or_from_the_future(tmp_path: Path) -> None:
    now = T0 / 1000
    window = TimeWindow(now, T0 - 30 * DAY_MS)
    rows = [T0 - 30 * DAY_MS, T0 - 30 * DAY_MS - 1, T0 + 300_000, T0 + 300_001, T0 * 1000]
    f = tmp_path / "t.csv"
    f.write_text("".join(f"brent,{ms / 1000},{k + 1},80,1\n" for k, ms in enumerate(rows)))
    a = SqliteTickArchive(tmp_path / "d")
    r = import_ticks(a, f, KNOWN, window)
    assert (r.rows, r.bad) == (2, 3), r.errors
    assert r.errors[0].startswith("line 2: ts 2026-08-22T22:13:59.999+08:00 is older than the retention")
    assert r.errors[1] == ("line 4: ts 2026-09-21T22:19:00.001+08:00 is in the future "
                           "(the clock reads 2026-09-21T22:14:00.000+08:00)")
    assert "line 5: " in r.errors[2] and "plainly epoch milliseconds" in r.errors[2]
    assert [t[1] for t in a.read("brent", 0, 2**62)] == rows[:1] + rows[2:3]
    a.close()


def test_import_candles(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    lines = ["id,t,o,h,l,c,v", f"brent,{T0},1,2,0.5,1.5,10", f"brent,{T0 + 1},1,2,0.5,1.5,10",
             "brent,2026-09-21T22:15:00+08:00,1,2,0.5,1.5,10", "brent,x,1,2,0.5,1.5,10",
             f"brent,{T0},1,0.9,0.5,1.5,10", "gold,2026-09-21,1,2,0.5,1.5,1", f"brent,{T0},nan,2,0.5,1.5,1",
             f"brent,{T0},1,inf,0.5,1.5,1", f"brent,{T0},1,2,0.5,1.5,x"]
    lines += [f"brent,{T0},1,2"] * (MAX_NAMED + 5)
    f.write_text("\n".join(lines) + "\n")
    s = SqliteCandleStore(tmp_path / "d")
    r = import_candles(s, "1m", f, KNOWN, chunk=1)
    assert r.rows == 2 and r.bad == 7 + MAX_NAMED + 5 and len(r.errors) == MAX_NAMED
    assert r.errors[0] == "line 3: t is not the start of a 1m bucket"
    assert "bad time" in r.errors[1] and "0 < l <=" in r.errors[2] and "unknown instrument" in r.errors[3]
    assert "all finite" in r.errors[4] and "all finite" in r.errors[5] and "must be numbers" in r.errors[6]
    assert [row[1] for row in s.range("1m", "brent", 0, 2**62, 10).rows] == [T0, T0 + 60_000]
    d = tmp_path / "d.csv"
    d.write_text("brent,2026-09-21,1,2,0.5,1.5,10\n")
    assert import_candles(s, "1d", d, KNOWN, bucket_start).rows == 1
    assert s.earliest("1d", "brent") == bucket_start("1d", parse_instant("2026-09-21", dates=True))
    with pytest.raises(ValueError):
        import_candles(s, "2m", d, KNOWN)
    with pytest.raises(OSError):
        import_candles(s, "1m", tmp_path / "missing.csv", KNOWN)
    s.close()


def test_import_refuses_candles_in_seconds_too_old_or_from_the_future(tmp_path: Path) -> None:
    """`t` is epoch ms (as in /kline): a number plainly in seconds, a bucket the retention would delete and one ahead
    of the clock are named bad rows, on the fast path's file as on the row path's."""
    f = tmp_path / "c.csv"
    rows = [T0 // 1000, T0 - 2 * DAY_MS, T0 + 360_000, T0 - DAY_MS]
    f.write_text("".join(f"brent,{t},1,2,0.5,1.5,10\n" for t in rows))
    s = SqliteCandleStore(tmp_path / "d")
    r = import_candles(s, "1m", f, KNOWN, window=TimeWindow(T0 / 1000, T0 - DAY_MS))
    assert (r.rows, r.bad) == (1, 3), r.errors
    assert r.errors[0] == "line 1: t 1790000040 is plainly epoch seconds: t is epoch milliseconds"
    assert "line 2: t 2026-09-19T22:14:00.000+08:00 is older than the retention keeps" in r.errors[1]
    assert r.errors[2].startswith("line 3: t 2026-09-21T22:20:00.000+08:00 is in the future")
    assert [row[1] for row in s.range("1m", "brent", 0, 2**62, 10).rows] == [T0 - DAY_MS]
    s.close()


def test_clean_candle_file_takes_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from server.store.history import backfill_fast

    rows = [f"{i},{T0 + k * 60_000},1,2,0.5,1.5,{k}" for i in ("brent", "wti") for k in range(500)]
    clean = tmp_path / "clean.csv.gz"
    with gzip.open(clean, "wt") as fh:
        fh.write("id,t,o,h,l,c,v\n" + "\n".join(rows) + "\n")
    blocks = list(backfill_fast.clean_bar_blocks(clean, "1m", KNOWN, None))
    assert sum(map(len, blocks)) == 1000 and blocks[0][0] == ("brent", T0, 1.0, 2.0, 0.5, 1.5, 0.0)
    fast = SqliteCandleStore(tmp_path / "fast")
    assert (import_candles(fast, "1m", clean, KNOWN).rows, fast.latest("1m", "wti", 2**62, 1)[0][6]) == (1000, 499)
    monkeypatch.setattr(backfill_fast, "BLOCK", 4096)  # a bad row in a later block: the row path names it
    late_bad = tmp_path / "late.csv"
    late_bad.write_text("\n".join([*rows, f"brent,{T0},1,2,3,1.5,1", *rows[:5]]) + "\n")
    s = SqliteCandleStore(tmp_path / "slow")
    r = import_candles(s, "1m", late_bad, KNOWN)
    assert (r.rows, r.bad) == (1005, 1) and r.errors[0].startswith("line 1001: prices must satisfy")
    hourly = tmp_path / "hourly.csv"
    hourly.write_text(f"brent,{T0 + 60_000},1,2,0.5,1.5,1\n")
    with pytest.raises(backfill_fast.NotClean):
        list(backfill_fast.clean_bar_blocks(hourly, "1h", KNOWN, bucket_start))
    assert import_candles(s, "1d", hourly, KNOWN, bucket_start).rows == 1
    fast.close()
    s.close()
