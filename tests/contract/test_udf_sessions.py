"""UDF symbol info read the way the TradingView Charting Library reads it (SPEC 14, issue 40), on a real server.

The parser below is written from the library's documented grammar, not from the server's code: a window is
`HHMM-HHMM`, its start on the chart's day, or `F` (one day) / `Fn` (n days) before it, or, without `F`, the day
before when the start is not before the end (an overnight window); its end is the first such time after the start.
`session` is `windows:days|...` (1 = Sunday), `session_holidays` `YYYYMMDD,...` and `corrections`
`windows:YYYYMMDD,...;...`. For every venue with continuous sessions and every day of 2026 the parsed windows must
be exactly those of `/api/v1/venues/{id}/calendar` (one calendar request per venue, one server on a fixed clock).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.conftest import ServerProcess

ENGINE_NEUTRAL = "UDF session strings against the venue calendars (reference data)"

CLOCK_START = "2026-10-08T10:05:00+08:00"
YEAR_START, YEAR_END = date(2026, 1, 1), date(2026, 12, 31)
WINDOW = re.compile(r"([01]\d|2[0-3])([0-5]\d)(F(\d*))?-([01]\d|2[0-4])([0-5]\d)")
Span = tuple[datetime, datetime]


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("udf-sessions")
    feed = root / "none.jsonl"
    feed.write_text("")
    srv = ServerProcess(root / "data", "granian", "--feed", f"jsonl:{feed}", "--clock-start", CLOCK_START)
    client = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
    try:
        yield client
    finally:
        client.close()
        assert srv.stop() == 0, srv.output()


# --- the library's grammar -------------------------------------------------------------------------------------

def parse_windows(text: str, day: date, zone: ZoneInfo) -> list[Span]:
    out: list[Span] = []
    for part in text.split(","):
        m = WINDOW.fullmatch(part)
        assert m is not None, f"not the library's grammar: {part!r} in {text!r}"
        opens, closes = time(int(m[1]), int(m[2])), time(int(m[5]) % 24, int(m[6]))
        before = (int(m[4]) if m[4] else 1) if m[3] else int(opens >= closes)
        start = datetime.combine(day - timedelta(days=before), opens, tzinfo=zone)
        end_day = start.date() if closes > opens else start.date() + timedelta(days=1)
        out.append((start, datetime.combine(end_day, closes, tzinfo=zone)))
    return out


def tv_weekday(day: date) -> int:
    return (day.weekday() + 1) % 7 + 1  # 1 = Sunday


class ChartHours:
    """What a chart holds for each day after reading the symbol's three fields."""

    def __init__(self, info: dict) -> None:
        self.zone = ZoneInfo(info["timezone"])
        self.weekly: dict[int, str] = {}
        for alternative in info["session"].split("|"):
            windows, _, days = alternative.partition(":")
            for d in days or "1234567":
                assert int(d) not in self.weekly, f"weekday {d} twice in {info['session']!r}"
                self.weekly[int(d)] = windows
        self.holidays = {datetime.strptime(d, "%Y%m%d").date() for d in info["session_holidays"].split(",") if d}
        self.corrections: dict[date, str] = {}
        for item in filter(None, info["corrections"].split(";")):
            windows, _, days = item.rpartition(":")
            for d in days.split(","):
                self.corrections[datetime.strptime(d, "%Y%m%d").date()] = windows

    def windows(self, day: date) -> list[Span]:
        if day in self.holidays:
            return []
        text = self.corrections.get(day, self.weekly.get(tv_weekday(day)))
        return [] if text is None else parse_windows(text, day, self.zone)


# --- what the calendar says --------------------------------------------------------------------------------------

def calendar_days(http: httpx.Client, venue: str) -> dict[date, list[Span]]:
    """Each trading day's windows, under the date a chart can draw them on: the trading day, or the date its
    windows end when every one of them ends after it (the grammar has no end after the day: CFETS 09:30-03:00)."""
    cal = http.get(f"/api/v1/venues/{venue}/calendar", params={"from": "2025-12-31", "to": "2026-12-31"})
    assert cal.status_code == 200, cal.text
    out: dict[date, list[Span]] = {}
    for item in cal.json()["days"]:
        spans = [(datetime.fromisoformat(s["start"]), datetime.fromisoformat(s["end"])) for s in item["sessions"]]
        day = max(date.fromisoformat(item["date"]), spans[-1][1].date())
        out[day] = spans
    return out


def _day_only(spans: list[Span], day: date) -> list[Span]:
    return [(s, e) for s, e in spans if s.date() >= day]


def _night_to_2300(spans: list[Span], day: date) -> list[Span]:
    return [(s, s.replace(hour=23, minute=0)) if s.date() < day else (s, e) for s, e in spans]


