"""The demo market as a term structure (SPEC 19, issue 39 item 4; server/market/demo_curve.py, demo_contracts.py).

One demo state at a fixed instant (Wednesday 2026-11-25 10:00 in Shanghai, ZCE in session) with every contract row:
the curve is monotone in expiry and moves as one, a contract's candles exist only between its first and last trading
day, its intraday buckets aggregate to its daily candle, open interest peaks before expiry and migrates to later
months, and an expired contract never ticks.
"""

from __future__ import annotations

import itertools
import math
from datetime import date, datetime

import numpy as np
import pytest

from server.market.catalogue import default_catalogue
from server.market.contracts.rows import with_contracts
from server.market.contracts.specs import PRODUCTS
from server.market.demo import DemoWalk
from server.market.demo_curve import OI_PEAK_DAYS, oi_shape
from server.market.state import MarketState, build_demo_state
from server.market.venues.book import VenueBook

NOW = datetime.fromisoformat("2026-11-25T10:00:00+08:00").timestamp()


@pytest.fixture(scope="module")
def demo() -> tuple[MarketState, DemoWalk]:
    venues = VenueBook.load()
    catalogue = with_contracts(default_catalogue(), PRODUCTS, venues, NOW)
    return build_demo_state(catalogue, 7, NOW, clocks=[venues.for_instrument(i.id) for i in catalogue.instruments])


def _rows(state: MarketState, product: str) -> tuple[int, ...]:
    return state.catalogue.contract_rows[product]


def test_the_open_interest_profile_peaks_before_expiry_and_ends_at_it() -> None:
    x = np.arange(-5, 200, dtype=float)
    shape = oi_shape(x)
    assert x[np.argmax(shape)] == OI_PEAK_DAYS
    assert shape[x < 0].max() == 0.0 and 0 < shape[x == 0][0] < 0.2
    assert np.all(np.diff(shape[(x >= OI_PEAK_DAYS)]) <= 0)  # falls toward later expiries (and rises toward it)


@pytest.mark.parametrize("product", ["methanol", "brent", "sc", "pp"])
def test_the_listed_curve_is_monotone_in_expiry_and_on_the_tick(demo: tuple[MarketState, DemoWalk],
                                                                product: str) -> None:
    state, walk = demo
    live = [r for r in _rows(state, product) if walk.curve.expiry_ts[r] > NOW]
    prices = np.array([state.prices[r] for r in live])
    steps = np.diff(prices)
    assert np.all(steps >= 0) or np.all(steps <= 0), prices  # contango or backwardation, one shape
    tick = PRODUCTS[product].tick
    assert np.allclose(np.round(prices / tick) * tick, prices)


def test_contract_candles_lie_between_its_first_and_last_trading_day(demo: tuple[MarketState, DemoWalk]) -> None:
    state, _ = demo
    index = state.catalogue.index
    newest = state.kline(index["methanol-202711"], 90)
    assert newest[0]["t"] == "2026-11-16"  # listed the trading day after MA611 expired (Friday 13 Nov)
    expired = state.kline(index["methanol-202611"], 90)
    assert expired[-1]["t"] == "2026-11-13" and expired[-1]["s"] is not None
    assert all(c["v"] > 0 and c["oi"] is not None for c in newest + expired)
    quote = state.quote(index["methanol-202611"])
    assert quote["price"] == expired[-1]["c"] and quote["tradingDay"] == "2026-11-13"


def test_a_contracts_buckets_aggregate_to_its_daily_candle(demo: tuple[MarketState, DemoWalk]) -> None:
    state, _ = demo
    for cid in ("methanol-202701", "methanol-202705", "pp-202701"):
        row = state.catalogue.index[cid]
        day = state.kline(row, 1)[-1]
        bars = [b for b in state.kline_intraday(row, "1m", 1000) if b["t"] >= "2026-11-24T21:00"]  # night + day
        assert bars and (bars[0]["o"], bars[-1]["c"]) == (day["o"], day["c"]), cid
        assert (max(b["h"] for b in bars), min(b["l"] for b in bars)) == (day["h"], day["l"]), cid
        assert sum(b["v"] for b in bars) == day["v"], cid


def test_open_interest_migrates_so_the_largest_moves_to_later_months(demo: tuple[MarketState, DemoWalk]) -> None:
    state, _ = demo
    rows = list(_rows(state, "methanol"))
    candles = state.candles
    largest = []
    for col in candles.order():
        oi = candles.oi[rows, col]
        if np.isfinite(oi).any():
            largest.append(rows[int(np.nanargmax(oi))])
    changes = [b for a, b in itertools.pairwise(largest) if a != b]
    assert 3 <= len(changes) <= 8  # a few a month's worth of days apart, never back
    assert changes == sorted(changes)


def test_an_expired_contract_never_ticks(demo: tuple[MarketState, DemoWalk]) -> None:
    _state, walk = demo
    expired = {r for r in walk.curve.rows if walk.curve.expiry_ts[r] <= NOW}
    assert expired
    rng_state = walk._rng.bit_generator.state
    moved = {t.row for k in range(200) for t in walk.next_batch(NOW + k, 1.0)}
    walk._rng.bit_generator.state = rng_state
    assert moved and not moved & expired
    assert any(walk.curve.is_contract[r] for r in moved)


def test_a_contract_moves_with_its_product(demo: tuple[MarketState, DemoWalk]) -> None:
    _, walk = demo
    row = walk.catalogue.index["methanol-202701"]
    base = walk.catalogue.index["methanol"]
    before = walk._true[row] / walk._true[base]
    walk.next_batch(NOW + 500, 1.0)
    after = walk._true[row] / walk._true[base]
    assert math.isclose(before, after, rel_tol=2e-3) or walk._true[row] == walk.live_prices()[row]


def test_the_listing_window_names_the_rows() -> None:
    venues = VenueBook.load()
    catalogue = with_contracts(default_catalogue(), PRODUCTS, venues, NOW)
    methanol = [catalogue.instruments[r] for r in catalogue.contract_rows["methanol"]]
    assert [i.symbol for i in methanol][:2] == ["MA608", "MA609"] and methanol[-1].symbol == "MA711"
    assert all(date.fromisoformat(i.last_trading_day) >= date(2026, 7, 1) for i in methanol)
    assert catalogue.listed_rows == tuple(range(len(default_catalogue())))
