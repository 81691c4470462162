"""SPEC 18's first promise on a real server: a live feed's ticks are archived, and after `kill -9` and a restart
today's daily candle and today's intraday buckets answer exactly as before (the archive replays them).

The server runs on a fake clock (hidden --clock-start, a Wednesday afternoon in Shanghai) so the day's sessions
are fixed; the feed is a JSON-lines file of ticks stamped earlier that day. What another process does (apply the
file, commit the archive) is awaited by polling its answers with a deadline: nothing in this process to await.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.market.timefmt import TZ
from server.market.venues.book import VenueBook
from tests import poll
from tests.conftest import ServerProcess, run_cli, sqlite_only
from tests.tmpfs import small_tmpfs

NOW = "2026-11-18T14:20:00+08:00"  # a Wednesday: ZCE and ICE in session
IDS = ("brent", "methanol")
# the archive is written on the memory engine (on Redis its lease holder would write it: not built yet); on the
# Redis + PostgreSQL pass this runs on PostgreSQL storage, so the PostgreSQL archive is the one killed
MEMORY = ("--engine", "memory")


YESTERDAY = "2026-11-17T14:20:00+08:00"


def _at(hh: int, mm: int, ss: int = 0, day: int = 18) -> float:
    return datetime(2026, 11, day, hh, mm, ss, tzinfo=TZ).timestamp()


def _ticks(day: int = 18) -> list[dict[str, Any]]:
    out = []
    for k in range(240):  # 09:00 .. 13:59, every 75 s, alternating instruments (a late tick included below)
        inst = IDS[k % 2]
        base = (80.0 if inst == "brent" else 2400.0) + (day - 18)
        out.append({"id": inst, "price": round(base + (k % 17) * (0.05 if inst == "brent" else 1.0), 2),
                    "ts": _at(9, 0, day=day) + k * 75, "volume": 1 + k % 5})
    out.append({"id": "brent", "price": 79.1, "ts": _at(9, 30, day=day), "volume": 7})  # late: the newest bucket
    return out


_until = partial(poll.until, timeout=15.0)  # this module's wait and polling interval


def _metric(srv: ServerProcess, name: str) -> float:
    for line in httpx.get(srv.base + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1.0


def _answers(srv: ServerProcess, key: str) -> dict[str, Any]:
    h = {"X-SERVICE-Key": key}
    out: dict[str, Any] = {}
    for inst in IDS:
        q = httpx.get(f"{srv.base}/api/v1/quotes/{inst}", headers=h).json()
        out[inst] = {k: q[k] for k in ("price", "open", "high", "low", "volume", "prevClose", "seq", "tradingDay")}
        for interval in ("1m", "5m", "1h"):
            out[f"{inst}-{interval}"] = httpx.get(f"{srv.base}/api/v1/kline/{inst}", headers=h,
                                                  params={"interval": interval, "limit": 1000}).json()["series"]
        out[f"{inst}-1d"] = httpx.get(f"{srv.base}/api/v1/kline/{inst}", headers=h, params={"days": 3}).json()["series"]
    return out


@pytest.mark.parametrize("runtime", ["granian"])
def test_kill_9_keeps_todays_candles(tmp_path: Path, runtime: str) -> None:
    """Tuesday's run ends cleanly (its buckets stored); Wednesday's is killed with SIGKILL: the third run answers
    Tuesday's buckets from the candle store and Wednesday's from the archive, exactly as the second did."""
    feed = tmp_path / "ticks.jsonl"
    data = tmp_path / "data"
    monday = _ticks(17)
    feed.write_text("".join(json.dumps(t) + "\n" for t in monday))
    first = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", YESTERDAY, *MEMORY)
    try:
        assert _until(lambda: _metric(first, "market_archive_committed_ticks") == len(monday)), first.output()
    finally:
        assert first.stop() == 0, first.output()
    ticks = _ticks()
    feed.write_text("".join(json.dumps(t) + "\n" for t in ticks))
    srv = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    key = srv.demo_key
    try:
        assert _until(lambda: _metric(srv, "market_archive_committed_ticks") == len(ticks)), srv.output()
        before = _answers(srv, key)
        assert before["brent"]["seq"] + before["methanol"]["seq"] == len(ticks)
        assert before["methanol"]["tradingDay"] == "2026-11-18" and before["methanol"]["open"] == 2401.0
        assert len(before["brent-1m"]) == 240  # Tuesday's 120 (stored), Wednesday's 120 (the late tick: the newest)
        assert before["brent-1m"][0]["t"].startswith("2026-11-17T09:00")
        assert before["methanol-1d"][-1]["t"] == "2026-11-18"
        assert httpx.get(srv.base + "/readyz").status_code == 200
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(10)
    finally:
        if srv.proc.poll() is None:
            srv.stop()
    feed.write_text("")  # nothing new: everything after the restart comes from the archive
    again = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    try:
        after = _answers(again, key)
        assert after == before
        log = again.output()
        assert f"replayed {len(ticks)} archived ticks" in log, log  # today's: Tuesday's came from the store
    finally:
        assert again.stop() == 0, again.output()


@pytest.mark.parametrize("runtime", ["robyn"])
def test_a_session_killed_before_its_roll_keeps_its_candles_on_a_later_day(tmp_path: Path, runtime: str) -> None:
    """Tuesday's hub is killed with SIGKILL before its day rolled (so it stored no candle of Tuesday); started on
    Wednesday, the hub answers Tuesday's intraday buckets and daily candle exactly as Tuesday's hub did, rebuilt
    from the archived ticks."""
    feed = tmp_path / "ticks.jsonl"
    data = tmp_path / "data"
    tuesday = _ticks(17)
    feed.write_text("".join(json.dumps(t) + "\n" for t in tuesday))
    first = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", YESTERDAY, *MEMORY)
    key = first.demo_key
    try:
        assert _until(lambda: _metric(first, "market_archive_committed_ticks") == len(tuesday)), first.output()
        before = _answers(first, key)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
    finally:
        if first.proc.poll() is None:
            first.stop()
    feed.write_text("")
    again = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    try:
        after = _answers(again, key)
        for inst in IDS:
            for interval in ("1m", "5m", "1h"):
                assert after[f"{inst}-{interval}"] == before[f"{inst}-{interval}"], (inst, interval)
            tuesday_candle = [c for c in after[f"{inst}-1d"] if c["t"] == "2026-11-17"]
            # Tuesday settled at the restart (issue 39: the hub was down at its close), from its archived ticks
            assert tuesday_candle[0].pop("s") is not None and before[f"{inst}-1d"][-1].pop("s") is None
            assert tuesday_candle == [before[f"{inst}-1d"][-1]], (inst, after[f"{inst}-1d"], before[f"{inst}-1d"])
            assert after[inst]["prevClose"] == before[inst]["price"]  # Wednesday's change is from Tuesday's close
        assert "rebuilt" in again.output(), again.output()
    finally:
        assert again.stop() == 0, again.output()


def test_backfill_imports_ticks_and_intraday_candles_and_names_bad_rows(tmp_path: Path) -> None:
    """SPEC 18 backfill: `ticks import` and `candles import --interval 1m` keep good rows and name bad ones (exit
    1); a live hub started afterwards shows the imported minutes before today's session and replays today's
    imported ticks."""
    data = tmp_path / "data"
    data.mkdir()
    ticks = tmp_path / "ticks.jsonl"
    good = [{"id": "methanol", "ts": _at(10, 0) + k * 60, "seq": k + 1, "price": 2400.0 + k,
             "volume": 2} for k in range(5)]
    ticks.write_text("".join(json.dumps(t) + "\n" for t in good)
                     + '{"id": "gold", "ts": 1, "seq": 1, "price": 1, "volume": 1}\n'
                     + '{"id": "methanol", "ts": 1, "seq": 9, "price": -5, "volume": 1}\nnot json\n')
    out = run_cli(data, "ticks", "import", str(ticks), "--clock-start", NOW)
    assert out.returncode == 1 and "imported 5 ticks" in out.stdout, (out.stdout, out.stderr)
    assert "3 bad rows" in out.stderr and "line 6:" in out.stderr and "line 8:" in out.stderr, out.stderr
    bars = tmp_path / "bars.csv"
    start = int(_at(9, 0, day=17) * 1000)  # Tuesday: before Wednesday's session
    rows = [f"brent,{start + k * 60_000},80,81,79,80.5,{k + 1}" for k in range(30)]
    bars.write_text("id,t,o,h,l,c,v\n" + "\n".join(rows) + f"\nbrent,{start + 30},80,81,79,80.5,1\n")
    out = run_cli(data, "candles", "import", "--interval", "1m", str(bars), "--clock-start", NOW)
    assert out.returncode == 1 and "imported 30 candles" in out.stdout, (out.stdout, out.stderr)
    assert "line 32: t is not the start of a 1m bucket" in out.stderr, out.stderr
    assert run_cli(data, "candles", "import", "--interval", "2m", str(bars)).returncode == 2  # argparse: 2m
    feed = tmp_path / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    try:
        h = {"X-SERVICE-Key": srv.demo_key}
        minutes = httpx.get(f"{srv.base}/api/v1/kline/brent", headers=h,
                            params={"interval": "1m", "limit": 1000}).json()["series"]
        assert len(minutes) == 30 and minutes[0]["t"] == "2026-11-17T09:00:00.000+08:00" and minutes[-1]["v"] == 30
        quote = httpx.get(f"{srv.base}/api/v1/quotes/methanol", headers=h).json()
        assert (quote["price"], quote["open"], quote["volume"], quote["seq"]) == (2404.0, 2400.0, 10, 5)
    finally:
        assert srv.stop() == 0, srv.output()


def test_retention_prunes_what_is_older_than_its_days(tmp_path: Path) -> None:
    """--retention ticks=2,1m=2: at start the hub deletes ticks and 1m bars older than two days (by its clock) and
    keeps the rest; a bad --retention is refused with the flag named."""
    data = tmp_path / "data"
    data.mkdir()
    old, recent = int(_at(10, 0, day=14) * 1000), int(_at(10, 0, day=17) * 1000)  # 4 days and 1 day before NOW
    ticks = tmp_path / "ticks.csv"
    ticks.write_text("".join(f"methanol,{ts // 1000 + k},{k + 1},2400,1\n" for ts in (old, recent) for k in range(3)))
    assert run_cli(data, "ticks", "import", str(ticks), "--clock-start", NOW).returncode == 0
    bars = tmp_path / "bars.csv"
    bars.write_text(f"brent,{old},80,81,79,80,1\nbrent,{recent},80,81,79,80,1\n")
    assert run_cli(data, "candles", "import", "--interval", "1m", str(bars), "--clock-start", NOW).returncode == 0
    feed = tmp_path / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", NOW, "--retention",
                        "ticks=2,1m=2", *MEMORY)
    try:
        assert _until(lambda: "retention: deleted" in srv.output()), srv.output()
        # the old 1m bar imported, and the one rebuilt at start from the old ticks (no stored bar covered them)
        assert "retention: deleted 3 ticks, 2 1m" in srv.output(), srv.output()
    finally:
        assert srv.stop() == 0, srv.output()
    again = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    try:  # the rings are loaded from what the store kept
        minutes = httpx.get(f"{again.base}/api/v1/kline/brent", headers={"X-SERVICE-Key": again.demo_key},
                            params={"interval": "1m"}).json()["series"]
        assert [m["t"] for m in minutes] == ["2026-11-17T10:00:00.000+08:00"]
    finally:
        assert again.stop() == 0, again.output()
    out = subprocess.run([sys.executable, "-m", "server", "serve", "--retention", "ticks=-1"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "--retention" in out.stderr, out.stderr


def test_range_queries_reach_below_the_ring_into_the_stored_history(tmp_path: Path) -> None:
    """SPEC 18: 1,500 stored minutes of brent, the ring holding the newest 1,000: a range from the first pages
    through all of them (the store's part, then the ring's) with `next`; a range that ends below the ring answers
    from the store; both in the ring's own format."""
    data = tmp_path / "data"
    data.mkdir()
    first = int(datetime(2026, 11, 16, 12, 0, tzinfo=TZ).timestamp() * 1000)
    n = 1500
    prices = [round(80 + (k % 100) * 0.01, 2) for k in range(n)]
    bars = tmp_path / "bars.csv"
    bars.write_text("".join(f"brent,{first + k * 60_000},{p},{p},{p},{p},{k + 1}\n" for k, p in enumerate(prices)))
    assert run_cli(data, "candles", "import", "--interval", "1m", str(bars), "--clock-start", NOW).returncode == 0
    feed = tmp_path / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    try:
        h = {"X-SERVICE-Key": srv.demo_key}

        def page(**params: Any) -> dict[str, Any]:
            resp = httpx.get(f"{srv.base}/api/v1/kline/brent", headers=h, params={"interval": "1m", **params})
            assert resp.status_code == 200, resp.text
            return resp.json()  # type: ignore[no-any-return]

        ring = page(limit=1000)["series"]
        assert len(ring) == 1000 and ring[0]["v"] == 501  # the ring: the newest 1,000
        walked, cursor = [], str(first)
        while cursor is not None:
            body = page(**{"from": cursor, "limit": 400})
            walked += body["series"]
            cursor = body["next"]
        assert len(walked) == n and [c["v"] for c in walked] == list(range(1, n + 1))
        assert walked[500:] == ring  # the same buckets read the same from the store and the ring
        assert walked[0] == {"t": "2026-11-16T12:00:00.000+08:00", "o": 80.0, "h": 80.0, "l": 80.0, "c": 80.0, "v": 1}
        older = page(to=str(first + 100 * 60_000), limit=50)
        assert older["series"] == walked[50:100] and older["next"] is None
        across = page(to=str(first + 520 * 60_000), limit=40)["series"]  # 20 stored, then 20 of the ring
        assert across == walked[480:520]
        udf = httpx.get(f"{srv.base}/api/v1/udf/history", headers=h, params={  # UDF: from and to both counted in
            "symbol": "brent", "resolution": "1", "from": first // 1000, "to": first // 1000 + (n - 1) * 60}).json()
        assert udf["s"] == "ok" and udf["v"] == list(range(1, n + 1)) and udf["t"][0] == first // 1000
        back = httpx.get(f"{srv.base}/api/v1/udf/history", headers=h, params={
            "symbol": "brent", "resolution": "1", "to": first // 1000 + 99 * 60, "countback": 50}).json()
        assert back["v"] == list(range(51, 101)) and back["c"] == [c["c"] for c in walked[50:100]]
        earliest = httpx.get(f"{srv.base}/api/v1/instruments/brent", headers=h).json()["earliest"]
        assert earliest == {"1m": walked[0]["t"], "5m": None, "15m": None, "1h": None, "1d": None}, earliest
    finally:
        assert srv.stop() == 0, srv.output()


def test_daily_ranges_reach_below_the_daily_book(tmp_path: Path) -> None:
    """SPEC 18 depth for 1d: 300 imported trading days of brent, the daily book holding the newest 90: a range
    from the first pages through all 300 with `next`, the latest 150 join the table's 60 and the book's 90, UDF
    daily history with countback 150 (00:00 UTC times), and `earliest` names the first day."""
    data = tmp_path / "data"
    data.mkdir()
    days = VenueBook.load().for_instrument("brent").trading_days_back(date(2026, 11, 17), 300)
    rows = [f"brent,{d.isoformat()},{80 + k * 0.01:.2f},{81 + k * 0.01:.2f},{79 + k * 0.01:.2f},{80 + k * 0.01:.2f},"
            f"{k + 1}" for k, d in enumerate(days)]
    daily = tmp_path / "daily.csv"
    daily.write_text("\n".join(rows) + "\n")
    assert run_cli(data, "candles", "import", str(daily), "--clock-start", NOW).returncode == 0
    feed = tmp_path / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, "robyn", "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    try:
        h = {"X-SERVICE-Key": srv.demo_key}

        def page(**params: Any) -> dict[str, Any]:
            resp = httpx.get(f"{srv.base}/api/v1/kline/brent", headers=h, params={"interval": "1d", **params})
            assert resp.status_code == 200, resp.text
            return resp.json()  # type: ignore[no-any-return]

        book = page(limit=1000)["series"]
        assert 0 < len(book) < 300  # the book holds the newest trading days only
        walked, cursor = [], days[0].isoformat()
        while cursor is not None:
            body = page(**{"from": cursor, "limit": 120})
            walked += body["series"]
            cursor = body["next"]
        # no candle for Wednesday: its session is open but no tick came yet (it shows from its first tick)
        assert [c["t"] for c in walked] == [d.isoformat() for d in days] and [c["v"] for c in walked] == list(
            range(1, 301))
        assert walked[-len(book):] == book  # a day reads the same from the table and the book
        assert walked[0] == {"t": days[0].isoformat(), "o": 80.0, "h": 81.0, "l": 79.0, "c": 80.0, "v": 1}
        assert page(to="2026-11-18", limit=150)["series"] == walked[-150:]
        udf = httpx.get(f"{srv.base}/api/v1/udf/history", headers=h, params={
            "symbol": "brent", "resolution": "1D", "to": int(datetime(2026, 11, 17, tzinfo=UTC).timestamp()),
            "countback": 150}).json()
        assert udf["s"] == "ok" and udf["v"] == list(range(151, 301))
        assert udf["t"][0] == int(datetime.combine(days[150], datetime.min.time(), UTC).timestamp())
        earliest = httpx.get(f"{srv.base}/api/v1/instruments/brent", headers=h).json()["earliest"]
        assert earliest["1d"] == days[0].isoformat(), earliest
    finally:
        assert srv.stop() == 0, srv.output()


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs for a hub's data dir, to fill."""
    with small_tmpfs(tmp_path / "fs", "24m") as mnt:
        yield mnt


def _open_writer(fifo: Path) -> int | None:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:  # ENXIO: the server's reader has not opened it yet
        assert exc.errno == errno.ENXIO, exc
        return None
    os.set_blocking(fd, True)
    return fd


@sqlite_only  # the archive is in the data dir's history file: on PostgreSQL this disk holds none of it
def test_a_full_disk_is_a_503_and_a_log_line_never_a_crash_and_no_tick_lost(small_fs: Path, tmp_path: Path) -> None:
    """SPEC 18 operations: the data dir's disk fills while a live feed runs: /readyz answers 503 and the archive
    says so once in the log, the hub keeps serving; once space is back every accepted tick is committed."""
    fifo = tmp_path / "ticks.fifo"
    os.mkfifo(fifo)
    # the log is kept off the disk that fills: on it, the one "commit failed" line could itself fail to be written
    srv = ServerProcess(small_fs / "data", "granian", "--feed", f"jsonl:{fifo}", "--clock-start", NOW, *MEMORY,
                        log_dir=tmp_path)
    fd = _until(lambda: _open_writer(fifo), timeout=10.0)
    assert fd, "the server never opened its feed"
    sent = 0

    def send(n: int) -> None:
        nonlocal sent
        lines = [json.dumps({"id": IDS[(sent + k) % 2], "price": 80.0 + (sent + k) % 50, "volume": 1})
                 for k in range(n)]
        os.write(fd, ("\n".join(lines) + "\n").encode())
        sent += n

    filler = small_fs / "filler"
    try:
        send(500)
        assert _until(lambda: _metric(srv, "market_archive_committed_ticks") == sent), srv.output()
        stat = os.statvfs(small_fs)
        filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - 4096))  # the disk is full now
        for _ in range(40):  # the archive grows until a commit fails
            send(2000)
            if _until(lambda: _metric(srv, "market_archive_writable") == 0.0, timeout=1.0):
                break
        assert _metric(srv, "market_archive_writable") == 0.0, srv.output()
        ready = httpx.get(srv.base + "/readyz")
        assert ready.status_code == 503 and ready.json()["code"] == "not_ready", ready.text
        assert httpx.get(srv.base + "/api/v1/quotes", headers={"X-SERVICE-Key": srv.demo_key}).status_code == 200
        assert srv.output().count("archive: commit failed") == 1, srv.output()
        filler.unlink()  # space again: the kept ticks go in
        assert _until(lambda: _metric(srv, "market_archive_committed_ticks") == sent), srv.output()
        assert httpx.get(srv.base + "/readyz").status_code == 200
        assert "archive: writable again" in srv.output()
    finally:
        os.close(fd)
        filler.unlink(missing_ok=True)
        assert srv.stop() == 0, srv.output()
