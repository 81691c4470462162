"""A live (jsonl) feed stays alive and truthful: out-of-range ticks are bad lines, the file is followed as it
grows, a failure is visible on /readyz and /metrics and recovers, a missing file is a one-line error, and a
gap day's candle opens at its first tick. The server runs on a fake "now" (hidden --clock-start), so every
date here is derived from it and the tests hold on any calendar day."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from server.market.timefmt import trading_day, trading_days_back
from tests.conftest import ROOT, RUNTIMES, ServerProcess, free_ports, run_cli

MONDAY = "2026-11-23T10:00:00+08:00"
SATURDAY = "2026-11-28T10:00:00+08:00"  # a weekend tick counts for the next Monday's candle
WAIT_S = 10.0


def _wait_for(predicate, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)  # the server reads the file on its own thread and schedule: poll what it serves
    raise AssertionError(f"not seen within {WAIT_S}s: {what}")


def _metric(srv: ServerProcess, name: str) -> float:
    text = httpx.get(srv.base + "/metrics").text
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def _append(path: Path, *ticks: dict[str, Any] | str) -> None:
    if not ticks:
        return
    with path.open("a") as fh:
        fh.write("".join((t if isinstance(t, str) else json.dumps(t)) + "\n" for t in ticks))


class Feed:
    """A server on a jsonl file it follows, with a key, its clock started at ``fake_now``."""

    def __init__(self, tmp_path: Path, fake_now: str, runtime: str = "granian", *lines: dict[str, Any] | str):
        self.now = datetime.fromisoformat(fake_now).timestamp()
        self.path = tmp_path / "ticks.jsonl"
        self.path.write_text("")
        _append(self.path, *lines)
        self.data = tmp_path / "data"
        self.fake_now = fake_now
        self.runtime = runtime
        self.srv = self.start()
        self.key = self.srv.create_key("professional")[1]

    def start(self) -> ServerProcess:
        return ServerProcess(self.data, self.runtime, "--feed", f"jsonl:{self.path}", "--no-demo-key",
                             "--clock-start", self.fake_now)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.srv.base + path, headers={"X-SERVICE-Key": self.key})

    def quote(self, inst: str) -> dict[str, Any]:
        resp = self.get(f"/api/v1/quotes/{inst}")
        assert resp.status_code == 200, resp.text
        return resp.json()  # type: ignore[no-any-return]

    def seq_reaches(self, inst: str, seq: int) -> dict[str, Any]:
        return _wait_for(lambda: (q := self.quote(inst))["seq"] >= seq and q, f"{inst} seq {seq}")  # type: ignore[no-any-return]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_out_of_range_ts_lines_are_counted_and_later_lines_applied(tmp_path: Path, runtime: str) -> None:
    bad_ts: list[Any] = [1795000000000, "9999-12-31", "0001-01-01", "9999-06-01", "2020-01-01T00:00:00+08:00"]
    feed = Feed(tmp_path, MONDAY, runtime, *({"id": "brent", "price": 70 + i, "ts": ts} for i, ts in enumerate(bad_ts)))
    try:
        _wait_for(lambda: _metric(feed.srv, "market_feed_bad_lines") == len(bad_ts), "the bad lines counted")
        _append(feed.path, {"id": "brent", "price": 81.25, "ts": feed.now + 1, "volume": 2})
        quote = feed.seq_reaches("brent", 1)
        assert (quote["price"], quote["seq"], quote["open"], quote["volume"]) == (81.25, 1, 81.25, 2)
        assert quote["updated"].startswith("2026-11-23T10:00:01")
        assert _metric(feed.srv, "market_feed_bad_lines") == len(bad_ts)
        # the feed is alive and every reader still works: list, kline (no year-9999 candles), readyz, WebSocket
        assert feed.get("/api/v1/quotes").status_code == 200
        series = feed.get("/api/v1/kline/brent").json()["series"]
        assert [c["t"] for c in series] == [str(trading_day(feed.now))]
        ready = httpx.get(feed.srv.base + "/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["feed"] is True
        assert _metric(feed.srv, "market_feed_up") == 1 and _metric(feed.srv, "market_feed_restarts_total") == 0
        assert asyncio.run(_first_ws_message(feed))["type"] == "snapshot"
    finally:
        assert feed.srv.stop() == 0


async def _first_ws_message(feed: Feed) -> dict[str, Any]:
    async with connect(f"{feed.srv.ws_base}/ws/quotes?key={feed.key}", max_queue=None, open_timeout=5) as ws:
        return json.loads(await asyncio.wait_for(ws.recv(), 5))  # type: ignore[no-any-return]


def test_appended_lines_are_followed_and_a_failure_is_visible_then_recovers(tmp_path: Path) -> None:
    feed = Feed(tmp_path, MONDAY, "granian", {"id": "brent", "price": 80.0, "ts": MONDAY})
    try:
        feed.seq_reaches("brent", 1)
        wti = feed.quote("wti")
        assert wti["price"] is None and wti["updated"] is None and wti["open"] is None  # no tick yet: nothing invented
        _append(feed.path, {"id": "brent", "price": 80.5, "ts": feed.now + 1})
        assert feed.seq_reaches("brent", 2)["price"] == 80.5  # appended after start: followed like tail -F

        feed.path.unlink()
        feed.path.mkdir()  # the path can no longer be read: the feed fails, is logged, and is retried
        _wait_for(lambda: httpx.get(feed.srv.base + "/readyz").status_code == 503, "readyz 503")
        assert _metric(feed.srv, "market_feed_up") == 0
        _wait_for(lambda: _metric(feed.srv, "market_feed_restarts_total") >= 1, "a restart counted")
        assert "feed failed (FeedReadError: cannot read" in feed.srv.output()
        assert feed.get("/api/v1/quotes/brent").status_code == 200  # the last prices are still served

        feed.path.rmdir()
        _append(feed.path, {"id": "brent", "price": 79.0, "ts": feed.now + 2})
        assert feed.seq_reaches("brent", 3)["price"] == 79.0
        _wait_for(lambda: httpx.get(feed.srv.base + "/readyz").status_code == 200, "readyz 200 again")
        assert _metric(feed.srv, "market_feed_up") == 1
    finally:
        assert feed.srv.stop() == 0


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("target", ["missing.jsonl", "a-directory"])
def test_unreadable_feed_file_is_one_line_and_exit_1(tmp_path: Path, runtime: str, target: str) -> None:
    (tmp_path / "a-directory").mkdir()
    path = tmp_path / target
    port, ws_port = free_ports(2)  # distinct; the server exits before binding either
    cmd = [sys.executable, "-m", "server", "serve", "--data-dir", str(tmp_path / "data"), "--runtime", runtime,
           "--port", str(port), "--ws-port", str(ws_port), "--feed", f"jsonl:{path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 1
    reason = "No such file or directory" if target.startswith("missing") else "Is a directory"
    assert out.stderr.splitlines() == [f"market-server: --feed jsonl:{path}: cannot read {path}: {reason}"]
    assert out.stdout == ""  # never started, never announced


@pytest.mark.parametrize("fake_now", [MONDAY, SATURDAY], ids=["monday", "saturday"])
def test_gap_up_day_opens_at_its_first_tick(tmp_path: Path, fake_now: str) -> None:
    now = datetime.fromisoformat(fake_now).timestamp()
    live_day = trading_day(now)
    day1, day2, day3, _ = trading_days_back(live_day, 4)
    csv = tmp_path / "c.csv"
    csv.write_text(f"id,t,o,h,l,c,v\nbrent,{day1},69,71,68,70,1000\nbrent,{day3},70,71,69,70,900\n")
    (tmp_path / "data").mkdir()
    imported = run_cli(tmp_path / "data", "candles", "import", str(csv), "--clock-start", fake_now)
    assert imported.returncode == 0 and "used only by a live feed" in imported.stderr

    feed = Feed(tmp_path, fake_now, "granian")
    try:
        q = feed.quote("brent")  # before the day's first tick: yesterday's close, no open/high/low invented
        assert (q["price"], q["prevClose"], q["volume"]) == (70, 70, 0)
        assert (q["open"], q["high"], q["low"]) == (None, None, None)
        _append(feed.path, *({"id": "brent", "price": p, "ts": now + i, "volume": 1}
                             for i, p in enumerate([75.0, 76.0, 74.5, 75.5])))
        q = feed.seq_reaches("brent", 4)
        assert (q["open"], q["high"], q["low"], q["price"], q["prevClose"]) == (75.0, 76.0, 74.5, 75.5, 70.0)
        series = feed.get("/api/v1/kline/brent").json()["series"]
        board = {"oi": None, "s": None}  # brent is a futures product (SPEC 19): none known from these lines
        assert series[-1] == {"t": str(live_day), "o": 75.0, "h": 76.0, "l": 74.5, "c": 75.5, "v": 4, **board}
        # day2 had no candle and no tick: the only flat candle, at the previous close
        assert series[-3] == {"t": str(day2), "o": 70.0, "h": 70.0, "l": 70.0, "c": 70.0, "v": 0, **board}

        # an import for day2 while the server runs is not overwritten by the feed's flush of a flat fill
        fix = tmp_path / "fix.csv"
        fix.write_text(f"brent,{day2},70,72,69.5,71,800\n")
        assert run_cli(tmp_path / "data", "candles", "import", str(fix), "--clock-start", fake_now).returncode == 0
    finally:
        assert feed.srv.stop() == 0

    feed.path.write_text("")
    feed.srv = feed.start()
    try:
        series = feed.get("/api/v1/kline/brent").json()["series"]
        expected = [(day1, 69, 68, 70), (day2, 70, 69.5, 71), (day3, 70, 69, 70), (live_day, 75, 74.5, 75.5)]
        assert [(c["t"], c["o"], c["l"], c["c"]) for c in series] == [(str(d), *rest) for d, *rest in expected]
    finally:
        assert feed.srv.stop() == 0


def test_stdin_feed_ends_at_eof_and_the_server_stays_ready(tmp_path: Path) -> None:
    now = datetime.fromisoformat(MONDAY).timestamp()
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"id": "brent", "price": 80 + i, "ts": now + i}) + "\n" for i in range(3))
                      + json.dumps({"id": "brent", "price": 90, "ts": "9999-12-31"}))  # last line: no newline
    with replay.open("rb") as stdin:
        srv = ServerProcess(tmp_path / "data", "granian", "--feed", "jsonl:-", "--no-demo-key",
                            "--clock-start", MONDAY, stdin=stdin.fileno())
    try:
        _wait_for(lambda: "jsonl feed ended: 3 ticks, 1 bad lines" in srv.output(), "the end of stdin logged")
        key = srv.create_key("free")[1]
        assert httpx.get(srv.base + "/api/v1/quotes/brent", headers={"X-SERVICE-Key": key}).json()["price"] == 82
        assert httpx.get(srv.base + "/readyz").status_code == 200  # a finished replay is not a failure
        assert _metric(srv, "market_feed_restarts_total") == 0 and _metric(srv, "market_feed_up") == 1
    finally:
        assert srv.stop() == 0
