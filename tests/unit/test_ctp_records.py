"""CTP depth records normalised (server/feeds/ctp.py, SPEC 19): one test per trap, with records shaped as each
exchange sends them (tests/ctp_records.py says how each one fills TradingDay and ActionDay).

Dates: Tuesday 2026-11-24's night session belongs to Wednesday 2026-11-25; Friday 2026-11-27's to Monday
2026-11-30 (SPEC 16). Every expectation is read off the venues' calendars, never today's date.
"""

from __future__ import annotations

import logging
import math
from datetime import date, datetime

import orjson
import pytest

from server.feeds.ctp import BadRecord, CtpNormaliser, UnknownContract, stamp_date
from server.feeds.ctp_lines import CtpParser
from server.market.contracts.listing import ContractBook
from server.market.contracts.specs import PRODUCTS
from server.market.venues.book import VenueBook
from tests.ctp_records import DBL_MAX, record

VENUES = VenueBook.load()
BOOK = ContractBook(PRODUCTS, VENUES.calendars)
NOW = datetime.fromisoformat("2026-11-30T15:00:00+08:00").timestamp()


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def normaliser() -> CtpNormaliser:
    return CtpNormaliser(PRODUCTS, BOOK, VENUES.clock)


def test_a_dce_night_record_stamped_with_the_trading_day_is_placed_on_the_evening_before() -> None:
    n = normaliser()
    rec = record("pp2701", "2026-11-24T21:30:00.500+08:00", 7050, volume=12, turnover=7050 * 12 * 5)
    assert (rec["ExchangeID"], rec["TradingDay"], rec["ActionDay"]) == ("DCE", "20261125", "20261125")
    tick = n.normalise(rec)
    assert (tick.contract, tick.symbol, tick.trading_day) == ("pp-202701", "pp2701", date(2026, 11, 25))
    assert tick.ts == at("2026-11-24T21:30:00.500+08:00")  # not Wednesday 21:30, a day later
    friday = n.normalise(record("pp2701", "2026-11-27T21:05:00+08:00", 7060, volume=1))
    assert friday.ts == at("2026-11-27T21:05:00+08:00") and friday.trading_day == date(2026, 11, 30)
    assert n.normalise(record("pp2701", "2026-11-25T10:00:00+08:00", 7040)).ts == at("2026-11-25T10:00:00+08:00")


def test_a_czce_night_record_whose_trading_day_is_the_calendar_day_belongs_to_the_next_trading_day() -> None:
    rec = record("MA701", "2026-11-24T22:00:00+08:00", 2400, volume=3)
    assert (rec["ExchangeID"], rec["TradingDay"], rec["ActionDay"]) == ("CZCE", "20261124", "20261124")
    tick = normaliser().normalise(rec)
    assert (tick.contract, tick.trading_day) == ("methanol-202701", date(2026, 11, 25))
    assert tick.ts == at("2026-11-24T22:00:00+08:00")


def test_an_ine_record_after_midnight_takes_its_action_day_and_the_calendars_trading_day() -> None:
    rec = record("sc2701", "2026-11-28T01:30:00+08:00", 520.5, volume=4)  # Saturday morning, Friday's night session
    assert (rec["ExchangeID"], rec["TradingDay"], rec["ActionDay"]) == ("INE", "20261130", "20261128")
    tick = normaliser().normalise(rec)
    assert (tick.contract, tick.trading_day, tick.ts) == ("sc-202701", date(2026, 11, 30),
                                                          at("2026-11-28T01:30:00+08:00"))


def test_a_dce_record_after_midnight_is_on_the_morning_after_the_previous_trading_day() -> None:
    from datetime import time
    clock = VENUES.clock("dce")
    assert stamp_date("dce", clock, date(2026, 11, 30), date(2026, 11, 30), time(0, 30)) == date(2026, 11, 28)
    assert stamp_date("dce", clock, date(2026, 11, 25), date(2026, 11, 25), time(23, 0)) == date(2026, 11, 24)
    assert stamp_date("zce", VENUES.clock("zce"), date(2026, 11, 24), date(2026, 11, 24), time(23, 0)) == \
        date(2026, 11, 24)


