"""Enterprise first-response targets on business hours (SPEC 20, server/store/support/hours.py): fixed datetimes in
Asia/Shanghai, SHFE's day calendar (chinese-calendar's 2026 holidays), no clock of today."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from server.market.timefmt import TZ
from server.store.accounts.console import Account, Role, SqliteDb
from server.store.sql.db import open_db
from server.store.support.hours import SupportHours
from server.store.support.repo import Tickets
from server.store.support.response import month_bounds, support_response
from server.store.support.tickets import Ticket, TicketStatus, first_response_met


@pytest.fixture(scope="module")
def hours() -> SupportHours:
    return SupportHours.load()


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=TZ).timestamp()


def local(ts: float | None) -> str:
    assert ts is not None
    return datetime.fromtimestamp(ts, TZ).strftime("%Y-%m-%d %H:%M")


def test_a_friday_afternoon_ticket_is_due_the_next_business_day(hours: SupportHours) -> None:
    # Friday 2026-09-18 16:30: 30 minutes that day, the other 7 h 30 on Monday 09:00-16:30
    assert local(hours.first_response_due(at("2026-09-18 16:30"), 2, "enterprise")) == "2026-09-21 16:30"
    assert local(hours.first_response_due(at("2026-09-18 16:30"), 3, "enterprise")) == "2026-09-21 16:30"


def test_a_holiday_is_skipped(hours: SupportHours) -> None:
    # Thursday 2026-09-24 16:30; Friday 25 is the Mid-Autumn Festival (the exchanges close), then the weekend
    assert not hours.is_business_day(datetime(2026, 9, 25).date())
    assert local(hours.first_response_due(at("2026-09-24 16:30"), 2, "enterprise")) == "2026-09-28 16:30"
    # the National Day week: opened Wednesday 30 September at 12:00, 5 h that day, 3 h after the holiday (8 Oct)
    assert local(hours.first_response_due(at("2026-09-30 12:00"), 2, "enterprise")) == "2026-10-08 12:00"


def test_hours_outside_the_desk_start_at_the_next_opening(hours: SupportHours) -> None:
    assert local(hours.first_response_due(at("2026-11-24 07:00"), 2, "enterprise")) == "2026-11-24 17:00"
    assert local(hours.first_response_due(at("2026-11-24 17:00"), 2, "enterprise")) == "2026-11-25 17:00"
    assert local(hours.first_response_due(at("2026-11-28 10:00"), 2, "enterprise")) == "2026-11-30 17:00"  # Sat


def test_severity_one_is_an_hour_round_the_clock_and_other_plans_have_no_target(hours: SupportHours) -> None:
    assert local(hours.first_response_due(at("2026-09-25 23:30"), 1, "enterprise")) == "2026-09-26 00:30"
    assert hours.first_response_due(at("2026-09-18 16:30"), 2, "professional") is None
    assert hours.first_response_due(at("2026-09-18 16:30"), 1, "free") is None


def _ticket(due: float | None, answered: float | None) -> Ticket:
    return Ticket("tkt_1", "usr_1", None, "s", 2, TicketStatus.OPEN, "enterprise", 0.0, 0.0, None, due, answered, 1)


def test_met_missed_and_pending() -> None:
    assert first_response_met(_ticket(100.0, 100.0), 500.0) is True
    assert first_response_met(_ticket(100.0, 100.5), 500.0) is False
    assert first_response_met(_ticket(100.0, None), 100.0) is None  # still due
    assert first_response_met(_ticket(100.0, None), 100.5) is False  # passed unanswered
    assert first_response_met(_ticket(None, None), 1e12) is None


def test_support_response_reports_a_month_per_account(tmp_path: Path, hours: SupportHours) -> None:
    conn: sqlite3.Connection = open_db(tmp_path)
    try:
        tickets = Tickets(SqliteDb(conn))
        acme = Account("usr_acme", "a@acme.example", None, None, "enterprise", Role.CUSTOMER, 6000, 0.0, None)
        free = Account("usr_free", "f@x.example", None, None, "free", Role.CUSTOMER, None, 0.0, None)
        opened = at("2026-09-18 16:30")
        quick, _ = tickets.open(acme, "feed down", "no ticks", 1, hours.first_response_due(opened, 1, "enterprise"),
                                opened, (), mail=False)
        slow, _ = tickets.open(acme, "question", "how?", 2, hours.first_response_due(opened, 2, "enterprise"),
                               opened + 1, (), mail=False)
        tickets.open(free, "hello", "hi", 2, None, opened, (), mail=False)  # no target: not reported
        tickets.open(acme, "october", "x", 3, hours.first_response_due(at("2026-10-09 10:00"), 3, "enterprise"),
                     at("2026-10-09 10:00"), (), mail=False)  # another month
        tickets.reply(quick.id, None, "on it", opened + 1800, (), mail=False)  # 30 minutes: met
        tickets.reply(slow.id, None, "answer", at("2026-09-22 09:00"), (), mail=False)  # Tuesday: missed
        report = support_response(tickets.db, "2026-09", acme.id, at("2026-10-01 00:00"))
        assert (report["tickets"], report["met"], report["missed"], report["pending"]) == (2, 1, 1, 0)
        assert [i["firstResponseMet"] for i in report["items"]] == [True, False]
        assert report["items"][0]["responseSeconds"] == 1800.0
        assert support_response(tickets.db, "2026-09", free.id, at("2026-10-01 00:00"))["tickets"] == 0
        assert support_response(tickets.db, "2026-10", None, at("2026-10-09 11:00"))["pending"] == 1
    finally:
        conn.close()


def test_month_bounds_are_shanghai_months() -> None:
    start, end = month_bounds("2026-12")
    assert (local(start), local(end)) == ("2026-12-01 00:00", "2027-01-01 00:00")
    with pytest.raises(ValueError):
        month_bounds("2026-1")
