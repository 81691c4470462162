from server.market.catalogue import default_catalogue
from server.market.inventory import InventoryBook

CAT = default_catalogue()


def test_items_fields_and_week_on_week() -> None:
    book = InventoryBook(CAT, seed=1)
    items = book.items()
    assert 10 <= len(items) <= 15
    assert len({i["id"] for i in items}) == len(items)
    for k, item in enumerate(items):
        assert set(item) == {"id", "name", "type", "level", "unit", "wow", "wowPct"}
        assert item["id"] in CAT.index
        assert item["type"] in {"port", "social", "factory"}
        assert item["unit"] == "kt"
        prev, last = book.series(k)[-2:]
        assert item["level"] == last
        assert item["wow"] == round(last - prev, 1)
        assert item["wowPct"] == round(100 * item["wow"] / prev, 2)


def test_inventory_deterministic_per_seed() -> None:
    assert InventoryBook(CAT, 3).items() == InventoryBook(CAT, 3).items()
    assert InventoryBook(CAT, 3).items() != InventoryBook(CAT, 4).items()
