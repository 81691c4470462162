"""The calendar endpoint's data and TradingView's session fields, on fixed dates."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from server.market.venues.book import VenueBook
from server.market.venues.tradingview import chart_hours
from server.market.venues.views import CalendarRangeError, calendar, venue_summary


@pytest.fixture(scope="module")
def book() -> VenueBook:
    return VenueBook.load()


def test_calendar_lists_trading_days_sessions_and_holidays(book: VenueBook) -> None:
    doc = calendar(book.clock("ine"), date(2026, 9, 28), date(2026, 10, 9))
    assert (doc["venue"], doc["from"], doc["to"]) == ("ine", "2026-09-28", "2026-10-09")
    assert [d["date"] for d in doc["days"]] == ["2026-09-28", "2026-09-29", "2026-09-30", "2026-10-08", "2026-10-09"]
    tuesday = doc["days"][1]["sessions"]
    assert tuesday[0] == {"start": "2026-09-28T21:00:00+08:00", "end": "2026-09-29T02:30:00+08:00"}
    assert tuesday[-1] == {"start": "2026-09-29T13:30:00+08:00", "end": "2026-09-29T15:00:00+08:00"}
    assert doc["days"][3]["sessions"][0]["start"] == "2026-10-08T09:00:00+08:00"  # no night before it
    assert [h["date"] for h in doc["holidays"]] == [f"2026-10-0{d}" for d in (1, 2, 5, 6, 7)]
    assert {h["name"] for h in doc["holidays"]} == {"National Day"}


def test_calendar_range_limits(book: VenueBook) -> None:
    clock = book.clock("dce")
    assert len(calendar(clock, date(2026, 1, 1), date(2026, 12, 31))["days"]) == 242  # 261 weekdays less 19 holidays
    with pytest.raises(CalendarRangeError, match="366"):
        calendar(clock, date(2025, 1, 1), date(2026, 1, 2))
    with pytest.raises(CalendarRangeError, match="before"):
        calendar(clock, date(2026, 2, 1), date(2026, 1, 1))


def test_calendar_offsets_follow_dst(book: VenueBook) -> None:
    doc = calendar(book.clock("cme"), date(2026, 3, 6), date(2026, 3, 9))
    assert doc["days"][0]["sessions"] == [{"start": "2026-03-05T17:00:00-06:00", "end": "2026-03-06T16:00:00-06:00"}]
    assert doc["days"][1]["sessions"] == [{"start": "2026-03-08T17:00:00-05:00", "end": "2026-03-09T16:00:00-05:00"}]


CN_DAY = "0900-1015,1030-1130,1330-1500"
YEAR = (date(2026, 1, 1), date(2026, 12, 31))


@pytest.mark.parametrize(("instrument", "session"), [
    # a night session starts on the evening before (F), Monday's on Friday's (F3): the library's grammar
    ("sc", f"2100F-0230,{CN_DAY}:3456|2100F3-0230,{CN_DAY}:2"),
    ("methanol", f"2100F-2300,{CN_DAY}:3456|2100F3-2300,{CN_DAY}:2"),
    ("urea", f"{CN_DAY}:23456"),
    ("wti", "1700F-1600:23456"),
    ("brent", "0100-2300:3456|2300F-2300:2"),
    ("ttf", "0800-1800:23456"),
    ("usdcny", "0930F-0300:34567"),  # 09:30 to 03:00 the next day: written on the day it ends
    ("methanol-cfr", "1630-1700:23456"),
    ("jkm", "1600-1630:23456"),
    ("cp-propane", "24x7"),  # a monthly price has no weekly hours
])
def test_udf_session(book: VenueBook, instrument: str, session: str) -> None:
    assert chart_hours(book.for_instrument(instrument), *YEAR).session == session


def test_udf_session_holidays_and_corrections(book: VenueBook) -> None:
    hours = chart_hours(book.clock("zce"), date(2026, 6, 1), date(2026, 10, 31))
    assert hours.session_holidays == "20260619,20260925,20261001,20261002,20261005,20261006,20261007"
    # no night session before the first trading day after a holiday (SPEC 16)
    assert hours.corrections == f"{CN_DAY}:20260622,20260928,20261008"
    assert hours.closures[0] == (date(2026, 6, 19), "Dragon Boat Festival")
    assert chart_hours(book.clock("cme"), *YEAR).corrections == ""  # its hours do not depend on the day before


def test_a_run_time_file_adds_closures_and_cancels_a_night(tmp_path: Path) -> None:
    extra = tmp_path / "notices.toml"
    extra.write_text(
        '[[closure]]\nvenue = ["dce", "zce"]\ndate = 2026-12-30\nname = "Exchange notice"\n'
        '[[night_cancelled]]\nvenue = "zce"\ndate = 2026-12-02\n', encoding="utf-8")
    book = VenueBook.load(extra)
    assert not book.clock("dce").is_trading_day(date(2026, 12, 30))
    assert book.clock("shfe").is_trading_day(date(2026, 12, 30))
    zce = book.clock("zce")
    assert len(zce.sessions(date(2026, 12, 2))) == 3
    assert len(zce.sessions(date(2026, 12, 3))) == 4
    assert calendar(zce, date(2026, 12, 30), date(2026, 12, 30))["holidays"] == [
        {"date": "2026-12-30", "name": "Exchange notice"}]


def test_venue_summary_on_a_saturday(book: VenueBook) -> None:
    ids = book.instruments_of("zce", ["methanol", "brent", "urea", "pta"])
    saturday_noon = int(datetime(2026, 11, 28, 12, 0, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()) * 1000
    doc = venue_summary(book.clock("zce"), saturday_noon, book.known_until("zce"), ids)
    assert doc == {
        "id": "zce", "name": {"zh": "郑州商品交易所", "en": "Zhengzhou Commodity Exchange"},
        "timeZone": "Asia/Shanghai", "publication": "continuous", "status": "closed", "tradingDay": "2026-11-30",
        "nextOpen": "2026-11-30T09:00:00.000+08:00", "nextClose": "2026-11-30T10:15:00.000+08:00",
        "calendarKnownFrom": "2004-01-01", "calendarKnownUntil": "2026-12-31",
        "instruments": ["methanol", "urea", "pta"],
    }
