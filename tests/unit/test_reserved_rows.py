"""SPEC 20's reserved rows (docs/ingest.md): the catalogue binds a declared instrument to a reserved row in place (the
lists other parts hold see it), the market state gives the row its venue's clock and clears it, the demo walk never
moves it, and visibility is the owner's alone."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from server.api.market.sources import clock_of
from server.market.catalogue import SLOT_OWNER, declared_instrument, default_catalogue, slot_instrument, with_slots
from server.market.state import build_demo_state, reset_row
from server.market.tick import Tick
from server.market.timefmt import TZ
from server.market.venues.book import VenueBook

NOW = datetime(2026, 11, 18, 14, 20, tzinfo=TZ).timestamp()  # a Wednesday: ZCE in its afternoon session


def blend(owner: str = "usr_acme", venue: str = "zce") -> object:
    return declared_instrument("acme.blend", owner, {"zh": "甲", "en": "Blend"}, {"zh": "吨", "en": "t"}, "CNY", 1,
                               venue, "", "continuous")


def test_reserved_rows_come_last_and_are_nobodys() -> None:
    base = default_catalogue()
    cat = with_slots(base, 3)
    assert cat.custom_from == len(base.instruments) and len(cat.instruments) == len(base.instruments) + 3
    assert cat.listed_rows == base.listed_rows and cat.kinds == base.kinds
    assert cat.log_ids()[-3:] == ["~custom-0", "~custom-1", "~custom-2"]
    row = cat.custom_from
    assert cat.owners[row] == SLOT_OWNER and not cat.visible(row, None) and not cat.visible(row, "usr_acme")
    assert cat.visible(0, None) and cat.visible(0, "usr_acme")  # ours: everyone's
    assert with_slots(base, 0) is base


def test_binding_changes_the_shared_lists_in_place() -> None:
    cat = with_slots(default_catalogue(), 2)
    ids, decimals, index = cat.ids, cat.decimals, cat.index
    row = cat.custom_from + 1
    cat.bind(row, blend())  # type: ignore[arg-type]
    assert cat.ids is ids and cat.decimals is decimals and cat.index is index
    assert ids[row] == "acme.blend" and decimals[row] == 1 and index["acme.blend"] == row and "~custom-1" not in index
    assert cat.owned == {"usr_acme": (row,)} and cat.visible(row, "usr_acme") and not cat.visible(row, "usr_other")
    assert cat.log_ids()[row] == "~custom-1"  # a shared log names the slot, whatever it is bound to
    cat.bind(row, slot_instrument(1))  # freed
    assert cat.owned == {} and "acme.blend" not in index and not cat.visible(row, "usr_acme")
    with pytest.raises(ValueError):
        cat.bind(0, blend())  # type: ignore[arg-type]


def test_a_bound_row_takes_its_venues_clock_and_starts_empty() -> None:
    venues = VenueBook.load()
    cat = with_slots(default_catalogue(), 2)
    clocks = [clock_of(venues, inst) for inst in cat.instruments]
    state, walk = build_demo_state(cat, 7, NOW, clocks=clocks)
    row = cat.custom_from
    for r in range(row, len(clocks)):
        reset_row(state, r, clocks[r], NOW)
    assert all(math.isnan(state.prices[r]) for r in range(row, len(clocks)))
    for _ in range(200):  # the demo walk never moves a reserved row
        assert all(t.row < row for t in walk.next_batch(NOW, 0.25))
    inst = blend()
    cat.bind(row, inst)  # type: ignore[arg-type]
    zce = clock_of(venues, inst)  # type: ignore[arg-type]
    reset_row(state, row, zce, NOW)
    assert state.clocks[row] is zce and state.floors.clocks[row] is zce
    before = state.quote(0)
    state.apply([Tick(row, 2400.5, NOW, 3.0), Tick(row, 2401.0, NOW + 1, 2.0)])
    quote = state.quote_extended(row)
    assert (quote["id"], quote["price"], quote["volume"], quote["seq"]) == ("acme.blend", 2401.0, 5, 2)
    assert quote["tradingDay"] == zce.trading_day(int(NOW * 1000)).isoformat()
    assert state.kline_intraday(row, "1m", 10)[-1]["v"] == 5 and state.quote(0) == before
    assert state.kline(row, 5)[-1]["c"] == 2401.0
