"""`?adjust=` over a live feed's stored history (SPEC 18 and 19, issue 39): the same back-adjusted bars come out whether
a bar is read from memory (the daily book, the 1m ring) or from the stored candles below them, on `/kline` range
queries and on UDF `history`; a bad value is a 400 on both.

A real server on a SQLite data dir, on a fake clock (hidden --clock-start). The data dir holds 200 imported daily
candles of methanol (the product's continuous series) before Tuesday 2026-11-24, more than the book's 90 trading
days, and 1,100 stored minutes, more than the 1m ring's 1,000. A first run on Tuesday applies methanol-202701 (A) and
methanol-202705 (B) with open interest A > B, stored at its stop. The second run (Wednesday 14:57) loads them: the
product's first line of Wednesday decides A as the main from Tuesday's close (no earlier main: no roll); Wednesday's
lines give B more than 10% above A's open interest, and the product's first line of Thursday (15:01: ZCE's next
trading day) rolls the main to B. So one roll, on Thursday 2026-11-26, and every bar before it, stored or held, moves
by the same gap. A third run on Thursday replays the rule over the stored days at its start and finds the same roll.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.market.venues.book import VenueBook
from tests import poll
from tests.conftest import ServerProcess, run_cli, sqlite_only

MEMORY = ("--engine", "memory")
A, B = "methanol-202701", "methanol-202705"
TUESDAY = "2026-11-24T14:57:00+08:00"
WEDNESDAY = "2026-11-25T14:57:00+08:00"
THURSDAY = "2026-11-26T10:00:00+08:00"
TUESDAY_LINES = [
    {"id": A, "price": 2400, "volume": 10, "ts": "2026-11-24T14:50:00+08:00", "oi": 1000},
    {"id": B, "price": 2450, "volume": 10, "ts": "2026-11-24T14:50:00+08:00", "oi": 900},
]
WEDNESDAY_LINES = [
    {"id": "methanol", "price": 2405, "volume": 1, "ts": "2026-11-25T14:49:00+08:00"},  # decides Wednesday's main: A
    {"id": A, "price": 2410, "volume": 10, "ts": "2026-11-25T14:50:00+08:00", "oi": 1000},
    {"id": B, "price": 2470, "volume": 10, "ts": "2026-11-25T14:50:00+08:00", "oi": 1500},  # > A's by 10%
    {"id": "methanol", "price": 2480, "volume": 1, "ts": "2026-11-25T15:01:00+08:00"},  # Thursday: rolls to B
    {"id": B, "price": 2482, "volume": 2, "ts": "2026-11-25T15:01:30+08:00", "oi": 1501},
]


_until = partial(poll.until, timeout=20.0)  # this module's wait and polling interval


def _lines(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@sqlite_only
def test_adjusted_bars_are_the_same_from_the_stored_history_and_from_memory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    days = VenueBook.load().for_instrument("methanol").trading_days_back(date(2026, 11, 23), 200)
    daily = tmp_path / "daily.csv"
    daily.write_text("".join(f"methanol,{d.isoformat()},{2300 + k},{2310 + k},{2290 + k},{2305 + k},{k + 1}\n"
                             for k, d in enumerate(days)))
    assert run_cli(data, "candles", "import", str(daily), "--clock-start", TUESDAY).returncode == 0
    minutes = tmp_path / "minutes.csv"  # 1,100 stored minutes: the 1m ring holds the newest 1,000 at start
    first_minute = int(datetime.fromisoformat("2026-11-19T09:00:00+08:00").timestamp() * 1000)
    minutes.write_text("".join(f"methanol,{first_minute + k * 60_000},{2300 + k % 50},{2301 + k % 50},"
                               f"{2299 + k % 50},{2300 + k % 50},{k + 1}\n" for k in range(1100)))
    assert run_cli(data, "candles", "import", "--interval", "1m", str(minutes), "--clock-start",
                   TUESDAY).returncode == 0
    feed = tmp_path / "feed.jsonl"
    _lines(feed, TUESDAY_LINES)
    first = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", TUESDAY, *MEMORY)
    try:
        with first.client(headers={"X-SERVICE-Key": first.demo_key}) as http:
            assert _until(lambda: http.get(f"/api/v1/quotes/{B}").json()["openInterest"] == 900), first.output()
    finally:
        assert first.stop() == 0, first.output()  # Tuesday's candles and open interest are stored at the stop
    _lines(feed, WEDNESDAY_LINES)
    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", WEDNESDAY, *MEMORY)
    try:
        with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as http:
            assert _until(lambda: http.get(f"/api/v1/quotes/{B}").json()["price"] == 2482), srv.output()
            rolls = http.get("/api/v1/instruments/methanol/rolls").json()["rolls"]
            assert rolls == [{"tradingDay": "2026-11-26", "from": A, "to": B, "fromClose": 2410.0,
                              "toClose": 2470.0}], rolls
            walks = {mode: _check_mode(http, days, mode, move)
                     for mode, move in (("diff", lambda p: p + 60.0), ("ratio", lambda p: p * 2470.0 / 2410.0))}
            minute_walk = _check_minutes(http, first_minute)
            for path, params in (("/api/v1/kline/methanol", {"from": days[0].isoformat()}),
                                 ("/api/v1/udf/history", {"symbol": "methanol", "resolution": "1D", "to": 1})):
                bad = http.get(path, params={**params, "adjust": "back"})
                assert bad.status_code == 400, bad.text
                assert bad.json()["errors"][0]["field"] == "adjust"
                assert bad.headers["content-type"].startswith("application/problem+json")
    finally:
        assert srv.stop() == 0, srv.output()
    # a restart (Thursday morning, nothing new in the feed): the rule replayed over the stored days finds the same
    # roll, and the stored history adjusts as the running hub adjusted it
    _lines(feed, [])
    again = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", THURSDAY, *MEMORY)
    try:
        with again.client(headers={"X-SERVICE-Key": again.demo_key}) as http:
            assert http.get("/api/v1/instruments/methanol/rolls").json()["rolls"] == rolls
            for mode, walk in walks.items():
                assert _walk(http, days[0].isoformat(), adjust=mode) == walk, mode
            assert _walk(http, str(first_minute), interval="1m", adjust="diff") == minute_walk
    finally:
        assert again.stop() == 0, again.output()


def _walk(http: httpx.Client, start: str, **params: str) -> list[dict[str, Any]]:
    """Every candle of methanol from ``start`` (daily, or ``interval``), paged with `next`: the stored part, then the
    book's or the ring's."""
    out: list[dict[str, Any]] = []
    cursor: str | None = start
    while cursor is not None:
        resp = http.get("/api/v1/kline/methanol", params={"interval": "1d", "from": cursor, "limit": 80, **params})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body.get("adjust") == params.get("adjust")
        out += body["series"]
        cursor = body["next"]
    return out


def _check_mode(http: httpx.Client, days: list[date], mode: str,
                move: Callable[[float], float]) -> list[dict[str, Any]]:
    raw = _walk(http, days[0].isoformat())
    adjusted = _walk(http, days[0].isoformat(), adjust=mode)
    held = http.get("/api/v1/kline/methanol", params={"days": 90}).json()["series"]
    assert len(raw) > len(held) and raw[-len(held):] == held  # the walk reads the stored days and the book's
    assert [c["t"] for c in raw][:len(days)] == [d.isoformat() for d in days]
    assert [c["t"] for c in raw][-2:] == ["2026-11-25", "2026-11-26"]
    for before, after in zip(raw, adjusted, strict=True):
        rolled = before["t"] >= "2026-11-26"  # the new main's days: the traded prices
        for key in ("o", "h", "l", "c"):
            want = before[key] if rolled else move(before[key])
            assert after[key] == pytest.approx(want, abs=0.5), (mode, before["t"], key)  # rounded to the tick's
            assert rolled or after[key] != before[key]
        assert after["v"] == before["v"]
    # the book's answer (memory) adjusts its days exactly as the walk through the stored history did
    in_memory = http.get("/api/v1/kline/methanol", params={"days": 90, "adjust": mode}).json()["series"]
    assert in_memory == adjusted[-len(held):]
    # UDF history: the same adjusted bars, a range below the book (stored) and one inside it (memory)
    udf_all = _udf(http, days[0], date(2026, 11, 26), mode)
    assert udf_all["c"] == [c["c"] for c in adjusted] and udf_all["o"] == [c["o"] for c in adjusted]
    inside = _udf(http, date.fromisoformat(held[0]["t"]), date(2026, 11, 26), mode)
    assert inside["c"] == [c["c"] for c in in_memory]
    return adjusted


def _check_minutes(http: httpx.Client, first_minute: int) -> list[dict[str, Any]]:
    """1m: the stored minutes below the ring, the ring's and the live ones adjust alike; an intraday bar belongs to
    its bucket start's trading day (Wednesday 14:49 is before the roll, Wednesday 15:01 is Thursday's)."""
    raw = _walk(http, str(first_minute), interval="1m")
    adjusted = _walk(http, str(first_minute), interval="1m", adjust="diff")
    ring = http.get("/api/v1/kline/methanol", params={"interval": "1m", "limit": 1000, "adjust": "diff"}).json()
    assert len(raw) == 1103 and len(ring["series"]) == 1000 and adjusted[-1000:] == ring["series"]
    assert [c["t"][:16] for c in raw[-3:]] == ["2026-11-25T14:49", "2026-11-25T14:50", "2026-11-25T15:01"]
    for before, after in zip(raw, adjusted, strict=True):
        shift = 0.0 if before["t"] >= "2026-11-25T15:00" else 60.0
        assert [after[k] for k in "ohlc"] == [before[k] + shift for k in "ohlc"], before["t"]
        assert after["v"] == before["v"]
    udf = http.get("/api/v1/udf/history", params={"symbol": "methanol", "resolution": "1", "from": first_minute // 1000,
                                                  "to": first_minute // 1000 + 7 * 86400, "adjust": "diff"}).json()
    assert udf["c"] == [c["c"] for c in adjusted]  # UDF's window reaches the stored minutes too
    return adjusted


def _udf(http: httpx.Client, first: date, last: date, mode: str) -> dict[str, Any]:
    def at(d: date) -> int:
        return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp())

    resp = http.get("/api/v1/udf/history", params={"symbol": "methanol", "resolution": "1D", "from": at(first),
                                                   "to": at(last), "adjust": mode})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["s"] == "ok" and not any(math.isnan(c) for c in body["c"])
    return body  # type: ignore[no-any-return]
