"""SPEC 16's trading-day rule in the market state, on fixed instants: daily candles, change and prevClose, the
roll, the demo history and the closing tick, each instrument on its own venue's days.

Every instant is fixed here (never today's date); the PRC holidays are checked against `chinese-calendar` and
the other venues' against `holidays`, not against our own tables.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import chinese_calendar
import numpy as np
import pytest

from server.market.candles.daily import CandleBook
from server.market.candles.trading_axis import VenueAxis, axis_days_back
from server.market.catalogue import default_catalogue
from server.market.state import MarketState, build_demo_state
from server.market.tick import Tick
from server.market.venues.book import VenueBook
from server.market.venues.data import INSTRUMENT_VENUES

SH = ZoneInfo("Asia/Shanghai")
CAT = default_catalogue()
VENUES = VenueBook.load()
CLOCKS = [VENUES.for_instrument(inst.id) for inst in CAT.instruments]
CHINESE = {"shfe", "ine", "dce", "zce"}


def at(*args: int) -> float:
    return datetime(*args, tzinfo=SH).timestamp()  # type: ignore[misc]


def live_state(now: float) -> MarketState:
    """A live-feed state (no demo history): a flat history at 100 on the axis up to the day before `now`'s date,
    then rolled to `now` (the days since are unopened at 100)."""
    axis = VenueAxis([c.days for c in CLOCKS])
    days = axis_days_back(axis, datetime.fromtimestamp(now, SH).date() - timedelta(days=1), 20)
    n = len(CAT.instruments)
    book = CandleBook(n, 90, axis)
    flat = np.full((n, len(days)), 100.0)
    book.load_history(days, flat, flat, flat, flat, np.zeros((n, len(days))))
    state = MarketState(CAT, book, demo=False, epoch="t", clocks=CLOCKS)
    state.roll(now)
    return state


def row(inst_id: str) -> int:
    return CAT.index[inst_id]


def candle_days(state: MarketState, inst_id: str) -> list[str]:
    return [c["t"] for c in state.kline(row(inst_id), 90)]


def test_a_tuesday_night_tick_is_wednesdays_on_zce_and_tuesdays_on_cme() -> None:
    tue_night = at(2026, 11, 17, 21, 30)  # Tuesday 21:30 Shanghai: ZCE's night session, CME's Tuesday 07:30 CT
    state = live_state(tue_night)
    state.apply([Tick(row("methanol"), 101.0, tue_night, 5.0), Tick(row("wti"), 102.0, tue_night, 3.0)])
    assert candle_days(state, "methanol")[-1] == "2026-11-18"  # Wednesday's candle
    assert candle_days(state, "wti")[-1] == "2026-11-17"  # still Tuesday in Chicago's trading day
    methanol, wti = state.quote_extended(row("methanol")), state.quote_extended(row("wti"))
    assert (methanol["tradingDay"], wti["tradingDay"]) == ("2026-11-18", "2026-11-17")
    assert methanol["open"] == 101.0 and methanol["prevClose"] == 100.0 and methanol["change"] == 1.0
    assert wti["open"] == 102.0 and wti["prevClose"] == 100.0 and wti["volume"] == 3
    # Wednesday 09:00: CME's Tuesday has closed (16:00 CT = 06:00 Shanghai), its Wednesday candle is live
    wed = at(2026, 11, 18, 9, 0)
    state.roll(wed)
    assert candle_days(state, "wti")[-2:] == ["2026-11-17", "2026-11-18"]
    assert state.quote_extended(row("wti"))["prevClose"] == 102.0  # Tuesday's close, carried into Wednesday
    assert state.quote_extended(row("methanol"))["open"] == 101.0  # the night tick opened Wednesday's candle


def test_friday_night_belongs_to_monday() -> None:
    fri_night = at(2026, 11, 20, 22, 0)
    state = live_state(fri_night)
    state.apply([Tick(row("methanol"), 99.0, fri_night, 1.0)])
    assert candle_days(state, "methanol")[-2:] == ["2026-11-20", "2026-11-23"]
    sat = at(2026, 11, 21, 12, 0)
    state.roll(sat)
    assert state.quote(row("methanol"))["tradingDay"] == "2026-11-23"
    assert "2026-11-21" not in candle_days(state, "methanol") and "2026-11-21" not in candle_days(state, "wti")


def test_the_evening_before_national_day_belongs_to_the_first_day_after_it() -> None:
    eve = at(2026, 9, 30, 21, 30)  # no night session before a holiday: still the rule names the day
    state = live_state(eve)
    state.apply([Tick(row("methanol"), 105.0, eve, 1.0)])
    days = candle_days(state, "methanol")
    first_after = next(d for d in (date(2026, 10, 1) + timedelta(days=k) for k in range(20))
                       if chinese_calendar.is_workday(d) and d.weekday() < 5)
    assert days[-1] == first_after.isoformat() == "2026-10-08"
    assert not [d for d in days if "2026-10-01" <= d < "2026-10-08"]
    assert days[-2] == "2026-09-30"


def test_the_mid_autumn_friday_has_no_chinese_candle_but_a_cme_one() -> None:
    state = live_state(at(2026, 9, 29, 12, 0))
    assert "2026-09-25" not in candle_days(state, "methanol")
    assert "2026-09-25" in candle_days(state, "wti")
    assert "2026-09-24" in candle_days(state, "methanol") and "2026-09-28" in candle_days(state, "methanol")


def test_a_closing_tick_makes_no_lone_bar() -> None:
    state = live_state(at(2026, 11, 18, 10, 0))
    r = row("methanol")
    state.apply([Tick(r, 101.0, at(2026, 11, 18, 10, 14, 30), 1.0), Tick(r, 102.0, at(2026, 11, 18, 10, 15), 1.0)])
    bars = state.kline_intraday(r, "1m", 10)
    assert [b["t"][11:16] for b in bars] == ["10:14"] and bars[0]["c"] == 102.0


def test_the_demo_history_keeps_each_venues_trading_days() -> None:
    """SPEC 16: 90 days of demo history, no candle on a shut day and no trading day missing, checked against
    chinese-calendar for the Chinese exchanges."""
    now = at(2026, 10, 20, 11, 0)
    state, _ = build_demo_state(CAT, 3, now, clocks=CLOCKS)
    for inst in CAT.instruments:
        venue = INSTRUMENT_VENUES[inst.id][0]
        if venue not in CHINESE:
            continue
        days = [date.fromisoformat(c["t"]) for c in state.kline(row(inst.id), 90)]
        assert days[-1] == date(2026, 10, 20)
        span = [days[0] + timedelta(days=k) for k in range((days[-1] - days[0]).days + 1)]
        expected = [d for d in span if d.weekday() < 5 and chinese_calendar.is_workday(d)]
        assert days == expected, inst.id
    wti = [c["t"] for c in state.kline(row("wti"), 90)]
    assert "2026-10-01" in wti and "2026-10-02" in wti  # CME trades through China's National Day
    for inst in CAT.instruments:  # every live candle closes at the live price: the quote's change is today's
        quote = state.quote_extended(row(inst.id))
        assert quote["price"] == state.kline(row(inst.id), 1)[-1]["c"], inst.id
        assert math.isfinite(quote["prevClose"]), inst.id


@pytest.mark.parametrize("weekend", [at(2026, 11, 21, 12, 0), at(2026, 11, 22, 20, 0)])
def test_the_weekend_shows_mondays_candle(weekend: float) -> None:
    """Urea trades by day only: Monday's candle waits unopened at Friday's close. Methanol's Monday began with
    Friday's night session: its candle is open."""
    state, _ = build_demo_state(CAT, 5, weekend, clocks=CLOCKS)
    quote = state.quote_extended(row("urea"))
    assert quote["tradingDay"] == "2026-11-23" and quote["open"] is None
    assert quote["prevClose"] == quote["price"]  # a futures product's change is against Friday's settlement
    assert quote["change"] == pytest.approx(quote["price"] - quote["prevSettle"], abs=1e-6) != 0.0
    assert candle_days(state, "urea")[-2:] == ["2026-11-20", "2026-11-23"]
    night = state.quote_extended(row("methanol"))
    assert night["tradingDay"] == "2026-11-23" and night["open"] is not None


