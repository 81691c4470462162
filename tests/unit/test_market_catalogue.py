from collections import Counter

from server.market.catalogue import default_catalogue

REQUIRED = {
    "brent", "wti", "sc", "methanol", "pta", "px", "meg", "pp", "lldpe", "hdpe", "pvc", "styrene",
    "caustic-soda", "urea", "methanol-cfr", "pta-cfr", "pp-cfr", "pe-cfr", "pvc-cfr",
    "usdcny", "eurcny", "usdjpy",
}


def test_catalogue_size_kinds_and_unique_ids() -> None:
    cat = default_catalogue()
    ids = [i.id for i in cat.instruments]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)
    assert cat.kinds == frozenset({"oil", "chem", "fx"})
    assert set(ids) >= REQUIRED
    assert all(cat.index[iid] == row for row, iid in enumerate(ids))


def test_exactly_eight_categories_each_instrument_once() -> None:
    cat = default_catalogue()
    assert len(cat.categories) == 8
    counts = Counter(iid for c in cat.categories for iid in c.instrument_ids)
    assert set(counts) == set(cat.index)
    assert set(counts.values()) == {1}
    for c in cat.categories:
        assert cat.category_index[c.id] is c
        assert all(cat.instruments[cat.index[i]].category == c.id for i in c.instrument_ids)
        assert set(c.name) == {"zh", "en"}


def test_rows_of_kind_partition_catalogue() -> None:
    cat = default_catalogue()
    rows = sorted(r for k in ("oil", "chem", "fx") for r in cat.rows_of_kind(k))
    assert rows == list(range(len(cat.instruments)))
    assert all(cat.instruments[r].kind == "fx" for r in cat.rows_of_kind("fx"))
    assert cat.rows_of_kind("metal") == []


def test_instrument_fields_are_plausible() -> None:
    cat = default_catalogue()
    for inst in cat.instruments:
        assert set(inst.name) == set(inst.source) == set(inst.unit) == {"zh", "en"}
        assert inst.base_price > 0 and 0 < inst.daily_vol < 0.1 and inst.volume_base > 0
        assert 0 <= inst.decimals <= 5
    brent = cat.instruments[cat.index["brent"]]
    assert brent.currency == "USD" and brent.price_unit == "USD/bbl" and 50 < brent.base_price < 100
    usdcny = cat.instruments[cat.index["usdcny"]]
    assert usdcny.price_unit == "CNY" and 6 < usdcny.base_price < 8
