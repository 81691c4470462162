"""Settlement and daily limits (SPEC 19): the arithmetic, the board that weighs a day, the state that settles at the
day's end and the feed line that breaks a limit."""

import math
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from server.feeds.jsonl import JsonlParser
from server.market.catalogue import default_catalogue
from server.market.contracts.board import FuturesBoard
from server.market.contracts.settlement import in_window, limits, round_to_tick, settle_price, window_minutes, within
from server.market.contracts.specs import PRODUCTS
from server.market.state import build_demo_state
from server.market.tick import Tick, TickDetail
from server.market.venues.book import VenueBook

CAT = default_catalogue()
IDS = [i.id for i in CAT.instruments]
UTC = UTC


def test_round_to_tick_is_the_nearest_multiple_without_noise() -> None:
    assert round_to_tick(2414.4, 1.0) == 2414.0
    assert round_to_tick(2414.5, 1.0) == 2415.0  # a half tick up
    assert round_to_tick(7013.0, 2.0) == 7014.0
    assert round_to_tick(7012.9, 2.0) == 7012.0
    assert round_to_tick(71.234, 0.01) == 71.23
    assert round_to_tick(0.1 + 0.2, 0.1) == 0.3  # not 0.30000000000000004
    assert round_to_tick(3.4567, 0.005) == 3.455


def test_limits_round_inward_and_keep_exact_band_edges() -> None:
    assert limits(2400.0, 0.07, 1.0) == (2232.0, 2568.0)  # exact: 2232, 2568
    assert limits(2413.0, 0.07, 1.0) == (2245.0, 2581.0)  # 2244.09 up to 2245, 2581.91 down to 2581
    assert limits(7013.0, 0.05, 2.0) == (6664.0, 7362.0)  # 6662.35 up to 6664, 7363.65 down to 7362
    assert limits(500.1, 0.1, 0.1) == (450.1, 550.1)  # 450.09 -> 450.1, 550.11 -> 550.1
    down, up = limits(2413.0, 0.0, 1.0)
    assert math.isnan(down) and math.isnan(up)  # no limit
    assert all(math.isnan(x) for x in limits(math.nan, 0.07, 1.0))  # no settlement yet


def test_a_price_at_a_limit_is_within_one_tick_beyond_is_not() -> None:
    down, up = limits(2413.0, 0.07, 1.0)
    assert within(up, down, up) and within(down, down, up)
    assert not within(up + 1.0, down, up) and not within(down - 1.0, down, up)
    assert within(1e9, math.nan, math.nan)  # no limits


def test_window_vwap_and_fallbacks() -> None:
    assert window_minutes(("19:28", "19:30")) == (1168, 1170)
    assert in_window(1168, (1168, 1170)) and in_window(1169, (1168, 1170)) and not in_window(1170, (1168, 1170))
    assert settle_price(100.0 * 3 + 101.0 * 1, 4, 99.0, 0.01) == 100.25
    assert settle_price(0.0, 0.0, 99.004, 0.01) == 99.0  # nothing weighed: the last price
    assert math.isnan(settle_price(0.0, 0.0, math.nan, 0.01))


def _at(hh: int, mm: int) -> float:
    return datetime(2026, 11, 25, hh, mm, tzinfo=UTC).timestamp()


def test_board_weighs_only_the_window_for_a_window_product() -> None:
    board = FuturesBoard(["brent", "methanol"], [lambda ms: datetime.fromtimestamp(ms / 1000, UTC)] * 2)
    assert PRODUCTS["brent"].settle_window == ("19:28", "19:30")
    board.apply(0, 70.00, 10, _at(19, 27), None)  # before the window
    board.apply(0, 71.00, 1, _at(19, 28), None)
    board.apply(0, 71.10, 3, _at(19, 29), None)
    board.apply(0, 75.00, 50, _at(19, 30), None)  # the window's end is outside it
    assert board.settlement(0) == round_to_tick((71.00 + 3 * 71.10) / 4, 0.01) == 71.08
    board.new_day(0, 71.08)
    board.apply(0, 72.00, 5, _at(12, 0), None)  # a day with no tick in the window: the last price
    board.apply(0, 72.34, 5, _at(13, 0), None)
    assert board.settlement(0) == 72.34
    board.apply(1, 2410.0, 1, _at(2, 0), None)  # vwap-day: every tick weighed
    board.apply(1, 2420.0, 3, _at(3, 0), None)
    assert board.settlement(1) == round_to_tick((2410 + 3 * 2420) / 4, PRODUCTS["methanol"].tick) == 2418.0


