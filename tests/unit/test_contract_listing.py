"""Contracts' rules on fixed dates (SPEC 19): last trading days on the venues' calendars, listing, ids and symbols.

Every expectation is a date read off the exchanges' calendars (docs/contracts.md), never today's.
"""

from __future__ import annotations

from datetime import date

import pytest

from server.market.contracts.expiry import last_trading_day
from server.market.contracts.listing import ContractBook
from server.market.contracts.rules import SymbolForm
from server.market.contracts.specs import PRODUCTS, CatalogueFileError, parse_products
from server.market.contracts.symbols import SHAPE, read_id, read_symbol, symbol
from server.market.venues.book import VenueBook

VENUES = VenueBook.load()
BOOK = ContractBook(PRODUCTS, VENUES.calendars)
NOV_24 = date(2026, 11, 24)


def ltd(product: str, year: int, month: int) -> date:
    spec = PRODUCTS[product]
    return last_trading_day(spec.listing, VENUES.calendars[spec.venue], year, month).day


@pytest.mark.parametrize(("product", "year", "month", "expected"), [
    # ZCE: the 10th trading day of May 2026, after Labour Day (shut 1-5 May): 6, 7, 8, 11 ... 19
    ("methanol", 2026, 5, date(2026, 5, 19)),
    ("pp", 2026, 10, date(2026, 10, 21)),  # DCE after National Day (shut 1-7 Oct): 8, 9, 12 ... 16, 19, 20, 21
    ("lpg", 2026, 10, date(2026, 10, 27)),  # DCE LPG: the 4th last trading day of October 2026
    ("sc", 2026, 10, date(2026, 9, 30)),  # INE: the last trading day of the month before
    ("fu", 2027, 1, date(2026, 12, 31)),  # SHFE fuel oil: the last trading day of the month before
    ("bitumen", 2026, 11, date(2026, 11, 16)),  # SHFE: the 15th (a Sunday), so the next trading day
    ("brent", 2026, 3, date(2026, 1, 30)),  # ICE: the last business day of the second month before
    ("wti", 2026, 2, date(2026, 1, 20)),  # NYMEX: 25 Jan 2026 is a Sunday: 4 business days before (19th: MLK)
    ("wti", 2026, 12, date(2026, 11, 20)),  # 25 Nov 2026 is a Wednesday: 3 business days before
    ("wti", 2026, 1, date(2025, 12, 19)),  # Christmas Day: 4 business days before
    ("henry-hub", 2025, 12, date(2025, 11, 25)),  # NYMEX NG: 3 business days before 1 Dec (Thanksgiving skipped)
    ("rbob", 2026, 6, date(2026, 5, 29)),  # NYMEX RB: the last business day of the month before
    ("ttf", 2026, 6, date(2026, 5, 28)),  # ICE Endex: 2 business days before 1 June
    ("oman", 2017, 5, date(2017, 3, 31)),  # GME: the last trading day of the second month before (DME's table)
])
def test_last_trading_day_on_the_venue_calendar(product: str, year: int, month: int, expected: date) -> None:
    assert ltd(product, year, month) == expected


def test_a_day_past_the_known_calendar_is_weekdays_and_provisional() -> None:
    spec = PRODUCTS["methanol"]
    days = VENUES.calendars["zce"]
    later = last_trading_day(spec.listing, days, days.known_until.year + 3, 5)
    assert later.provisional and later.day.weekday() < 5  # no crash, no holiday known: the 10th weekday
    assert not last_trading_day(spec.listing, days, 2026, 5).provisional


def test_a_product_lists_its_months_and_each_contract_starts_after_the_one_before_expires() -> None:
    known = BOOK.known(PRODUCTS["methanol"], NOV_24)
    listed = [c for c in known if c.status(NOV_24) == "listed"]
    assert [c.id for c in listed] == [f"methanol-{y}{m:02d}" for y, m in
                                      [(2026, 12), *((2027, m) for m in range(1, 12))]]
    assert all(c.status(NOV_24) == "expired" and c.last.day >= date(2025, 11, 24) for c in known[:-12])
    may = BOOK.contract(PRODUCTS["methanol"], 2026, 5, NOV_24)
    assert may is not None and may.first == date(2025, 5, 20)  # the day after MA505's last (19 May 2025)
    assert may.view(NOV_24)["status"] == "expired" and may.view(NOV_24)["lastTradingDay"] == "2026-05-19"
    assert BOOK.contract(PRODUCTS["methanol"], 2027, 12, NOV_24) is None  # not listed until MA611 expires


