"""Issue 39: a futures day the hub was down at the close settles at start from its archived ticks, by the same
board and rule as live (store/history/archive_gap.py `missing_settlements`): a window product's VWAP of its
window in venue local time, a feed's published settlement winning, the day's last open interest, days already
settled left alone, nothing for an instrument that is not a futures product."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

from server.market.tick import TickDetail, detail_compact
from server.market.venues.book import VenueBook
from server.store.history.archive_gap import missing_settlements

TUESDAY, WEDNESDAY = date(2026, 11, 24), date(2026, 11, 25)


def _ms(day: date, hh: int, mm: int, ss: int = 0) -> int:
    return int(datetime(day.year, day.month, day.day, hh, mm, ss, tzinfo=UTC).timestamp() * 1000)  # London: GMT


def test_a_window_product_settles_on_its_window_and_a_published_settlement_wins() -> None:
    clock = VenueBook().for_instrument("brent")
    book = detail_compact(TickDetail(bid=80.0, ask=80.05, oi=2000.0))
    ticks = [  # (id, ts ms, seq, price, volume, detail)
        ("brent", _ms(TUESDAY, 18, 0), 1, 80.0, 10.0, book),  # outside 19:28-19:30 London: not weighed
        ("brent", _ms(TUESDAY, 19, 28, 30), 2, 80.1, 1.0, None),
        ("brent", _ms(TUESDAY, 19, 29, 30), 3, 80.2, 3.0, detail_compact(TickDetail(oi=2100.0))),
        ("brent", _ms(WEDNESDAY, 12, 0), 4, 81.0, 2.0, detail_compact(TickDetail(oi=2050.0, settle=81.5))),
        ("brent", _ms(WEDNESDAY, 12, 5), 5, 81.2, 2.0, None),
    ]
    assert [clock.trading_day(t[1]) for t in ticks] == [TUESDAY] * 3 + [WEDNESDAY] * 2
    # Tuesday: (80.1 * 1 + 80.2 * 3) / 4 = 80.175 -> 80.18 (half a tick up); Wednesday: the published 81.5
    assert missing_settlements("brent", clock, ticks, set()) == [
        ("brent", TUESDAY, 2100.0, 80.18), ("brent", WEDNESDAY, 2050.0, 81.5)]
    assert missing_settlements("brent", clock, list(reversed(ticks)), {TUESDAY}) == [  # seq order, not file order
        ("brent", WEDNESDAY, 2050.0, 81.5)]


def test_a_day_product_settles_on_its_vwap_and_other_instruments_have_none() -> None:
    venues = VenueBook()
    clock = venues.for_instrument("methanol")
    at = int(datetime(2026, 11, 25, 6, 50, tzinfo=UTC).timestamp() * 1000)  # 14:50 in Shanghai
    ticks = [("methanol", at, 1, 2400.0, 10.0, None), ("methanol", at + 60_000, 2, 2410.0, 30.0, None)]
    (inst, day, oi, settle), = missing_settlements("methanol", clock, ticks, set())
    # (2400 * 10 + 2410 * 30) / 40 = 2407.5 -> 2408; no tick carried open interest: NaN (stored as NULL)
    assert (inst, day, settle) == ("methanol", WEDNESDAY, 2408.0) and oi is not None and math.isnan(oi)
    assert missing_settlements("usdcny", venues.for_instrument("usdcny"),
                               [("usdcny", at, 1, 7.1, 0.0, None)], set()) == []
