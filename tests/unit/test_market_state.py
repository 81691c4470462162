import re
from datetime import date, datetime

import numpy as np
import orjson
import pytest

from server.market.candles.daily import CandleBook
from server.market.catalogue import default_catalogue
from server.market.state import MarketState, build_demo_state
from server.market.tick import Tick
from server.market.timefmt import TZ, iso, trading_days_back

CAT = default_catalogue()
METHANOL = CAT.index["methanol"]
BRENT = CAT.index["brent"]
QUOTE_KEYS = {"id", "kind", "name", "price", "priceText", "change", "changePct", "source", "unit",
              "currency", "updated", "venue", "tradingDay"}
FUTURES_KEYS = {"bid", "ask", "bidSize", "askSize", "openInterest", "oiChange", "volume", "turnover", "prevSettle",
                "settle", "limitUp", "limitDown"}  # methanol is a futures product (SPEC 19)
NO_BOARD = {"oi": None, "s": None}  # a futures candle's open interest and settlement, none known here


def at(y: int, mo: int, d: int, h: int = 10) -> float:
    return datetime(y, mo, d, h, tzinfo=TZ).timestamp()


FRI_10 = at(2026, 11, 20)
SAT_10 = at(2026, 11, 21)
MON_10 = at(2026, 11, 23)


def flat_state(end: date = date(2026, 11, 20), k: int = 5) -> MarketState:
    """Every instrument closed at 100 on each day; methanol at 2400 with prev close 2380."""
    n = len(CAT.instruments)
    days = trading_days_back(end, k)
    c = np.full((n, k), 100.0)
    c[METHANOL, :] = 2380.0
    c[METHANOL, -1] = 2400.0
    book = CandleBook(n)
    book.load_history(days, c, c, c, c, np.zeros((n, k)))
    return MarketState(CAT, book, demo=False, epoch="test")


def test_initial_prices_come_from_live_candle() -> None:
    state = flat_state()
    assert state.prices[METHANOL] == 2400.0
    assert state.version == 0 and int(state.seq.sum()) == 0


def test_apply_updates_price_seq_change_and_version() -> None:
    state = flat_state()
    applied = state.apply([Tick(METHANOL, 2415.0, FRI_10, 3.0), Tick(METHANOL, 2410.0, FRI_10 + 1, 2.0),
                           Tick(BRENT, 101.5, FRI_10 + 1)])
    assert [(a.id, a.seq) for a in applied] == [("methanol", 1), ("methanol", 2), ("brent", 1)]
    assert applied[0].change == 35.0 and applied[1].change == 30.0 and applied[2].change == 1.5
    assert state.version == 1 and state.updated == FRI_10 + 1
    assert state.prices[METHANOL] == 2410.0 and state.seq[METHANOL] == 2
    assert state.apply([]) == [] and state.version == 1


def test_restore_after_a_replay_keeps_each_seq_with_its_own_price() -> None:
    """Issue 44: a restarting hub replays its archive, then continues from the tick log. The log's newest tick,
    applied by the replay already, is applied again (same price, volume not counted twice); one older than the
    replayed one (a log that lost its newest entries) is not applied over it; no seq goes back."""
    state = flat_state()
    state.apply([Tick(METHANOL, 2415.0, FRI_10, 3.0), Tick(METHANOL, 2416.0, FRI_10 + 0.001, 2.0),
                 Tick(BRENT, 101.5, FRI_10, 1.0), Tick(BRENT, 101.75, FRI_10 + 0.001, 1.0)], [7, 8, 4, 5])
    before = state.quote_extended(METHANOL), state.quote_extended(BRENT)
    state.restore([(Tick(BRENT, 101.5, FRI_10, 9.0), 4), (Tick(METHANOL, 2416.0, FRI_10 + 0.001, 2.0), 8)],
                  {"methanol": 8, "brent": 5}, None)
    assert (state.quote_extended(METHANOL), state.quote_extended(BRENT)) == before
    state.restore([], {"methanol": 3}, None)
    assert state.quote_extended(METHANOL) == before[0]
    state.restore([(Tick(METHANOL, 2417.0, FRI_10 + 0.002, 0.0), 9)], {"methanol": 9, "brent": 1_000_005}, None)
    assert (state.prices[METHANOL], state.seq[METHANOL], state.seq[BRENT]) == (2417.0, 9, 1_000_005)


def test_quote_fields_and_formatting() -> None:
    state = flat_state()
    state.apply([Tick(METHANOL, 2415.0, FRI_10, 1.0)])
    q = state.quote(METHANOL)
    assert set(q) == QUOTE_KEYS | FUTURES_KEYS
    assert q["prevSettle"] is None  # no settlement held: change is against the previous close
    assert q["priceText"] == "2,415.00 CNY/t"
    assert q["price"] == 2415.0 and q["change"] == 35.0 and q["changePct"] == 1.47  # 35 / 2380
    assert q["kind"] == "chem" and q["currency"] == "CNY" and q["unit"] == {"zh": "元/吨", "en": "CNY/t"}
    assert q["updated"] == iso(FRI_10) and q["updated"].endswith("+08:00")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+08:00", q["updated"])
    orjson.dumps(q)


def test_quote_extended_has_today_ohlcv_and_seq() -> None:
    state = flat_state()
    state.apply([Tick(METHANOL, 2430.0, FRI_10, 4.0), Tick(METHANOL, 2390.0, FRI_10, 6.0)])
    q = state.quote_extended(METHANOL)
    assert set(q) == QUOTE_KEYS | FUTURES_KEYS | {"extended", "open", "high", "low", "prevClose", "seq"}
    assert q["extended"] is True
    assert (q["open"], q["high"], q["low"], q["prevClose"], q["volume"], q["seq"]) == (
        2400.0, 2430.0, 2390.0, 2380.0, 10, 2)