def test_status_frames_go_to_a_venues_subscribers_when_it_breaks_and_reopens() -> None:
    """SPEC 16: `status` when a venue opens, breaks or closes, to the sessions subscribed to its instruments."""
    import json

    from server.stream.delivery.registry import SubscriptionRegistry
    from server.stream.delivery.venue_status import venue_status_of
    from server.stream.protocol.wire import text_frame

    registry: SubscriptionRegistry[str] = SubscriptionRegistry(len(CAT.instruments))
    got: dict[str, list[bytes]] = {"zce-only": [], "cme-only": [], "both": []}
    registry.join("zce-only", [row("methanol"), row("pta")], got["zce-only"].append)
    registry.join("cme-only", [row("wti")], got["cme-only"].append)
    registry.join("both", [row("methanol"), row("wti")], got["both"].append)
    venues = venue_status_of(CLOCKS, registry)
    assert venues is not None
    assert venues.on_clock(at(2026, 11, 18, 10, 14, 58)) == 0  # the baseline: no frame
    assert venues.status["zce"] == "open"
    assert venues.on_clock(at(2026, 11, 18, 10, 14, 59)) == 0  # nothing moved
    assert venues.on_clock(at(2026, 11, 18, 10, 15, 1)) == 2  # ZCE's 10:15 break: two groups hold a ZCE row
    frame = text_frame(b'{"type":"status","venue":"zce","status":"break","ts":"2026-11-18T10:15:01.000+08:00"}')
    assert got == {"zce-only": [frame], "cme-only": [], "both": [frame]}
    assert venues.on_clock(at(2026, 11, 18, 10, 30, 0)) == 2  # open again at 10:30
    assert json.loads(got["both"][-1][2:])["status"] == "open"
    assert venues.on_clock(at(2026, 11, 18, 11, 30, 0)) == 2 and venues.status["zce"] == "break"  # lunch
    assert venues.on_clock(at(2026, 11, 18, 15, 0, 0)) == 2 and venues.status["zce"] == "closed"
    assert got["cme-only"] == []  # CME traded through all of it (07:30 CT onwards it is open)
