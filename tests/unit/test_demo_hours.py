"""The demo feed keeps the venues' hours (SPEC 16, `--demo-hours sessions`), on fixed instants: a continuous
instrument moves only while its venue is in session; an assessment prints once, at its publication time."""

from __future__ import annotations

from datetime import datetime

from server.feeds import DemoSource
from server.market.catalogue import default_catalogue
from server.market.demo import DemoWalk
from server.market.tick import Tick
from server.market.venues.book import VenueBook

CAT = default_catalogue()
BOOK = VenueBook.load()
CLOCKS = [BOOK.for_instrument(inst.id) for inst in CAT.instruments]
ROW = CAT.index
CONTINUOUS = [i for i, inst in enumerate(CAT.instruments) if inst.publication == "continuous"]
PUBLISHED = [i for i, inst in enumerate(CAT.instruments) if inst.publication != "continuous"]


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def source(since: str) -> DemoSource:
    """A demo source whose previous batch was at `since`."""
    return DemoSource(DemoWalk(CAT, 7), 0.25, lambda: _ms(since) / 1000, CLOCKS)


def every_row(at_ms: int) -> list[Tick]:
    return [Tick(row, 100.0, at_ms / 1000, 1.0) for row in range(len(CAT.instruments))]


def test_in_session_instruments_move_and_a_break_stops_them() -> None:
    now = _ms("2026-11-24T10:05:00+08:00")  # a Tuesday: Chinese exchanges in their first window, ICE and CME open
    moved = {t.row for t in source("2026-11-24T10:04:59.750+08:00").in_hours(every_row(now), now)}
    assert {ROW["methanol"], ROW["sc"], ROW["brent"], ROW["wti"], ROW["usdcnh"]} <= moved
    assert not moved & set(PUBLISHED)  # an assessment never moves with the walk
    pause = _ms("2026-11-24T10:20:00+08:00")  # the 10:15-10:30 break of the Chinese exchanges
    paused = {t.row for t in source("2026-11-24T10:19:59.750+08:00").in_hours(every_row(pause), pause)}
    assert ROW["methanol"] not in paused and ROW["pp"] not in paused and ROW["brent"] in paused


def test_on_a_saturday_nothing_moves() -> None:
    now = _ms("2026-11-28T12:00:00+08:00")
    assert source("2026-11-28T11:59:59.750+08:00").in_hours(every_row(now), now) == []


def test_an_assessment_prints_once_at_its_time() -> None:
    """Over a whole trading day every daily assessment prints exactly once, stamped at its publication time,
    which belongs to that day; the next batch does not print it again."""
    demo = source("2026-11-24T00:00:00+08:00")
    end = _ms("2026-11-25T00:00:00+08:00")
    prints = demo.in_hours([], end)
    daily = [r for r in PUBLISHED if CAT.instruments[r].publication == "daily"]
    assert sorted(t.row for t in prints) == sorted(daily)
    for tick in prints:
        at = int(tick.ts * 1000)
        assert CLOCKS[tick.row].trading_day(at).isoformat() == "2026-11-24"
        assert at in [w.end_ms for w in CLOCKS[tick.row].windows(CLOCKS[tick.row].trading_day(at))]
    assert demo.in_hours([], end + 250) == []
