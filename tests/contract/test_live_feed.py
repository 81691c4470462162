"""A live (jsonl) feed: candles imported by CLI, ticks from a file, candles persisted across restarts."""

from __future__ import annotations

import json
import os
import time
from datetime import date, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from server.market.timefmt import TZ
from server.market.venues.book import VenueBook
from tests.conftest import ServerProcess, run_cli

# The server runs on a fake "now" (hidden --clock-start) so the test holds on any calendar day: a Monday, a
# Saturday (its ticks count for the next Monday), a month end, a year end, and whatever today really is.
FAKE_TODAYS = {
    "monday": "2026-11-23T10:00:00+08:00",
    "saturday": "2026-11-28T10:00:00+08:00",
    "month-end": "2027-04-30T12:00:00+08:00",
    "year-end": "2026-12-31T12:00:00+08:00",
    "today": None,
}


def _wait_for(predicate, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)  # the server applies file lines on its own schedule
    raise AssertionError("condition not met in time")


def _weekend_day(near: date) -> date:
    return near + timedelta(days=(5 - near.weekday()) % 7)


@pytest.mark.parametrize("fake_now", list(FAKE_TODAYS.values()), ids=list(FAKE_TODAYS))
def test_jsonl_feed_with_imported_history_survives_restart(tmp_path: Path, fake_now: str | None) -> None:
    fake_now = fake_now or os.environ.get("MARKET_CLOCK_START")  # the whole suite may run on a fake day too
    now = datetime.fromisoformat(fake_now).timestamp() if fake_now else time.time()
    clock_args = ("--clock-start", fake_now) if fake_now else ()
    brent = VenueBook.load().for_instrument("brent")  # ICE Futures Europe's trading days (SPEC 16)
    live_day = brent.trading_day(int(now * 1000))
    day1, day2, _ = brent.trading_days_back(live_day, 3)  # the two trading days before the live candle's
    data = tmp_path / "data"
    data.mkdir()  # admin commands refuse a data dir that does not exist (only serve creates one)
    csv = tmp_path / "c.csv"
    csv.write_text(f"id,t,o,h,l,c,v\nbrent,{day1},70,71,69,70.5,1000\nbrent,{day2},70.5,72,70,71.2,1200\n")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text(f"brent,{_weekend_day(day1)},70,71,69,70.5,1000\nnope,{day2},1,1,1,1,1\n"
                       "methanol,2026-10-05,2400,2410,2390,2405,10\n")  # National Day: ZCE is shut, ICE is not
    assert run_cli(data, "candles", "import", str(csv), *clock_args).returncode == 0  # the hub's clock: its "future"
    bad = run_cli(data, "candles", "import", str(bad_csv), *clock_args)
    assert bad.returncode == 1 and "not a trading day of ice-eu" in bad.stderr and "unknown instrument" in bad.stderr
    assert "line 3: 2026-10-05 is not a trading day of zce (methanol)" in bad.stderr

    ticks = tmp_path / "ticks.jsonl"
    lines = [{"id": "brent", "price": 72.5, "volume": 10}, "not json", {"id": "gold", "price": 1},
             {"id": "wti", "price": -1}, {"id": "brent", "price": 73.0, "ts": now, "volume": 5}]
    ticks.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")

    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{ticks}", "--no-demo-key", *clock_args)
    try:
        _, key = srv.create_key("free")
        h = {"X-SERVICE-Key": key}
        quote = _wait_for(lambda: (q := httpx.get(srv.base + "/api/v1/quotes/brent", headers=h).json())
                          and q["seq"] == 2 and q)
        assert quote["price"] == 73.0 and quote["prevClose"] == 71.2
        assert quote["change"] == round(73.0 - 71.2, 2)
        assert httpx.get(srv.base + "/api/v1/quotes", headers=h).json()["demo"] is False
        wti = httpx.get(srv.base + "/api/v1/quotes/wti", headers=h).json()
        assert wti["price"] is None and wti["seq"] == 0  # no data yet: null, never invented
        metrics = httpx.get(srv.base + "/metrics").text
        assert "market_feed_bad_lines 2" in metrics and "market_feed_unknown_ids 1" in metrics
        series = httpx.get(srv.base + "/api/v1/kline/brent", headers=h).json()["series"]
        assert [(c["t"], c["c"]) for c in series] == [(str(day1), 70.5), (str(day2), 71.2), (str(live_day), 73.0)]
        assert series[-1]["h"] == 73.0 and series[-1]["v"] == 15
        assert datetime.fromisoformat(quote["updated"]).astimezone(TZ).date() == datetime.fromtimestamp(now, TZ).date()
    finally:
        assert srv.stop() == 0

    ticks.write_text("")
    again = ServerProcess(data, "granian", "--feed", f"jsonl:{ticks}", "--no-demo-key", *clock_args)
    try:
        series = httpx.get(again.base + "/api/v1/kline/brent", headers=h).json()["series"]
        # the live candle was persisted on stop
        assert [(c["t"], c["c"]) for c in series] == [(str(day1), 70.5), (str(day2), 71.2), (str(live_day), 73.0)]
    finally:
        assert again.stop() == 0


