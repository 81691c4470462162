"""Weekly inventory levels (demo): ports, social (traders/warehouses), factories.

Every level is in kt (thousand tonnes), crude and fuel oil included, so items
are comparable. The demo series is a seeded weekly random walk around a
plausible level; ``items`` reports the latest week against the one before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from server.market.catalogue import Catalogue, Localised

UNIT = "kt"
INVENTORY_TYPES = ("port", "social", "factory")


@dataclass(frozen=True, slots=True)
class InventorySpec:
    id: str
    name: Localised
    type: str
    base_level: float  # kt
    weekly_vol: float  # fraction


def _spec(iid: str, zh: str, en: str, kind: str, level: float, vol: float) -> InventorySpec:
    return InventorySpec(iid, {"zh": zh, "en": en}, kind, level, vol)


INVENTORY_SPECS: tuple[InventorySpec, ...] = (
    _spec("methanol", "华东港口甲醇库存", "Methanol port inventory, East China", "port", 820.0, 0.05),
    _spec("pta", "PTA社会库存", "PTA social inventory", "social", 3900.0, 0.02),
    _spec("meg", "华东主港乙二醇库存", "MEG main-port inventory, East China", "port", 720.0, 0.04),
    _spec("px", "PX工厂库存", "PX producer inventory", "factory", 420.0, 0.04),
    _spec("pp", "聚丙烯生产企业库存", "PP producer inventory", "factory", 560.0, 0.05),
    _spec("lldpe", "聚乙烯社会库存", "PE social inventory", "social", 480.0, 0.04),
    _spec("pvc", "PVC社会库存", "PVC social inventory", "social", 430.0, 0.03),
    _spec("styrene", "江苏港口苯乙烯库存", "Styrene port inventory, Jiangsu", "port", 160.0, 0.07),
    _spec("benzene", "华东港口纯苯库存", "Benzene port inventory, East China", "port", 120.0, 0.07),
    _spec("sc", "上海原油保税库存", "SC crude bonded tank inventory", "port", 850.0, 0.04),
    _spec("fo380-sg", "新加坡陆上燃料油库存", "Singapore onshore fuel oil inventory", "port", 3500.0, 0.04),
    _spec("lpg", "华东华南港口液化气库存", "LPG port inventory, East & South China", "port", 2450.0, 0.03),
    _spec("urea", "尿素企业库存", "Urea producer inventory", "factory", 1050.0, 0.05),
    _spec("soda-ash", "纯碱厂家库存", "Soda ash producer inventory", "factory", 1500.0, 0.04),
    _spec("caustic-soda", "液碱工厂库存", "Liquid caustic soda plant inventory", "factory", 380.0, 0.05),
)


class InventoryBook:
    """Deterministic weekly levels; ``levels`` has shape (items, weeks), oldest first."""

    demo = True  # a seeded random walk, under the demo feed and a live one alike: always labelled demo

    def __init__(
        self, catalogue: Catalogue, seed: int, weeks: int = 12,
        specs: tuple[InventorySpec, ...] = INVENTORY_SPECS,
    ) -> None:
        if weeks < 2:
            raise ValueError("weeks must be >= 2")
        unknown = [s.id for s in specs if s.id not in catalogue.index]
        if unknown:
            raise ValueError(f"inventory ids not in catalogue: {unknown}")
        self.specs = specs
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x1A7E]))
        vol = np.array([s.weekly_vol for s in specs])[:, None]
        steps = rng.normal(0.0, 1.0, size=(len(specs), weeks - 1)) * vol
        walk = np.concatenate([np.zeros((len(specs), 1)), np.cumsum(steps, axis=1)], axis=1)
        base = np.array([s.base_level for s in specs])[:, None]
        self.levels = np.round(base * np.exp(walk), 1)

    def series(self, index: int) -> list[float]:
        return self.levels[index].tolist()

    def items(self) -> list[dict]:
        latest = self.levels[:, -1].tolist()
        previous = self.levels[:, -2].tolist()
        rows = zip(self.specs, latest, previous, strict=True)
        return [self._item(spec, now, prev) for spec, now, prev in rows]

    @staticmethod
    def _item(spec: InventorySpec, level: float, previous: float) -> dict:
        wow = round(level - previous, 1)
        return {
            "id": spec.id,
            "name": dict(spec.name),
            "type": spec.type,
            "level": level,
            "unit": UNIT,
            "wow": wow,
            "wowPct": round(100.0 * wow / previous, 2) if previous else 0.0,
        }
