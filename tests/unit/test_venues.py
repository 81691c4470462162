"""SPEC 16 on fixed instants: trading days, night sessions, holidays, closing ticks, DST.

Every instant is written out with its zone; nothing reads the wall clock. The Chinese
calendars are cross-checked against chinese-calendar itself, not against our own tables.
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import chinese_calendar
import pytest

from server.market.catalogue import default_catalogue
from server.market.venues.book import VenueBook
from server.market.venues.clock import MarketStatus, VenueClock
from server.market.venues.data import INSTRUMENT_VENUES, VENUES, Publication, validate
from server.market.venues.feed import in_session, prints_between, status_changes
from server.market.venues.tick_tables import GRACE_MS

SH = ZoneInfo("Asia/Shanghai")
UTC = ZoneInfo("UTC")


def ms(*parts: int, tz: ZoneInfo = SH) -> int:
    return int(datetime(*parts, tzinfo=tz).timestamp()) * 1000


# Built afresh for each test (under a millisecond): mutmut credits a fixture's work to the test that first built
# it, so a module-scoped book hid the calendars' and clocks' construction from every later test's mutants.
@pytest.fixture
def book() -> VenueBook:
    return VenueBook.load()


@pytest.fixture
def methanol(book: VenueBook) -> VenueClock:
    return book.for_instrument("methanol")


def test_data_is_consistent_and_every_instrument_has_a_venue() -> None:
    validate()
    catalogue = default_catalogue()
    assert {inst.id for inst in catalogue.instruments} == set(INSTRUMENT_VENUES)
    for inst in catalogue.instruments:
        assert inst.venue in VENUES
        assert inst.publication == VENUES[inst.venue].publication.value
    by_id = {inst.id: inst for inst in catalogue.instruments}
    assert by_id["sc"].session == "cn-night-0230"
    assert by_id["lu"].session == "cn-night-2300"
    assert by_id["urea"].session == "cn-day"
    assert by_id["cp-propane"].publication == Publication.MONTHLY
    assert by_id["methanol-cfr"].publication == Publication.DAILY


# --- the trading-day rule ----------------------------------------------------------

def test_tuesday_night_methanol_tick_belongs_to_wednesday(methanol: VenueClock) -> None:
    assert methanol.trading_day(ms(2026, 11, 24, 21, 30)) == date(2026, 11, 25)
    assert methanol.trading_day(ms(2026, 11, 24, 14, 59)) == date(2026, 11, 24)


def test_friday_night_and_the_weekend_belong_to_monday(methanol: VenueClock) -> None:
    assert methanol.trading_day(ms(2026, 11, 27, 21, 30)) == date(2026, 11, 30)
    assert methanol.trading_day(ms(2026, 11, 28, 12, 0)) == date(2026, 11, 30)
    assert methanol.trading_day(ms(2026, 11, 29, 23, 59)) == date(2026, 11, 30)
    assert methanol.sessions(date(2026, 11, 30))[0][0] == datetime(2026, 11, 27, 21, 0, tzinfo=SH)


def test_evening_before_national_day_has_no_night_session(methanol: VenueClock) -> None:
    # 2026-10-01..07 National Day; Saturday 2026-10-10 is a make-up workday on which exchanges stay shut
    evening = ms(2026, 9, 30, 21, 30)
    assert methanol.trading_day(evening) == date(2026, 10, 8)
    assert methanol.status(evening) is MarketStatus.CLOSED
    assert methanol.next_open(evening) == ms(2026, 10, 8, 9, 0)
    assert methanol.sessions(date(2026, 10, 8))[0][0] == datetime(2026, 10, 8, 9, 0, tzinfo=SH)
    assert len(methanol.sessions(date(2026, 10, 8))) == 3
    assert methanol.trading_days(date(2026, 9, 30), date(2026, 10, 12)) == [
        date(2026, 9, 30), date(2026, 10, 8), date(2026, 10, 9), date(2026, 10, 12)]
    assert not methanol.is_trading_day(date(2026, 10, 10))
    # the Friday 10-09 evening before Monday 10-12 follows a plain weekend: night held
    assert methanol.sessions(date(2026, 10, 12))[0][0] == datetime(2026, 10, 9, 21, 0, tzinfo=SH)


def test_mid_autumn_friday_and_dragon_boat_are_shut(methanol: VenueClock) -> None:
    assert not methanol.is_trading_day(date(2026, 9, 25))
    assert methanol.trading_day(ms(2026, 9, 24, 21, 30)) == date(2026, 9, 28)
    assert len(methanol.sessions(date(2026, 9, 28))) == 3  # no night before the Monday after a holiday
    assert not methanol.is_trading_day(date(2026, 6, 19))
    assert methanol.trading_day(ms(2026, 6, 18, 21, 30)) == date(2026, 6, 22)
    assert methanol.status(ms(2026, 6, 19, 10, 0)) is MarketStatus.CLOSED


@pytest.mark.parametrize(("evening", "belongs_to", "next_open"), [
    # Spring Festival 2026-02-15..23 (Saturday 02-14 and 02-28 are make-up workdays: exchanges shut)
    ((2026, 2, 13, 21, 30), date(2026, 2, 24), (2026, 2, 24, 9, 0)),
    # Qingming: Monday 2026-04-06 shut; Friday 04-03 has no night session (the gap is Sat, Sun, Mon)
    ((2026, 4, 3, 21, 30), date(2026, 4, 7), (2026, 4, 7, 9, 0)),
    # Labour Day 2026-05-01..05: Thursday 04-30 has no night session
    ((2026, 4, 30, 21, 30), date(2026, 5, 6), (2026, 5, 6, 9, 0)),
    # the first ordinary evening after it has one again
    ((2026, 5, 6, 21, 30), date(2026, 5, 7), (2026, 5, 7, 9, 0)),
])
def test_no_night_session_before_a_holiday(
    book: VenueBook, evening: tuple[int, ...], belongs_to: date, next_open: tuple[int, ...],
) -> None:
    for instrument in ("sc", "methanol", "pp", "fu"):
        clock = book.for_instrument(instrument)
        assert clock.trading_day(ms(*evening)) == belongs_to, instrument
        held = belongs_to == date(2026, 5, 7)
        assert clock.status(ms(*evening)) is (MarketStatus.OPEN if held else MarketStatus.CLOSED), instrument
        if not held:
            assert clock.next_open(ms(*evening)) == ms(*next_open), instrument


def test_sc_night_session_past_midnight(book: VenueBook) -> None:
    sc = book.for_instrument("sc")
    assert sc.trading_day(ms(2026, 11, 23, 21, 30)) == date(2026, 11, 24)
    assert sc.trading_day(ms(2026, 11, 24, 1, 30)) == date(2026, 11, 24)
    assert sc.status(ms(2026, 11, 24, 1, 30)) is MarketStatus.OPEN
    assert book.for_instrument("methanol").status(ms(2026, 11, 24, 1, 30)) is MarketStatus.CLOSED
    assert sc.trading_day(ms(2026, 11, 28, 1, 30)) == date(2026, 11, 30)  # Saturday 01:30: Friday's night
    assert sc.status(ms(2026, 11, 28, 1, 30)) is MarketStatus.OPEN
    assert sc.next_close(ms(2026, 11, 28, 1, 30)) == ms(2026, 11, 28, 2, 30)


def test_product_sessions_differ_on_one_exchange(book: VenueBook) -> None:
    assert book.for_instrument("urea").status(ms(2026, 11, 24, 21, 30)) is MarketStatus.CLOSED
    assert book.for_instrument("urea").trading_day(ms(2026, 11, 24, 21, 30)) == date(2026, 11, 25)
    assert book.for_instrument("lu").status(ms(2026, 11, 24, 23, 30)) is MarketStatus.CLOSED
    assert book.for_instrument("sc").status(ms(2026, 11, 24, 23, 30)) is MarketStatus.OPEN


# --- closing ticks, status ---------------------------------------------------------

@pytest.mark.parametrize(("hh", "mm"), [(10, 15), (11, 30), (15, 0), (23, 0)])
def test_closing_tick_joins_the_last_bucket(methanol: VenueClock, hh: int, mm: int) -> None:
    end = ms(2026, 11, 24, hh, mm)
    assert methanol.bucket_ts(end) == end - 1
    assert methanol.bucket_ts(end + GRACE_MS - 1) == end - 1
    assert methanol.bucket_ts(end + GRACE_MS) == end + GRACE_MS
    assert methanol.bucket_ts(end - 1) == end - 1
    assert (methanol.bucket_ts(end) // 60_000) * 60_000 == end - 60_000  # the HH:MM-1 1m bucket


def test_closing_tick_at_15_00_stays_on_its_trading_day(methanol: VenueClock) -> None:
    assert methanol.trading_day(ms(2026, 11, 24, 15, 0)) == date(2026, 11, 24)
    assert methanol.trading_day(ms(2026, 11, 24, 15, 0) + GRACE_MS - 1) == date(2026, 11, 24)
    assert methanol.trading_day(ms(2026, 11, 24, 15, 1)) == date(2026, 11, 25)


def test_status_open_break_closed(methanol: VenueClock) -> None:
    assert methanol.status(ms(2026, 11, 24, 9, 30)) is MarketStatus.OPEN
    assert methanol.status(ms(2026, 11, 24, 10, 20)) is MarketStatus.BREAK
    assert methanol.status(ms(2026, 11, 24, 12, 0)) is MarketStatus.BREAK
    assert methanol.status(ms(2026, 11, 24, 16, 0)) is MarketStatus.CLOSED
    assert methanol.status(ms(2026, 11, 24, 21, 0)) is MarketStatus.OPEN
    assert methanol.status(ms(2026, 11, 28, 12, 0)) is MarketStatus.CLOSED
    assert methanol.next_open(ms(2026, 11, 24, 10, 20)) == ms(2026, 11, 24, 10, 30)
    assert methanol.next_close(ms(2026, 11, 24, 10, 20)) == ms(2026, 11, 24, 11, 30)
    assert methanol.next_open(ms(2026, 11, 28, 12, 0)) == ms(2026, 11, 30, 9, 0)  # Friday night already over


# --- other venues: DST, assessments, monthly, FX -----------------------------------

def test_ice_futures_europe_across_london_dst(book: VenueBook) -> None:
    brent = book.for_instrument("brent")
    assert brent.windows(date(2026, 3, 27))[0].start_ms == ms(2026, 3, 27, 1, 0, tz=UTC)  # GMT
    assert brent.windows(date(2026, 3, 31))[0].start_ms == ms(2026, 3, 31, 0, 0, tz=UTC)  # 01:00 BST
    # Monday opens at 23:00 on Sunday: 2026-03-29 is the day the clocks go forward
    assert brent.windows(date(2026, 3, 30))[0].start_ms == ms(2026, 3, 29, 22, 0, tz=UTC)
    assert brent.windows(date(2026, 3, 30))[0].end_ms == ms(2026, 3, 30, 22, 0, tz=UTC)
    assert brent.status(ms(2026, 3, 29, 22, 30, tz=UTC)) is MarketStatus.OPEN
    assert brent.trading_day(ms(2026, 3, 30, 22, 30, tz=UTC)) == date(2026, 3, 31)  # 23:30 BST
    assert brent.trading_day(ms(2026, 3, 27, 22, 30, tz=UTC)) == date(2026, 3, 27)  # 22:30 GMT
    assert brent.windows(date(2026, 10, 23))[0].end_ms == ms(2026, 10, 23, 22, 0, tz=UTC)
    assert brent.windows(date(2026, 10, 26))[0].start_ms == ms(2026, 10, 25, 23, 0, tz=UTC)  # GMT again
    assert brent.windows(date(2026, 10, 26))[0].end_ms == ms(2026, 10, 26, 23, 0, tz=UTC)
    assert brent.trading_day(ms(2026, 10, 26, 22, 30, tz=UTC)) == date(2026, 10, 26)
    assert not brent.is_trading_day(date(2026, 4, 3))  # Good Friday


def test_cme_globex_across_chicago_dst(book: VenueBook) -> None:
    wti = book.for_instrument("wti")
    assert wti.windows(date(2026, 3, 6))[0].start_ms == ms(2026, 3, 5, 23, 0, tz=UTC)  # 17:00 CST
    assert wti.windows(date(2026, 3, 9))[0].start_ms == ms(2026, 3, 8, 22, 0, tz=UTC)  # 17:00 CDT
    assert wti.windows(date(2026, 3, 9))[0].end_ms == ms(2026, 3, 9, 21, 0, tz=UTC)
    assert wti.trading_day(ms(2026, 3, 9, 21, 0, 30, tz=UTC)) == date(2026, 3, 9)  # closing tick
    assert wti.trading_day(ms(2026, 3, 9, 21, 1, tz=UTC)) == date(2026, 3, 10)
    assert wti.status(ms(2026, 3, 9, 21, 30, tz=UTC)) is MarketStatus.BREAK  # the daily 60-minute halt
    assert wti.windows(date(2026, 11, 2))[0].start_ms == ms(2026, 11, 1, 23, 0, tz=UTC)  # CST again
    assert wti.windows(date(2026, 10, 30))[0].end_ms == ms(2026, 10, 30, 21, 0, tz=UTC)
    assert not wti.is_trading_day(date(2026, 11, 26))  # Thanksgiving
    assert not wti.is_trading_day(date(2026, 7, 3))  # the repository's notice: Independence Day observed


def test_assessments_print_once_per_trading_day(book: VenueBook) -> None:
    cfr = book.for_instrument("methanol-cfr")
    assert [(s.hour, e.hour, e.minute) for s, e in cfr.sessions(date(2026, 11, 24))] == [(16, 17, 0)]
    assert not cfr.is_trading_day(date(2026, 10, 5))
    assert cfr.trading_day(ms(2026, 9, 30, 18, 0)) == date(2026, 10, 8)
    sg = book.for_instrument("fo380-sg")
    assert sg.sessions(date(2026, 11, 24))[0][1] == datetime(2026, 11, 24, 16, 30, tzinfo=ZoneInfo("Asia/Singapore"))
    assert not sg.is_trading_day(date(2026, 8, 10))  # Singapore National Day (observed)


def test_saudi_cp_is_monthly(book: VenueBook) -> None:
    cp = book.for_instrument("cp-propane")
    riyadh = ZoneInfo("Asia/Riyadh")
    assert cp.trading_days(date(2026, 1, 1), date(2026, 12, 31)) == [date(2026, m, 1) for m in range(1, 13)]
    assert cp.trading_day(ms(2026, 11, 30, 15, 30, tz=riyadh)) == date(2026, 12, 1)  # announced for December
    assert cp.trading_day(ms(2026, 12, 1, 10, 0, tz=riyadh)) == date(2026, 12, 1)
    assert cp.sessions(date(2026, 12, 1)) == [(datetime(2026, 11, 30, 15, 0, tzinfo=riyadh),
                                               datetime(2026, 11, 30, 15, 30, tzinfo=riyadh))]


def test_fx_rolls_at_17_new_york_and_cfets_trades_make_up_saturdays(book: VenueBook) -> None:
    fx = book.for_instrument("eurusd")
    ny = ZoneInfo("America/New_York")
    assert fx.trading_day(ms(2026, 11, 24, 16, 59, tz=ny)) == date(2026, 11, 24)
    assert fx.trading_day(ms(2026, 11, 24, 17, 0, tz=ny)) == date(2026, 11, 25)  # no grace into the next day
    assert fx.status(ms(2026, 11, 28, 12, 0, tz=ny)) is MarketStatus.CLOSED
    cfets = book.for_instrument("usdcny")
    assert cfets.is_trading_day(date(2026, 10, 10))  # 调休 Saturday: CFETS trades, futures do not
    assert not book.for_instrument("methanol").is_trading_day(date(2026, 10, 10))
    assert cfets.trading_day(ms(2026, 11, 25, 2, 0)) == date(2026, 11, 24)  # 09:30 to 03:00 next day


# --- the lookup table equals the rule ------------------------------------------------

def _by_definition(clock: VenueClock, ts: int) -> date:
    day = clock.local_date(ts) - timedelta(days=3)
    while True:
        if clock.is_trading_day(day):
            following = day + timedelta(days=1)
            while not clock.is_trading_day(following):
                following += timedelta(days=1)
            cut = clock.close_ms(day) + GRACE_MS
            next_start = clock.windows(following)[0].start_ms
            if min(cut, next_start) > ts:
                return day
        day += timedelta(days=1)


@pytest.mark.parametrize("instrument", ["methanol", "sc", "wti", "brent", "eurusd", "usdcny", "methanol-cfr"])
def test_lookup_table_matches_the_definition(book: VenueBook, instrument: str) -> None:
    clock = book.for_instrument(instrument)
    start = ms(2026, 9, 20, 0, 0, tz=UTC)
    for ts in range(start, start + 40 * 86_400_000, 7 * 60_000 + 13_000):
        assert clock.trading_day(ts) == _by_definition(clock, ts), ts


@pytest.mark.parametrize("venue", ["shfe", "ine", "dce", "zce", "spot-ec", "spot-cfr-cn"])
def test_chinese_trading_days_equal_chinese_calendar(book: VenueBook, venue: str) -> None:
    start, end = date(2026, 8, 1), date(2026, 10, 29)  # 90 days holding Mid-Autumn and National Day
    expected = [start + timedelta(days=i) for i in range(90)
                if chinese_calendar.is_workday(start + timedelta(days=i)) and (start + timedelta(days=i)).weekday() < 5]
    assert book.clock(venue).trading_days(start, end) == expected
    assert len(expected) == 58  # 65 weekdays less 2026-09-25 and 2026-10-01, 02, 05, 06, 07


def test_past_the_known_calendar_weekdays_are_assumed_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    book = VenueBook.load()
    zce = book.clock("zce")
    assert book.known_until("zce") == date(2026, 12, 31)
    with caplog.at_level(logging.WARNING, logger="server.market.venues.day_calendars"):
        assert zce.is_trading_day(date(2026, 12, 31))
        assert not caplog.records
        assert zce.is_trading_day(date(2027, 1, 1))  # a Friday; the 2027 notice is not in the package yet
        assert not zce.is_trading_day(date(2027, 1, 2))
        assert zce.trading_day(ms(2027, 2, 5, 21, 30)) == date(2027, 2, 8)
        zce.status(ms(2027, 3, 1, 10, 0))
    lines = [r for r in caplog.records if "zce" in r.getMessage()]
    assert len(lines) == 1
    assert "2026-12-31" in lines[0].getMessage() and "weekdays assumed" in lines[0].getMessage()


# --- what a feed and a candle history ask ------------------------------------------

def test_trading_days_back_skip_shut_days(methanol: VenueClock, book: VenueBook) -> None:
    assert methanol.trading_days_back(date(2026, 10, 10), 4) == [
        date(2026, 9, 29), date(2026, 9, 30), date(2026, 10, 8), date(2026, 10, 9)]
    assert methanol.trading_days_back(date(2026, 10, 8), 0) == []
    wti = book.for_instrument("wti")  # CME trades through National Day
    assert wti.trading_days_back(date(2026, 10, 7), 3) == [date(2026, 10, 5), date(2026, 10, 6), date(2026, 10, 7)]
    with pytest.raises(ValueError):
        methanol.trading_days_back(date(2026, 10, 8), -1)


def test_assessments_print_once_at_their_time_and_futures_move_in_session(book: VenueBook) -> None:
    cfr = book.for_instrument("methanol-cfr")
    week = prints_between(cfr, ms(2026, 9, 28, 0, 0), ms(2026, 10, 9, 23, 59))
    assert week == [(ms(2026, 9, 28, 17, 0), date(2026, 9, 28)), (ms(2026, 9, 29, 17, 0), date(2026, 9, 29)),
                    (ms(2026, 9, 30, 17, 0), date(2026, 9, 30)), (ms(2026, 10, 8, 17, 0), date(2026, 10, 8)),
                    (ms(2026, 10, 9, 17, 0), date(2026, 10, 9))]
    assert prints_between(cfr, ms(2026, 9, 28, 17, 0), ms(2026, 9, 29, 16, 59)) == []
    cp = book.for_instrument("cp-propane")
    riyadh = ZoneInfo("Asia/Riyadh")
    assert prints_between(cp, ms(2026, 10, 15, 0, 0), ms(2026, 12, 15, 0, 0)) == [
        (ms(2026, 10, 31, 15, 30, tz=riyadh), date(2026, 11, 1)),
        (ms(2026, 11, 30, 15, 30, tz=riyadh), date(2026, 12, 1))]
    assert prints_between(book.for_instrument("methanol"), ms(2026, 9, 28, 0, 0), ms(2026, 10, 9, 0, 0)) == []
    methanol = book.for_instrument("methanol")
    assert in_session(methanol, ms(2026, 11, 24, 9, 30))
    assert not in_session(methanol, ms(2026, 11, 24, 12, 0))
    assert not in_session(methanol, ms(2026, 11, 28, 9, 30))


def test_every_chinese_instruments_90_day_history_equals_chinese_calendar(book: VenueBook) -> None:
    end = date(2026, 10, 29)
    span = [end - timedelta(days=k) for k in range(89, -1, -1)]
    expected = [d for d in span if chinese_calendar.is_workday(d) and d.weekday() < 5]
    chinese = [iid for iid, (venue, _) in INSTRUMENT_VENUES.items()
               if venue in ("shfe", "ine", "dce", "zce", "spot-ec", "spot-cfr-cn")]
    assert len(chinese) == 28
    for iid in chinese:
        assert book.for_instrument(iid).trading_days_back(end, len(expected)) == expected, iid


def test_status_changes_for_the_websocket_status_frame(book: VenueBook) -> None:
    methanol = book.for_instrument("methanol")
    changes = status_changes(methanol, ms(2026, 11, 24, 8, 0), ms(2026, 11, 25, 0, 0))
    o, b, c = MarketStatus.OPEN, MarketStatus.BREAK, MarketStatus.CLOSED
    assert changes == [(ms(2026, 11, 24, 9, 0), o), (ms(2026, 11, 24, 10, 15), b), (ms(2026, 11, 24, 10, 30), o),
                       (ms(2026, 11, 24, 11, 30), b), (ms(2026, 11, 24, 13, 30), o), (ms(2026, 11, 24, 15, 0), c),
                       (ms(2026, 11, 24, 21, 0), o), (ms(2026, 11, 24, 23, 0), c)]
    # inside a window at the start: no open announced for it, its end is
    assert status_changes(methanol, ms(2026, 11, 24, 9, 30), ms(2026, 11, 24, 10, 20)) == [
        (ms(2026, 11, 24, 10, 15), b)]
    # the evening before National Day: nothing until 2026-10-08 09:00
    assert status_changes(methanol, ms(2026, 9, 30, 15, 30), ms(2026, 10, 8, 9, 0)) == [(ms(2026, 10, 8, 9, 0), o)]
    wti = book.for_instrument("wti")  # CME's daily halt is a break; Friday 16:00 CT closes
    assert status_changes(wti, ms(2026, 11, 26, 0, 0, tz=UTC), ms(2026, 11, 28, 0, 0, tz=UTC)) == [
        (ms(2026, 11, 26, 23, 0, tz=UTC), o), (ms(2026, 11, 27, 22, 0, tz=UTC), c)]


def test_a_window_is_half_open_and_the_next_open_or_close_is_strictly_later(methanol: VenueClock) -> None:
    """clock.py's first mutation run: no test stood on a window's exact edges. A window is [start, end): open at
    its first millisecond, not at its end; the next open or close asked at an edge is the following one."""
    day = date(2026, 11, 24)  # a Tuesday: ZCE's night (of Monday), morning and afternoon windows
    windows = methanol.windows(day)
    assert len(windows) >= 3 and all(w.day == day for w in windows)
    first, second = windows[0], windows[1]
    assert methanol.status(first.start_ms) is MarketStatus.OPEN
    assert methanol.status(first.start_ms - 1) is not MarketStatus.OPEN
    assert methanol.status(first.end_ms - 1) is MarketStatus.OPEN
    assert methanol.status(first.end_ms) is not MarketStatus.OPEN
    assert methanol.next_open(first.start_ms) == second.start_ms
    assert methanol.next_open(first.start_ms - 1) == first.start_ms
    assert methanol.next_close(first.end_ms) == second.end_ms
    assert methanol.next_close(first.end_ms - 1) == first.end_ms
    with pytest.raises(ValueError, match=r"^n must be >= 0$"):
        methanol.trading_days_back(day, -1)


def test_before_the_first_window_after_a_long_holiday_the_market_is_closed(methanol: VenueClock) -> None:
    """No window in the three days looked back (National Day, and no night session on its eve): nothing to
    measure a break from, so closed until the first window, then open (clock.py's mutation run)."""
    first = methanol.windows(date(2026, 10, 8))[0]
    assert methanol.local(first.start_ms).strftime("%m-%d %H:%M") == "10-08 09:00"
    assert methanol.status(ms(2026, 10, 8, 8, 0)) is MarketStatus.CLOSED
    assert methanol.status(first.start_ms - 1) is MarketStatus.CLOSED
    assert methanol.status(first.start_ms) is MarketStatus.OPEN
    assert methanol.next_open(ms(2026, 10, 8, 8, 0)) == first.start_ms