def test_jsonl_feed_on_a_named_pipe_loses_nothing_and_never_restarts(tmp_path: Path) -> None:
    """Issue 21: a line longer than 64 KiB, or one line in two writes, made the follower seek the pipe ("Illegal
    seek"), restart the feed and drop what was buffered. Read like stdin now: every tick arrives, no restart."""
    import errno

    fifo = tmp_path / "ticks.fifo"
    os.mkfifo(fifo)
    srv = ServerProcess(tmp_path / "data", "granian", "--feed", f"jsonl:{fifo}", "--no-demo-key")
    fd = -1
    try:
        deadline = time.monotonic() + 10
        while fd < 0:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:  # ENXIO: the server's reader has not opened it yet
                assert exc.errno == errno.ENXIO and time.monotonic() < deadline, exc
                time.sleep(0.05)
        os.set_blocking(fd, True)
        # Python ignores SIGPIPE: a write after the server closed its end raises BrokenPipeError here
        padded = json.dumps({"id": "brent", "price": 81.25, "note": "x" * 100_000}).encode()
        os.write(fd, padded + b"\n")  # > 64 KiB: several reads of the server make one line
        os.write(fd, b'{"id": "wti", "pri')  # one line in two writes ...
        _, key = srv.create_key("free")  # ... with a pause between them
        os.write(fd, b'ce": 77.5}\n')
        h = {"X-SERVICE-Key": key}
        brent = _wait_for(lambda: (q := httpx.get(srv.base + "/api/v1/quotes/brent", headers=h).json())
                          and q["seq"] == 1 and q)
        wti = _wait_for(lambda: (q := httpx.get(srv.base + "/api/v1/quotes/wti", headers=h).json())
                        and q["seq"] == 1 and q)
        assert (brent["price"], wti["price"]) == (81.25, 77.5)
        os.write(fd, b'{"id": "brent", "price": 81.5}\n')  # the pipe is still read: no broken pipe here
        _wait_for(lambda: httpx.get(srv.base + "/api/v1/quotes/brent", headers=h).json()["seq"] == 2)
        metrics = httpx.get(srv.base + "/metrics").text
        samples = dict(line.rsplit(" ", 1) for line in metrics.splitlines() if line.startswith("market_feed"))
        assert "market_feed_restarts_total" not in samples  # a counter has a sample once it counted
        assert (float(samples["market_feed_up"]), float(samples["market_feed_bad_lines"])) == (1.0, 0.0)
    finally:
        if fd >= 0:
            os.close(fd)
        assert srv.stop() == 0
    assert "feed failed" not in srv.output() and "Illegal seek" not in srv.output()