def test_a_record_without_action_day_reads_trading_day_as_its_exchange_fills_it() -> None:
    from datetime import time
    shfe, zce = VENUES.clock("shfe"), VENUES.clock("zce")
    assert stamp_date("shfe", shfe, date(2026, 11, 30), None, time(21, 5)) == date(2026, 11, 27)  # Friday evening
    assert stamp_date("shfe", shfe, date(2026, 11, 30), None, time(1, 5)) == date(2026, 11, 28)  # Saturday morning
    assert stamp_date("shfe", shfe, date(2026, 11, 30), None, time(10, 0)) == date(2026, 11, 30)
    assert stamp_date("zce", zce, date(2026, 11, 27), None, time(21, 5)) == date(2026, 11, 27)  # CZCE: the calendar
    rec = record("fu2701", "2026-11-27T21:05:00+08:00", 3000) | {"ActionDay": ""}
    tick = normaliser().normalise(rec)
    assert (tick.ts, tick.trading_day) == (at("2026-11-27T21:05:00+08:00"), date(2026, 11, 30))


def test_running_totals_become_increments_and_a_fall_is_bad_within_a_day_and_a_new_day_across() -> None:
    n = normaliser()

    def take(when: str, volume: int, turnover: float) -> tuple[float, float]:
        tick = n.normalise(record("MA701", when, 2400, volume=volume, turnover=turnover))
        n.commit(tick)
        return tick.volume, tick.turnover

    assert take("2026-11-24T21:00:01+08:00", 10, 240_000) == (10, 240_000)  # the day's first: its whole totals
    assert take("2026-11-24T21:00:02+08:00", 25, 600_000) == (15, 360_000)
    with pytest.raises(BadRecord, match="fell"):
        n.normalise(record("MA701", "2026-11-24T21:00:03+08:00", 2400, volume=20, turnover=480_000))
    assert take("2026-11-25T09:00:00+08:00", 30, 720_000) == (5, 120_000)  # still Wednesday's trading day
    assert take("2026-11-25T21:00:00+08:00", 4, 96_000) == (4, 96_000)  # Thursday's: the fall is a new day
    with pytest.raises(BadRecord, match="after a record of 2026-11-26"):  # a late record of Wednesday
        n.normalise(record("MA701", "2026-11-25T14:59:00+08:00", 2400, volume=31, turnover=744_000))
    other = n.normalise(record("MA705", "2026-11-25T21:00:00+08:00", 2450, volume=2))  # another contract's own
    assert (other.contract, other.volume) == ("methanol-202705", 2)


def test_a_record_not_committed_leaves_the_totals_where_they_were() -> None:
    n = normaliser()
    n.commit(n.normalise(record("MA701", "2026-11-24T21:00:01+08:00", 2400, volume=10)))
    n.normalise(record("MA701", "2026-11-24T21:00:02+08:00", 2400, volume=15))  # rejected by the caller
    assert n.normalise(record("MA701", "2026-11-24T21:00:03+08:00", 2400, volume=16)).volume == 6


def test_dbl_max_and_zero_levels_are_absent() -> None:
    rec = record("pp2701", "2026-11-25T10:00:00+08:00", 7050, volume=1, bid=(DBL_MAX, 0), ask=(7052, 8),
                 settle=DBL_MAX, pre_settle=7000, limits=(7490, 6510), oi=0)
    tick = normaliser().normalise(rec)
    assert (tick.bid, tick.bid_size, tick.ask, tick.ask_size) == (None, None, 7052, 8)
    assert (tick.settle, tick.prev_settle, tick.limit_up, tick.limit_down, tick.oi) == (None, 7000, 7490, 6510, 0)
    zero = normaliser().normalise(record("pp2701", "2026-11-25T10:00:00+08:00", 7050, bid=(0, 0), ask=(7052, 0)))
    assert (zero.bid, zero.ask, zero.ask_size) == (None, None, None)  # a price without a size is no level
    text = orjson.dumps(rec).decode().replace("1.7976931348623157e308", "1.7976931348623157e+308")
    assert orjson.loads(text)["SettlementPrice"] == DBL_MAX  # as a C++ recorder prints it: the same value