def test_serial_then_quarterly_months() -> None:
    listed = [c for c in BOOK.known(PRODUCTS["sc"], NOV_24) if c.status(NOV_24) == "listed"]
    months = [(c.year, c.month) for c in listed]
    assert len(listed) == 20 and months[:12] == [(2026, 12), *((2027, m) for m in range(1, 12))]
    assert months[12:] == [(2027, 12), (2028, 3), (2028, 6), (2028, 9), (2028, 12), (2029, 3), (2029, 6), (2029, 9)]
    provisional = [c.provisional for c in listed]
    assert provisional[0] is False and provisional[-1] is True  # INE's calendar is known to 2026 only


def test_symbol_forms() -> None:
    assert symbol(SymbolForm.YMM, "MA", 2026, 5) == "MA605"
    assert symbol(SymbolForm.YYMM, "pp", 2026, 5) == "pp2605"
    assert symbol(SymbolForm.LETTER_Y, "CL", 2026, 6) == "CLM6"
    assert symbol(SymbolForm.LETTER_Y, "B", 2026, 6) == "BM6"
    assert read_symbol(SymbolForm.YMM, "MA", "pp2605") is None
    assert read_symbol(SymbolForm.YMM, "MA", "MA613") is None and read_symbol(SymbolForm.YMM, "MA", "MA2605") is None
    assert SHAPE.fullmatch("MA605") and SHAPE.fullmatch("CLM6") and not SHAPE.fullmatch("MA613")
    assert read_id("caustic-soda-202605") == ("caustic-soda", 2026, 5)
    assert read_id("methanol-202613") is None


def test_a_one_digit_year_names_the_nearest_listed_or_recently_expired_contract() -> None:
    def resolve(text: str, today: date) -> str | None:
        found = BOOK.resolve(text, {v: today for v in VENUES.venues})
        return found.id if found is not None else None

    assert resolve("MA605", NOV_24) == "methanol-202605"  # expired in May 2026: within a year
    assert resolve("MA612", NOV_24) == "methanol-202612"  # listed
    assert resolve("MA611", NOV_24) == "methanol-202611"  # expired on 13 Nov; November 2027's is MA711
    assert resolve("MA605", date(2035, 12, 3)) == "methanol-203605"  # a decade on, the same code is 2036's
    assert resolve("MA605", date(2027, 5, 18)) == "methanol-202605"  # 364 days after its last trading day
    assert resolve("MA605", date(2027, 5, 20)) is None  # over a year: neither 2016's nor 2036's is known
    assert resolve("MA712", NOV_24) is None  # not listed yet
    assert resolve("pp2605", NOV_24) == "pp-202605" and resolve("CLF7", NOV_24) == "wti-202701"
    assert resolve("BM8", NOV_24) == "brent-202806" and resolve("BN8", NOV_24) is None
    assert resolve("XX605", NOV_24) is None


@pytest.mark.parametrize(("change", "names"), [
    (("listed = 12", "listed = 0"), "field 'listed'"),
    (('"calendar-day 15"', '"calendar-day 31"'), "field 'last_trading_day'"),
    (('"calendar-day 15"', '"the 15th"'), "field 'last_trading_day'"),
    (("last_trading_month = 0", "last_trading_month = 1"), "field 'last_trading_month'"),
    (('"yymm"', '"yyyymm"'), "field 'symbol_form'"),
    (("listed = 12\n", "listed = 12\nmonths = [0, 13]\n"), "field 'months'"),
    (("last_trading_month = 0\n", ""), "missing field 'last_trading_month'"),
    (("listed = 12\n", "listed = 6\nmonths = [1]\n"), "field 'listed'"),  # six Januaries: six years
])
def test_a_bad_listing_field_names_file_entry_and_field(change: tuple[str, str], names: str) -> None:
    from tests.unit.test_product_specs import GOOD

    assert change[0] in GOOD
    with pytest.raises(CatalogueFileError) as err:
        parse_products(f"[[product]]\n{GOOD.replace(*change)}", "mine.toml")
    assert str(err.value).startswith("mine.toml: [[product]] 1: ") and names in str(err.value), err.value
