"""A feed's tick and the main continuous series (server/feeds/routes.py): which rows one line moves."""

from __future__ import annotations

from datetime import datetime

from server.feeds.routes import MainRoutes
from server.market.catalogue import default_catalogue
from server.market.contracts.rows import with_contracts
from server.market.contracts.specs import PRODUCTS
from server.market.tick import Tick, TickDetail
from server.market.venues.book import VenueBook

CAT = with_contracts(default_catalogue(), PRODUCTS, VenueBook.load(),
                     datetime.fromisoformat("2026-11-25T10:00:00+08:00").timestamp())
ROW = CAT.index
DETAIL = TickDetail(bid=2399.0, ask=2401.0, oi=120.0)


def tick(iid: str) -> Tick:
    return Tick(ROW[iid], 2400.0, 1_795_000_000.0, 3.0, DETAIL)


def rows(ticks: list[Tick]) -> list[str]:
    return [CAT.instruments[t.row].id for t in ticks]


def test_with_a_main_a_product_line_moves_its_main_and_the_main_moves_its_product() -> None:
    routes = MainRoutes(CAT, lambda product, ts: {ROW["methanol"]: ROW["methanol-202701"]}.get(product))
    assert rows(routes.ticks(tick("methanol"))) == ["methanol-202701", "methanol"]
    assert rows(routes.ticks(tick("methanol-202701"))) == ["methanol-202701", "methanol"]
    assert rows(routes.ticks(tick("methanol-202705"))) == ["methanol-202705"]  # not the main: itself only
    assert rows(routes.ticks(tick("pp"))) == ["pp"]  # no main decided for pp: the product's row, as before
    assert rows(routes.ticks(tick("usdcny"))) == ["usdcny"]
    main, product = routes.ticks(tick("methanol"))
    assert (main.price, main.ts, main.volume, main.detail) == (product.price, product.ts, product.volume, DETAIL)


def test_without_main_contracts_every_tick_moves_its_own_row() -> None:
    routes = MainRoutes(CAT)
    assert [rows(routes.ticks(tick(i))) for i in ("methanol", "methanol-202701", "brent")] == \
        [["methanol"], ["methanol-202701"], ["brent"]]
