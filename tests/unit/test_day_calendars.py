"""Which dates a venue trades on (server/market/venues/day_calendars.py): where each calendar's knowledge starts
and ends, what is assumed outside it, the exchange notices over the packages, and the name of a closure (the
venue views and the TradingView symbol info show it). Added for what day_calendars' first mutation run left
unheld (issue 46)."""

from __future__ import annotations

import logging
from datetime import date

import pytest

from server.market.venues.calendar_notices import VenueNotices
from server.market.venues.data import VENUES
from server.market.venues.day_calendars import DayCalendar

LOGGER = "server.market.venues.day_calendars"


def test_a_prc_calendar_is_asked_from_the_first_day_of_its_first_year_and_weekdays_assumed_before(
        caplog: pytest.LogCaptureFixture) -> None:
    """chinese-calendar starts on 2004-01-01 (New Year's Day, a Thursday: shut); before it the package cannot
    answer, so 2003-12-31 (a Wednesday) is assumed open, and that is said once."""
    dce = DayCalendar(VENUES["dce"])
    assert (dce.known_from, dce.known_until) == (date(2004, 1, 1), date(2026, 12, 31))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert not dce.is_trading_day(date(2004, 1, 1))
        assert dce.is_trading_day(date(2004, 1, 2))
        assert not caplog.records
        assert dce.is_trading_day(date(2003, 12, 31))
        assert not dce.is_trading_day(date(2003, 12, 27))  # a Saturday
        assert dce.is_trading_day(date(2003, 12, 29))
    assert [r.getMessage() for r in caplog.records] == [
        "venue dce: holiday calendar known from 2004-01-01 until 2026-12-31; weekdays assumed outside it"]


def test_a_financial_calendar_is_asked_back_to_1970_and_until_its_rules_known_until(
        caplog: pytest.LogCaptureFixture) -> None:
    cme = DayCalendar(VENUES["cme"])
    assert (cme.known_from, cme.known_until) == (date(1970, 1, 1), date(2027, 12, 31))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert not cme.is_trading_day(date(2003, 12, 25))  # Christmas, before the PRC package's first year
        assert not cme.is_trading_day(date(2027, 7, 5))  # Independence Day observed, the last known year
        assert not caplog.records
        assert cme.is_trading_day(date(2028, 7, 4))  # a Tuesday past the known rules: assumed open
        assert cme.is_trading_day(date(2028, 12, 25))
    assert [r.getMessage() for r in caplog.records] == [
        "venue cme: holiday calendar known from 1970-01-01 until 2027-12-31; weekdays assumed outside it"]


def test_a_notices_known_until_extends_the_calendar_and_never_shortens_it() -> None:
    later = DayCalendar(VENUES["cme"], VenueNotices(known_until=date(2028, 12, 31)))
    assert later.known_until == date(2028, 12, 31)
    assert not later.is_trading_day(date(2028, 7, 4))  # now asked of the package
    earlier = DayCalendar(VENUES["cme"], VenueNotices(known_until=date(2026, 6, 30)))
    assert earlier.known_until == date(2027, 12, 31)


def test_notices_override_the_package_both_ways() -> None:
    notices = VenueNotices(closures={date(2026, 11, 18): "Exchange notice"}, openings={date(2026, 12, 25)})
    ice = DayCalendar(VENUES["ice-eu"], notices)
    assert not ice.is_trading_day(date(2026, 11, 18))  # a Wednesday the package has open
    assert ice.holiday_name(date(2026, 11, 18)) == "Exchange notice"
    assert ice.is_trading_day(date(2026, 12, 25))  # Christmas Day in the package, open by notice
    assert ice.holiday_name(date(2026, 12, 25)) is None
    plain = DayCalendar(VENUES["ice-eu"])
    assert (plain.is_trading_day(date(2026, 11, 18)), plain.is_trading_day(date(2026, 12, 25))) == (True, False)


def test_outside_the_known_range_each_kind_keeps_its_own_pattern() -> None:
    """A monthly venue (Saudi CP) prints on the 1st, whatever the weekday, also where no calendar is known
    (before 1970); the weekday rule is for the others."""
    saudi = DayCalendar(VENUES["saudi-cp"])
    assert saudi.is_trading_day(date(1969, 11, 1))  # a Saturday, the 1st
    assert not saudi.is_trading_day(date(1969, 11, 3))  # a Monday
    assert not saudi.is_trading_day(date(1969, 11, 2))
    assert saudi.is_trading_day(date(2026, 11, 1)) and not saudi.is_trading_day(date(2026, 11, 2))
    fx = DayCalendar(VENUES["fx"])
    assert not fx.is_trading_day(date(1969, 11, 1)) and fx.is_trading_day(date(1969, 11, 3))


@pytest.mark.parametrize(("venue", "day", "name"), [
    ("cme", date(2026, 12, 25), "Christmas Day"),  # the holidays package's name
    ("cme", date(2026, 12, 24), None),  # a trading day
    ("cme", date(2026, 12, 26), None),  # a Saturday: not a closure, a weekend
    ("ice-eu", date(2026, 4, 3), "Good Friday"),
    ("dce", date(2026, 10, 1), "National Day"),  # chinese-calendar's name
    ("dce", date(2026, 10, 3), None),  # a Saturday inside the National Day holiday
    ("dce", date(2026, 10, 9), None),
    ("cfets", date(2026, 10, 1), "National Day"),
    ("saudi-cp", date(2026, 11, 3), None),  # a monthly venue has no closures, only days it does not print
])
def test_a_closures_name_comes_from_its_calendar(venue: str, day: date, name: str | None) -> None:
    assert DayCalendar(VENUES[venue]).holiday_name(day) == name


def test_the_repository_notices_name_their_closures() -> None:
    from server.market.venues.book import VenueBook

    cme = VenueBook.load().clock("cme").days
    assert cme.holiday_name(date(2026, 7, 3)) == "Independence Day (observed)"  # not in the package for 2026
    assert DayCalendar(VENUES["cme"]).holiday_name(date(2026, 7, 3)) is None