def test_monday_tick_after_friday_changes_against_friday_close() -> None:
    state = flat_state()
    state.apply([Tick(METHANOL, 2450.0, FRI_10)])
    applied = state.apply([Tick(METHANOL, 2460.0, MON_10)])
    assert applied[0].change == 10.0
    assert state.candles.last_day() == date(2026, 11, 23)
    series = state.kline(METHANOL, 2)
    assert [s["t"] for s in series] == ["2026-11-20", "2026-11-23"]
    assert series[0]["c"] == 2450.0 and series[1]["o"] == 2460.0 and series[1]["c"] == 2460.0


def test_gap_up_day_open_low_and_quote() -> None:
    state = flat_state()
    state.roll(at(2026, 11, 23, 0))  # Monday midnight: methanol's candle is unopened
    q = state.quote_extended(METHANOL)
    assert (q["price"], q["prevClose"], q["change"], q["volume"]) == (2400.0, 2400.0, 0.0, 0)
    assert (q["open"], q["high"], q["low"]) == (None, None, None)  # no tick yet today: nothing invented
    assert state.kline(METHANOL, 1)[0]["t"] == "2026-11-20"  # Monday's candle shows from its first tick
    state.apply([Tick(METHANOL, 2480.0, MON_10, 2.0), Tick(METHANOL, 2470.0, MON_10 + 1, 1.0)])
    q = state.quote_extended(METHANOL)
    assert (q["open"], q["high"], q["low"], q["price"], q["change"]) == (2480.0, 2480.0, 2470.0, 2470.0, 70.0)
    assert state.kline(METHANOL, 1)[0] == {"t": "2026-11-23", "o": 2480.0, "h": 2480.0, "l": 2470.0,
                                           "c": 2470.0, "v": 3, **NO_BOARD}


def test_saturday_tick_updates_mondays_candle() -> None:
    state = flat_state()
    state.apply([Tick(METHANOL, 2405.0, SAT_10, 1.0)])
    assert state.candles.last_day() == date(2026, 11, 23)
    assert state.kline(METHANOL, 1) == [{"t": "2026-11-23", "o": 2405.0, "h": 2405.0, "l": 2405.0,
                                         "c": 2405.0, "v": 1, **NO_BOARD}]
    state.apply([Tick(METHANOL, 2399.0, MON_10, 2.0)])
    assert state.kline(METHANOL, 1)[0]["l"] == 2399.0 and len(state.kline(METHANOL, 90)) == 6


def test_roll_creates_flat_candle_and_bumps_version_once() -> None:
    state = flat_state()
    assert state.roll(at(2026, 11, 20, 23)) is False and state.version == 0
    assert state.roll(at(2026, 11, 23, 0)) is True and state.version == 1
    assert state.roll(at(2026, 11, 23, 1)) is False and state.version == 1
    q = state.quote(METHANOL)
    assert q["change"] == 0.0 and q["changePct"] == 0.0


def test_categories_and_spreads_views() -> None:
    state = flat_state()
    cats = state.categories()
    assert [c["id"] for c in cats] == [c.id for c in CAT.categories]
    assert all(c["count"] == len(c["quotes"]) > 0 for c in cats)
    assert sum(c["count"] for c in cats) == len(CAT.instruments)
    assert [s["pair"] for s in state.spreads()] == ["methanol", "PTA", "PP", "PE", "PVC"]
    with pytest.raises(KeyError):
        state.category("metals")


def test_build_demo_state_history_joins_live_price() -> None:
    now = at(2026, 11, 22, 7)  # Sunday: live candle is Monday's
    state, feed = build_demo_state(CAT, seed=9, now=now)
    assert state.demo is True and len(state.candles) == 90
    assert state.candles.last_day() == date(2026, 11, 23)
    np.testing.assert_array_equal(state.prices, feed.live_prices())
    np.testing.assert_array_equal(state.candles.live_arrays()[3], state.prices)
    series = state.kline(BRENT, 90)
    assert len(series) == 90 and series[-1]["c"] == state.quote(BRENT)["price"]
    assert state.quote(BRENT)["updated"] == iso(now)
    assert len(state.inventory_items()) >= 10
    batch = feed.next_batch(now + 0.25, 0.25)
    applied = state.apply(batch)
    assert [a.row for a in applied] == [t.row for t in batch]
    assert all(a.seq == 1 for a in applied)
    orjson.dumps({"q": state.quotes(list(range(len(CAT.instruments)))), "c": state.categories(),
                  "s": state.spreads(), "k": series})


def test_a_demo_futures_quote_has_its_book_before_its_first_tick() -> None:
    """Sunday: no venue ticks, yet every futures quote shows a book (a tick either side of the last price) with
    sizes of 1-80 lots, as the feed's ticks draw them; the same seed gives the same book."""
    now = at(2026, 11, 22, 7)
    state, _ = build_demo_state(CAT, seed=9, now=now)
    rows = state.futures.board.rows
    quotes = [state.quote(r) for r in rows]
    assert all(isinstance(q["bidSize"], int) and 1 <= q["bidSize"] <= 80 for q in quotes)
    assert all(isinstance(q["askSize"], int) and 1 <= q["askSize"] <= 80 for q in quotes)
    assert len({(q["bidSize"], q["askSize"]) for q in quotes}) > 1  # drawn, not one constant
    assert all(q["bid"] < q["price"] < q["ask"] for q in quotes)
    again, _ = build_demo_state(CAT, seed=9, now=now)
    assert [again.quote(r)["bidSize"] for r in rows] == [q["bidSize"] for q in quotes]
