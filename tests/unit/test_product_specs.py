"""The futures products' catalogue (SPEC 19): every futures-venue instrument is a product; bad files are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.market.catalogue import default_catalogue
from server.market.contracts.specs import PRODUCTS, CatalogueFileError, load_products, parse_products

FUTURES_VENUES = {"shfe", "ine", "dce", "zce", "ice-eu", "cme", "ice-endex", "gme"}
GOOD = ('id = "rubber"\nvenue = "shfe"\ncode = "ru"\ntick = 5\nmultiplier = 10\nlimit_pct = 0.08\n'
        'settlement = "vwap-day"\nlisted = 12\nlast_trading_day = "calendar-day 15"\nlast_trading_month = 0\n'
        'symbol_form = "yymm"\n')


def test_every_futures_instrument_is_a_product_on_its_venue() -> None:
    futures = {i.id: i.venue for i in default_catalogue().instruments if i.venue in FUTURES_VENUES}
    assert futures and {p: s.venue for p, s in PRODUCTS.items()} == futures


def test_window_settlements_are_read() -> None:
    assert PRODUCTS["brent"].settle_window == ("19:28", "19:30")
    assert PRODUCTS["methanol"].settle_window is None


def test_an_operator_file_adds_and_replaces(tmp_path: Path) -> None:
    extra = tmp_path / "mine.toml"
    extra.write_text(f"[[product]]\n{GOOD}\n[[product]]\n{GOOD.replace('rubber', 'methanol').replace('shfe', 'zce')}")
    products = load_products([extra])
    assert products["rubber"].tick == 5 and products["methanol"].code == "ru" and "brent" in products


@pytest.mark.parametrize(("body", "names"), [
    (GOOD.replace("tick = 5", "tick = 0"), "[[product]] 1: field 'tick'"),
    (GOOD.replace('venue = "shfe"', 'venue = "lme"'), "[[product]] 1: field 'venue'"),
    (GOOD.replace("limit_pct = 0.08\n", ""), "[[product]] 1: missing field 'limit_pct'"),
    (GOOD.replace('"vwap-day"', '"vwap-window 25:00-26:00"'), "[[product]] 1: field 'settlement'"),
    (GOOD.replace("multiplier = 10", 'multiplier = "10"'), "[[product]] 1: field 'multiplier'"),
])
def test_a_bad_entry_names_file_entry_and_field(body: str, names: str) -> None:
    with pytest.raises(CatalogueFileError) as err:
        parse_products(f"[[product]]\n{body}", "mine.toml")
    assert str(err.value).startswith("mine.toml: ") and names in str(err.value), err.value
    assert "\n" not in str(err.value)
