"""Domestic-versus-import spreads (basis) for five petrochemicals.

    intl  = CFR China (USD/t) x USD/CNY x (1 + tariff) x (1 + VAT) + port fee   [CNY/t]
    basis = (shfe + dce) / 2 - intl                                           [CNY/t]
    basisPct = 100 x basis / intl

``shfe`` and ``dce`` are the two domestic CNY/t prices of a pair (historical
field names): ``shfe`` is the futures main contract (ZCE for methanol and PTA, DCE for
PP, PE and PVC; never SHFE), ``dce`` the East China spot assessment (not a
DCE price): the note of each pair says so. Tariffs are China's MFN import duty rates as fractions
(methanol 5.5%; PTA, PP, PE and PVC 6.5%), VAT is the 13% import VAT, and the
port fee is a flat landing/port charge in CNY/t. All pairs are computed at
once with gathered numpy index arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from server.market.catalogue import Catalogue

VAT = 0.13
FX_ID = "usdcny"


@dataclass(frozen=True)
class SpreadPair:
    pair: str
    shfe_id: str
    dce_id: str
    cfr_id: str
    tariff: float
    port_fee: float
    note: str


def _note(product: str, futures: str, spot: str, tariff: float, fee: float) -> str:
    return (
        f"{product}: shfe = {futures} futures, dce = {spot} (both CNY/t; the field names are historical: "
        "shfe is not a Shanghai Futures Exchange price, dce is a spot assessment, not a Dalian contract). "
        f"intl = CFR China (USD/t) x USD/CNY x (1 + {tariff:.1%} MFN tariff) x (1 + 13% VAT) "
        f"+ {fee:.0f} CNY/t port fee; basis = (shfe + dce)/2 - intl. "
        "Positive basis: domestic prices above import parity (imports profitable)."
    )


SPREAD_PAIRS: tuple[SpreadPair, ...] = (
    SpreadPair("methanol", "methanol", "methanol-ec", "methanol-cfr", 0.055, 40.0,
               _note("Methanol", "ZCE MA main contract", "East China (Taicang) spot", 0.055, 40.0)),
    SpreadPair("PTA", "pta", "pta-ec", "pta-cfr", 0.065, 50.0,
               _note("PTA", "ZCE TA main contract", "East China delivered spot", 0.065, 50.0)),
    SpreadPair("PP", "pp", "pp-ec", "pp-cfr", 0.065, 60.0,
               _note("PP", "DCE PP main contract", "East China homo-raffia spot", 0.065, 60.0)),
    SpreadPair("PE", "lldpe", "pe-ec", "pe-cfr", 0.065, 60.0,
               _note("PE (LLDPE)", "DCE L main contract", "East China LLDPE film spot", 0.065, 60.0)),
    SpreadPair("PVC", "pvc", "pvc-ec", "pvc-cfr", 0.065, 50.0,
               _note("PVC", "DCE V main contract", "East China carbide-process spot", 0.065, 50.0)),
)


class SpreadCalculator:
    """Precomputed gather indices; ``compute`` evaluates every pair in one pass."""

    def __init__(self, catalogue: Catalogue, pairs: tuple[SpreadPair, ...] = SPREAD_PAIRS) -> None:
        idx = catalogue.index
        self.pairs = pairs
        self.shfe_rows = np.array([idx[p.shfe_id] for p in pairs], dtype=np.intp)
        self.dce_rows = np.array([idx[p.dce_id] for p in pairs], dtype=np.intp)
        self.cfr_rows = np.array([idx[p.cfr_id] for p in pairs], dtype=np.intp)
        self.fx_row = idx[FX_ID]
        self.tariff = np.array([p.tariff for p in pairs])
        self.port_fee = np.array([p.port_fee for p in pairs])

    def arrays(self, prices: np.ndarray) -> dict[str, np.ndarray]:
        shfe, dce, cfr = prices[self.shfe_rows], prices[self.dce_rows], prices[self.cfr_rows]
        fx = prices[self.fx_row]
        intl = cfr * fx * (1.0 + self.tariff) * (1.0 + VAT) + self.port_fee
        basis = (shfe + dce) / 2.0 - intl
        return {"shfe": shfe, "dce": dce, "cfr": cfr, "fx": np.full(len(self.pairs), fx),
                "intl": intl, "basis": basis, "basis_pct": 100.0 * basis / intl}

    def compute(self, prices: np.ndarray) -> list[dict]:
        a = {k: np.asarray(v).tolist() for k, v in self.arrays(prices).items()}
        return [
            {
                "pair": p.pair,
                "shfe": round(a["shfe"][i], 2),
                "dce": round(a["dce"][i], 2),
                "intl": round(a["intl"][i], 2),
                "basis": round(a["basis"][i], 2),
                "note": p.note,
                "cfrUsd": round(a["cfr"][i], 2),
                "fx": round(a["fx"][i], 4),
                "tariff": p.tariff,
                "vat": VAT,
                "portFee": p.port_fee,
                "basisPct": round(a["basis_pct"][i], 2),
            }
            for i, p in enumerate(self.pairs)
        ]


def compute_spreads(
    prices: np.ndarray, catalogue: Catalogue, pairs: tuple[SpreadPair, ...] = SPREAD_PAIRS
) -> list[dict]:
    return SpreadCalculator(catalogue, pairs).compute(prices)
