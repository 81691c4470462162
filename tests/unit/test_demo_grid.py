"""A futures product's demo prices lie on its tick (SPEC 19): the live price, its book, its history and its
intraday buckets are multiples of the exchange's minimum price fluctuation (methanol: 1 CNY/t, TTF: 0.005)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from server.market.catalogue import default_catalogue
from server.market.contracts.specs import PRODUCTS
from server.market.state import build_demo_state
from server.market.venues.book import VenueBook

CAT = default_catalogue()
NOW = datetime(2026, 11, 25, 2, 30, tzinfo=UTC).timestamp()  # Wednesday 10:30 in Shanghai


def _off_grid(values: np.ndarray, tick: float) -> np.ndarray:
    values = values[np.isfinite(values)]
    return values[np.abs(values / tick - np.round(values / tick)) > 1e-6]


def test_every_demo_price_of_a_futures_product_is_on_its_tick() -> None:
    venues = VenueBook()
    state, feed = build_demo_state(CAT, 11, NOW, clocks=[venues.for_instrument(i.id) for i in CAT.instruments])
    ticks = [t for k in range(40) for t in feed.next_batch(NOW + k, 0.25)]
    for pid, spec in PRODUCTS.items():
        row = CAT.index[pid]
        seen = [state.candles.o[row], state.candles.h[row], state.candles.l[row], state.candles.c[row],
                np.array([feed.live_prices()[row]])]
        seen += list(state.intraday.rings["1m"].arrays(row, 1000)[1][:4])
        seen += [np.array([v for t in ticks if t.row == row for v in (t.price, t.detail.bid, t.detail.ask)
                           if t.detail is not None and v is not None])]
        for values in seen:
            assert not len(_off_grid(values, spec.tick)), (pid, spec.tick, _off_grid(values, spec.tick)[:5])
    # a spot assessment keeps its decimals' grid only
    assert CAT.instruments[CAT.index["methanol-ec"]].id not in PRODUCTS