# products whose hours differ from their venue's calendar (no calendar per instrument): ZCE urea trades days
# only, INE low-sulphur fuel oil's night ends at 23:00 (crude's at 02:30)
OTHER_HOURS = {"urea": _day_only, "lu": _night_to_2300}


def _instants(spans: list[Span]) -> list[tuple[float, float]]:
    return [(s.timestamp(), e.timestamp()) for s, e in spans]


def test_parsed_sessions_are_the_calendar_on_every_day_of_2026(http: httpx.Client) -> None:
    venues = [v for v in http.get("/api/v1/venues").json()["venues"] if v["publication"] == "continuous"]
    assert {"zce", "dce", "shfe", "ine", "ice-eu", "cme", "fx", "cfets"} <= {v["id"] for v in venues}
    checked: dict[str, int] = {}
    for venue in venues:
        known = min(YEAR_END, date.fromisoformat(venue["calendarKnownUntil"]))
        expected = calendar_days(http, venue["id"])
        for iid in venue["instruments"]:
            info = http.get("/api/v1/udf/symbols", params={"symbol": iid}).json()
            assert info["timezone"] == venue["timeZone"] and info["exchange"] == venue["id"].upper()
            chart, adjust = ChartHours(info), OTHER_HOURS.get(iid)
            wrong = []
            day = YEAR_START
            while day <= known:
                want = expected.get(day, [])
                want = adjust(want, day) if adjust else want
                if _instants(chart.windows(day)) != _instants(want):
                    wrong.append(f"{day}: parsed {chart.windows(day)} calendar {want}")
                day += timedelta(days=1)
            assert not wrong, f"{iid} ({venue['id']}) differs on {len(wrong)} days, first: {wrong[:3]}"
            checked[iid] = (known - YEAR_START).days + 1
    assert checked["methanol"] == checked["sc"] == 365 and set(OTHER_HOURS) <= set(checked)


def test_methanol_symbol_as_issue_40_asks(http: httpx.Client) -> None:
    info = http.get("/api/v1/udf/symbols", params={"symbol": "methanol"}).json()
    day = "0900-1015,1030-1130,1330-1500"
    # Tuesday to Friday: the night session of the evening before; Monday: Friday's (F3)
    assert info["session"] == f"2100F-2300,{day}:3456|2100F3-2300,{day}:2"
    assert {"20261001", "20261007"} <= set(info["session_holidays"].split(","))
    # the night sessions cancelled before the first trading day after a holiday
    corrected = set(re.findall(r"\d{8}", info["corrections"]))
    assert f"{day}:" in info["corrections"] and {"20260928", "20261008"} <= corrected
    assert (info["exchange"], info["listed_exchange"], info["minmov"], info["pricescale"]) == ("ZCE", "ZCE", 1, 1)
    ttf = http.get("/api/v1/udf/symbols", params={"symbol": "ttf"}).json()
    assert (ttf["minmov"], ttf["pricescale"]) == (5, 1000)  # a 0.005 EUR/MWh tick
    usdcny = http.get("/api/v1/udf/symbols", params={"symbol": "usdcny"}).json()
    assert usdcny["minmov"] == 1 and usdcny["pricescale"] >= 1000  # no product: the instrument's decimals


def _day_time(text: str) -> int:
    return int(datetime.fromisoformat(text + "T00:00:00+00:00").timestamp())


def test_timescale_marks_are_the_holiday_closures_in_range(http: httpx.Client) -> None:
    params = {"symbol": "methanol", "from": _day_time("2026-09-28"), "to": _day_time("2026-10-07"),
              "resolution": "1D"}
    marks = http.get("/api/v1/udf/timescale_marks", params=params).json()
    assert [m["time"] for m in marks] == [_day_time(d) for d in (
        "2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-07")]  # to counted in; no weekend
    assert {m["label"] for m in marks} == {"H"} and all(m["id"] and m["color"] and m["tooltip"] for m in marks)
    assert "National Day" in marks[0]["tooltip"][0]
    brent = http.get("/api/v1/udf/timescale_marks", params={**params, "symbol": "brent"}).json()
    assert brent == []  # ICE Futures Europe trades through China's National Day
    bad = http.get("/api/v1/udf/timescale_marks", params={**params, "from": params["to"] + 1})
    assert bad.status_code == 400 and bad.json()["s"] == "error" and bad.json()["errors"][0]["field"] == "to"
    missing = http.get("/api/v1/udf/timescale_marks", params={"symbol": "methanol", "to": 1})
    assert missing.status_code == 400 and missing.json()["errors"][0]["field"] == "from"