def test_board_published_settle_and_limits_win_and_cum_volume_becomes_increments() -> None:
    board = FuturesBoard(["methanol"])
    board.new_day(0, 2413.0)
    assert (board.limit_down[0], board.limit_up[0]) == (2245.0, 2581.0)
    assert board.tick_volume(0.0, TickDetail(cum_volume=100.0), 0.0) == 100.0
    board.apply(0, 2420.0, 100.0, _at(2, 0), TickDetail(cum_volume=100.0, oi=5000.0))
    assert board.tick_volume(0.0, TickDetail(cum_volume=130.0), 100.0) == 30.0
    assert board.tick_volume(0.0, TickDetail(cum_volume=90.0), 100.0) == 0.0  # a total that fell counts nothing
    assert board.tick_volume(7.0, None, 100.0) == 7.0
    board.apply(0, 2430.0, 30.0, _at(2, 1), TickDetail(settle=2400.0, limit_up=2600.0, limit_down=2200.0))
    assert board.settlement(0) == 2400.0
    fields = board.fields(0, 0)
    assert fields["settle"] == 2400.0 and fields["limitUp"] == 2600.0 and fields["limitDown"] == 2200.0
    assert fields["turnover"] == ((2420 * 100 + 2430 * 30) * 10)
    assert fields["openInterest"] == 5000
    board.new_day(0, 2400.0)
    fields = board.fields(0, 0)
    assert fields["settle"] is None and fields["prevSettle"] == 2400.0 and fields["oiChange"] == 0
    assert (fields["limitDown"], fields["limitUp"]) == (2232.0, 2568.0)


@pytest.fixture(scope="module")
def clocks() -> list:
    venues = VenueBook()
    return [venues.for_instrument(i) for i in IDS]


def test_state_settles_at_the_day_end_and_quotes_change_against_prev_settle(clocks: list) -> None:
    now = datetime(2026, 11, 25, 2, 30, tzinfo=UTC).timestamp()  # Wednesday 10:30 in Shanghai: ZCE in session
    state, _ = build_demo_state(CAT, 7, now, clocks=clocks)
    row = CAT.index["methanol"]
    quote = state.quote(row)
    assert quote["change"] == round(quote["price"] - quote["prevSettle"], 2)
    assert quote["prevSettle"] == state.kline(row, 2)[0]["s"] and state.kline(row, 1)[0]["s"] is None
    down, up = quote["limitDown"], quote["limitUp"]
    assert (down, up) == limits(quote["prevSettle"], 0.07, 1.0)
    assert state.futures.within_limits(row, up, now) and not state.futures.within_limits(row, up + 1, now)
    volume = quote["volume"]
    applied = state.apply([Tick(row, 2400.0, now + 1, 2.0, TickDetail(bid=2399.0, ask=2401.0, oi=7000.0)),
                           Tick(row, 2404.0, now + 2, 2.0)])
    assert applied[0].book == {"bid": 2399.0, "ask": 2401.0, "oi": 7000, "vol": volume + 2}
    assert applied[1].change == round(2404.0 - quote["prevSettle"], 2)
    settles = state.futures.board.settlement(row)
    assert settles == round_to_tick(settles, 1.0) and down < settles < up
    assert state.roll(now + 6 * 3600)  # 16:30: the day closed, the next trading day began
    after = state.quote(row)
    assert after["prevSettle"] == settles and after["settle"] is None
    assert after["change"] == round(2404.0 - settles, 2)
    assert (after["limitDown"], after["limitUp"]) == limits(settles, 0.07, 1.0)
    assert state.kline(row, 2)[0]["s"] == settles and state.kline(row, 2)[0]["oi"] == 7000
    spot = state.quote(CAT.index[next(i for i in IDS if i not in PRODUCTS)])
    assert "prevSettle" not in spot and "bid" not in spot


