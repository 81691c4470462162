import numpy as np
import pytest

from server.market.catalogue import default_catalogue
from server.market.spreads import SPREAD_PAIRS, VAT, SpreadCalculator, compute_spreads

CAT = default_catalogue()


def fixed_prices() -> np.ndarray:
    prices = np.array([i.base_price for i in CAT.instruments])
    fixed = {"methanol": 2400.0, "methanol-ec": 2420.0, "methanol-cfr": 270.0, "usdcny": 7.1}
    for iid, value in fixed.items():
        prices[CAT.index[iid]] = value
    return prices


def test_pairs_are_the_five_in_order() -> None:
    assert [p.pair for p in SPREAD_PAIRS] == ["methanol", "PTA", "PP", "PE", "PVC"]
    assert VAT == 0.13
    for p in SPREAD_PAIRS:
        assert {p.shfe_id, p.dce_id, p.cfr_id} <= set(CAT.index)
        assert CAT.instruments[CAT.index[p.cfr_id]].price_unit == "USD/t"
        assert CAT.instruments[CAT.index[p.shfe_id]].price_unit == "CNY/t"
        assert CAT.instruments[CAT.index[p.dce_id]].price_unit == "CNY/t"


def test_methanol_spread_hand_computed() -> None:
    row = compute_spreads(fixed_prices(), CAT)[0]
    # 270 x 7.1 = 1917; x 1.055 = 2022.435; x 1.13 = 2285.35155; + 40 = 2325.35155
    assert row["pair"] == "methanol"
    assert row["intl"] == 2325.35
    assert row["basis"] == 84.65  # (2400 + 2420)/2 - 2325.35155 = 84.64845
    assert row["basisPct"] == 3.64  # 100 x 84.64845 / 2325.35155 = 3.6402
    assert (row["shfe"], row["dce"], row["cfrUsd"], row["fx"]) == (2400.0, 2420.0, 270.0, 7.1)
    assert (row["tariff"], row["vat"], row["portFee"]) == (0.055, 0.13, 40.0)
    assert "intl" in row["note"] and "basis" in row["note"]


def test_all_pairs_have_all_fields_and_satisfy_formula() -> None:
    calc = SpreadCalculator(CAT)
    prices = fixed_prices()
    keys = {"pair", "shfe", "dce", "intl", "basis", "note", "cfrUsd", "fx", "tariff", "vat", "portFee",
            "basisPct"}
    for row in calc.compute(prices):
        assert set(row) == keys
        intl = row["cfrUsd"] * row["fx"] * (1 + row["tariff"]) * (1 + row["vat"]) + row["portFee"]
        assert row["intl"] == pytest.approx(intl, abs=0.01)
        assert row["basis"] == pytest.approx((row["shfe"] + row["dce"]) / 2 - intl, abs=0.01)


def test_spreads_follow_price_changes() -> None:
    calc = SpreadCalculator(CAT)
    prices = fixed_prices()
    before = calc.compute(prices)[0]["basis"]
    prices[CAT.index["methanol"]] += 100.0
    assert calc.compute(prices)[0]["basis"] == pytest.approx(before + 50.0, abs=0.01)