def test_average_price_is_in_price_units_at_zce_and_per_lot_elsewhere() -> None:
    n = normaliser()
    zce = n.normalise(record("MA701", "2026-11-25T10:00:00+08:00", 2400, volume=10, average=2405.5))
    dce = n.normalise(record("pp2701", "2026-11-25T10:00:00+08:00", 7050, volume=10, average=7051.0 * 5))
    assert (zce.average, dce.average) == (2405.5, 7051.0)


@pytest.mark.parametrize("code,exchange", [("XX605", "CZCE"), ("MA705", "DCE"), ("pp2613", "DCE"),
                                           ("MA701", "CZCE-ish")])
def test_a_record_naming_no_contract_is_unknown(code: str, exchange: str) -> None:
    rec = record("MA701", "2026-11-25T10:00:00+08:00", 2400) | {"InstrumentID": code, "ExchangeID": exchange}
    with pytest.raises(UnknownContract):
        normaliser().normalise(rec)


@pytest.mark.parametrize("change", [
    {"UpdateTime": "25:00:00"}, {"UpdateTime": None}, {"UpdateMillisec": 1000}, {"UpdateMillisec": "5"},
    {"LastPrice": DBL_MAX}, {"LastPrice": 0}, {"LastPrice": -1}, {"LastPrice": "2400"}, {"Volume": DBL_MAX},
    {"Volume": -1}, {"Turnover": True}, {"TradingDay": "2026-11-25"}, {"ActionDay": "20261131"},
    {"TradingDay": "", "ActionDay": ""}, {"InstrumentID": 605}, {"BidPrice1": "x"},
])
def test_a_record_that_cannot_be_a_tick_is_bad(change: dict) -> None:
    rec = record("MA701", "2026-11-25T10:00:00+08:00", 2400, volume=1) | change
    with pytest.raises(BadRecord):
        normaliser().normalise(rec)


def test_the_parser_counts_logs_with_the_record_number_and_keeps_totals_of_taken_records(
        caplog: pytest.LogCaptureFixture) -> None:
    rows = {"methanol-202701": 7}
    parser = CtpParser(normaliser(), rows)
    lines = [orjson.dumps(record("MA701", "2026-11-25T10:00:00+08:00", 2400, volume=10, limits=(2500, 2300))),
             b"",
             b"{not json",
             orjson.dumps(record("MA701", "2026-11-25T10:00:01+08:00", 2501, volume=12, limits=(2500, 2300))),
             orjson.dumps(record("pp2701", "2026-11-25T10:00:01+08:00", 7000, volume=1)),  # not an instrument row
             orjson.dumps(record("MA701", "2026-11-25T10:00:02+08:00", 2500, volume=13, limits=(2500, 2300))),
             orjson.dumps(record("MA701", "2026-11-25T10:10:00+08:00", 2500, volume=14))]  # over 5 min ahead
    with caplog.at_level(logging.WARNING, logger="market.feed"):
        ticks = [parser.parse(line, now=at("2026-11-25T10:04:00+08:00")) for line in lines]
    assert [t is not None for t in ticks] == [True, False, False, False, False, True, False]
    first, third = ticks[0], ticks[5]
    assert first is not None and third is not None
    assert (first.row, first.price, first.volume, third.volume) == (7, 2400.0, 10.0, 3.0)  # 13 - 10: 12 was refused
    assert third.detail is not None and (third.detail.limit_up, third.detail.limit_down) == (2500.0, 2300.0)
    assert (parser.records, parser.accepted, parser.bad_lines, parser.unknown_ids) == (6, 2, 3, 1)
    logged = [r.getMessage() for r in caplog.records]
    assert logged[0].startswith("ctp-jsonl feed: record 2 skipped: not JSON")
    assert logged[1].startswith("ctp-jsonl feed: record 3 skipped: price 2501 outside")
    assert logged[2].startswith("ctp-jsonl feed: record 4 names no contract") and "pp-202701" in logged[2]
    assert logged[3].startswith("ctp-jsonl feed: record 6 skipped: its time")


def test_dbl_max_constant_is_the_c_value() -> None:
    assert DBL_MAX == 1.7976931348623157e308 and math.isfinite(DBL_MAX)