def test_a_tick_of_the_next_day_is_checked_against_that_days_limits(clocks: list) -> None:
    now = datetime(2026, 11, 25, 2, 30, tzinfo=UTC).timestamp()
    state, _ = build_demo_state(CAT, 7, now, clocks=clocks)
    row = CAT.index["methanol"]
    night = (datetime(2026, 11, 25, 13, 30, tzinfo=UTC)).timestamp()  # 21:30: Thursday's night session
    down, up = state.futures.board.next_limits(row)
    assert (down, up) != (state.futures.board.limit_down[row], state.futures.board.limit_up[row])
    assert state.futures.within_limits(row, up, night) and not state.futures.within_limits(row, up + 1, night)
    assert night - now < timedelta(days=1).total_seconds()


def test_the_parser_skips_and_counts_a_price_beyond_the_limits() -> None:
    bounds = {CAT.index["methanol"]: (2245.0, 2581.0)}

    def inside(row: int, price: float, ts: float) -> bool:
        down, up = bounds.get(row, (math.nan, math.nan))
        return within(price, down, up)

    parser = JsonlParser(CAT, inside)
    now = _at(2, 30)

    def line(**kw: object) -> bytes:
        return orjson.dumps({"id": "methanol", "ts": now, **kw})

    assert parser.parse(line(price=2581.0), now) is not None  # at the limit: valid
    assert parser.parse(line(price=2582.0), now) is None and parser.bad_lines == 1
    assert parser.parse(line(price=2244.0, volume=1), now) is None and parser.bad_lines == 2
    tick = parser.parse(line(price=2700.0, limitUp=2800.0, bid=2699, ask=2701, bidSize=3, oi=9, settle=2650), now)
    assert tick is not None and tick.detail == TickDetail(bid=2699.0, ask=2701.0, bid_size=3.0, oi=9.0,
                                                          settle=2650.0, limit_up=2800.0)  # its own limits win
    assert parser.parse(line(price=2900.0, limitUp=2800.0), now) is None and parser.bad_lines == 3
    assert parser.parse(line(price=2400.0, bid=-1), now) is None and parser.bad_lines == 4
    assert parser.parse(line(price=2400.0, cumVolume=5, volume=1), now) is None and parser.bad_lines == 5
    assert parser.parse(line(price=2400.0, cumVolume=5), now).detail.cum_volume == 5.0  # type: ignore[union-attr]
    assert parser.parse(orjson.dumps({"id": "usdcny", "price": 7.1, "ts": now}), now).detail is None  # type: ignore[union-attr]


def test_the_demo_quotes_a_book_around_the_price_and_stays_within_the_limits(clocks: list) -> None:
    now = datetime(2026, 11, 25, 2, 30, tzinfo=UTC).timestamp()
    state, walk = build_demo_state(CAT, 3, now, clocks=clocks)
    row = CAT.index["pta"]
    state.futures.board.limit_up[row] = state.quotes([row])[0]["price"]  # a limit the walk would cross at once
    seen = 0
    for k in range(400):
        for tick in walk.next_batch(now + k, 1.0):
            if tick.row in state.futures.board.rows:
                d = tick.detail
                tick_size = max(PRODUCTS[IDS[tick.row]].tick, 10.0 ** -CAT.instruments[tick.row].decimals)
                assert d is not None and d.bid is not None and d.ask is not None and d.oi is not None
                assert d.bid <= tick.price <= d.ask and 0 < d.ask - d.bid <= 2 * tick_size + 1e-9
                assert state.futures.within_limits(tick.row, tick.price, tick.ts)
                seen += tick.row == row
            state.apply([tick])
    assert seen > 10
