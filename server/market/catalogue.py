"""The instrument catalogue: ids, kinds, categories, units and demo calibration.

Prices (``base_price``) and volatilities (``daily_vol``) are plausible late-2026
levels used only to calibrate the synthetic demo feed; ``source`` describes the
market an instrument represents, not a licensed data feed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

import numpy as np

from server.market.venues.data import INSTRUMENT_VENUES, VENUES, session_of

Localised = dict[str, str]

KINDS = ("oil", "chem", "fx")
SLOT_OWNER = "~"  # the owner of a reserved row not bound to a declared instrument: no key is ever its owner
CUSTOM_KIND = "custom"


@dataclass(frozen=True, slots=True)
class Instrument:
    id: str
    kind: str
    category: str
    name: Localised
    source: Localised
    unit: Localised
    currency: str
    price_unit: str
    decimals: int
    base_price: float
    daily_vol: float
    volume_base: float
    venue: str = ""  # a server.market.venues.data.VENUES id (SPEC 16)
    session: str = ""  # the session template its ticks follow (night hours differ per product)
    publication: str = "continuous"  # continuous, daily (an assessment) or monthly (Saudi CP)
    product: str = ""  # a futures contract's product id (SPEC 19: `methanol-202605` of `methanol`); "" otherwise
    symbol: str = ""  # a futures contract's exchange code (MA605)
    month: str = ""  # a futures contract's delivery month, YYYY-MM
    first_trading_day: str = ""  # a futures contract's first trading day, YYYY-MM-DD
    last_trading_day: str = ""  # a futures contract's last trading day, YYYY-MM-DD (its expiry order)
    # SPEC 20: the account whose dedicated data source it is (docs/ingest.md): its keys alone see it; "" everyone's;
    # SLOT_OWNER a reserved row no declared instrument is bound to (nobody's)
    owner: str = ""


@dataclass(frozen=True, slots=True)
class Category:
    id: str
    name: Localised
    instrument_ids: tuple[str, ...]


def _l(zh: str, en: str) -> Localised:
    return {"zh": zh, "en": en}


# unit key -> (localised unit, currency, priceText suffix)
_UNITS: dict[str, tuple[Localised, str, str]] = {
    "usd_bbl": (_l("美元/桶", "USD/bbl"), "USD", "USD/bbl"),
    "cny_bbl": (_l("元/桶", "CNY/bbl"), "CNY", "CNY/bbl"),
    "usd_t": (_l("美元/吨", "USD/t"), "USD", "USD/t"),
    "cny_t": (_l("元/吨", "CNY/t"), "CNY", "CNY/t"),
    "usd_gal": (_l("美元/加仑", "USD/gal"), "USD", "USD/gal"),
    "usd_mmbtu": (_l("美元/百万英热", "USD/MMBtu"), "USD", "USD/MMBtu"),
    "eur_mwh": (_l("欧元/兆瓦时", "EUR/MWh"), "EUR", "EUR/MWh"),
    "cny": (_l("元", "CNY"), "CNY", "CNY"),
    "cny_100jpy": (_l("元/100日元", "CNY per 100 JPY"), "CNY", "CNY"),
    "jpy": (_l("日元", "JPY"), "JPY", "JPY"),
    "usd": (_l("美元", "USD"), "USD", "USD"),
}

# Row layout: id, kind, category, (zh, en) name, (zh, en) source, unit key,
# decimals, base price, daily volatility (fraction), typical daily volume.
_Row = tuple[str, str, str, tuple[str, str], tuple[str, str], str, int, float, float, float]

_ROWS: tuple[_Row, ...] = (
    # --- crude -------------------------------------------------------------
    ("brent", "oil", "crude", ("布伦特原油", "Brent crude"),
     ("ICE欧洲期货 布伦特主力", "ICE Futures Europe, Brent front month"),
     "usd_bbl", 2, 72.40, 0.018, 280_000),
    ("wti", "oil", "crude", ("WTI原油", "WTI crude"),
     ("纽约商品交易所 WTI主力", "NYMEX, WTI light sweet front month"),
     "usd_bbl", 2, 68.30, 0.019, 320_000),
    ("sc", "oil", "crude", ("上海原油", "Shanghai crude (SC)"),
     ("上海国际能源交易中心 SC主力", "INE Shanghai, SC crude main contract"),
     "cny_bbl", 1, 521.0, 0.017, 150_000),
    ("dubai", "oil", "crude", ("迪拜原油", "Dubai crude"),
     ("中东现货 迪拜估价", "Middle East spot, Dubai partials-style assessment"),
     "usd_bbl", 2, 71.60, 0.017, 25_000),
    ("oman", "oil", "crude", ("阿曼原油", "Oman crude"),
     ("迪拜商品交易所 阿曼期货", "GME/DME Oman futures, front month"),
     "usd_bbl", 2, 71.85, 0.017, 20_000),
    # --- refined products --------------------------------------------------
    ("fu", "oil", "refined", ("燃料油", "Fuel oil (SHFE FU)"),
     ("上海期货交易所 燃料油主力", "SHFE, high-sulphur fuel oil main contract"),
     "cny_t", 2, 2980.0, 0.017, 600_000),
    ("fo380-sg", "oil", "refined", ("新加坡380燃料油", "Singapore 380cst fuel oil"),
     ("新加坡现货 380cst估价", "Singapore spot, 380cst HSFO assessment"),
     "usd_t", 2, 412.0, 0.016, 40_000),
    ("lu", "oil", "refined", ("低硫燃料油", "Low-sulphur fuel oil (INE LU)"),
     ("上海国际能源交易中心 低硫燃料油主力", "INE Shanghai, LSFO main contract"),
     "cny_t", 2, 3480.0, 0.016, 180_000),
    ("gasoil-sg", "oil", "refined", ("新加坡柴油", "Singapore gasoil 10ppm"),
     ("新加坡现货 10ppm柴油估价", "Singapore spot, 10ppm gasoil assessment"),
     "usd_bbl", 2, 86.20, 0.016, 30_000),
    ("rbob", "oil", "refined", ("RBOB汽油", "RBOB gasoline"),
     ("纽约商品交易所 RBOB主力", "NYMEX, RBOB gasoline front month"),
     "usd_gal", 4, 2.0540, 0.019, 110_000),
    ("naphtha-cfrj", "oil", "refined", ("石脑油(CFR日本)", "Naphtha CFR Japan"),
     ("亚洲现货 石脑油CFR日本估价", "Asian spot, naphtha CFR Japan assessment"),
     "usd_t", 2, 612.0, 0.015, 35_000),
    ("jet-sg", "oil", "refined", ("新加坡航煤", "Singapore jet kerosene"),
     ("新加坡现货 航煤估价", "Singapore spot, jet/kerosene assessment"),
     "usd_bbl", 2, 85.40, 0.016, 20_000),
    ("bitumen", "oil", "refined", ("沥青", "Bitumen (SHFE BU)"),
     ("上海期货交易所 沥青主力", "SHFE, bitumen main contract"),
     "cny_t", 2, 3420.0, 0.014, 350_000),
    # --- gas & LPG ---------------------------------------------------------
    ("cp-propane", "oil", "gas-lpg", ("沙特CP丙烷", "Saudi CP propane"),
     ("中东合同价 丙烷", "Middle East contract price, propane (monthly)"),
     "usd_t", 2, 585.0, 0.012, 10_000),
    ("lpg", "oil", "gas-lpg", ("液化石油气", "LPG (DCE PG)"),
     ("大连商品交易所 液化石油气主力", "DCE, LPG main contract"),
     "cny_t", 2, 4310.0, 0.016, 160_000),
    ("jkm", "oil", "gas-lpg", ("JKM液化天然气", "LNG JKM"),
     ("东北亚现货 LNG JKM估价", "North-east Asia spot, LNG JKM-style assessment"),
     "usd_mmbtu", 3, 11.450, 0.028, 8_000),
    ("henry-hub", "oil", "gas-lpg", ("亨利港天然气", "Henry Hub natural gas"),
     ("纽约商品交易所 天然气主力", "NYMEX, Henry Hub natural gas front month"),
     "usd_mmbtu", 3, 3.420, 0.035, 400_000),
    ("ttf", "oil", "gas-lpg", ("TTF天然气", "TTF natural gas"),
     ("ICE荷兰TTF天然气主力", "ICE Endex, Dutch TTF front month"),
     "eur_mwh", 3, 33.20, 0.030, 90_000),  # three decimals: ICE Endex's tick is 0.005 EUR/MWh
    # --- methanol ----------------------------------------------------------
    ("methanol", "chem", "methanol", ("甲醇", "Methanol (ZCE MA)"),
     ("郑州商品交易所 甲醇主力", "ZCE, methanol main contract"),
     "cny_t", 2, 2405.0, 0.013, 900_000),
    ("methanol-ec", "chem", "methanol", ("甲醇华东现货", "Methanol East China spot"),
     ("华东现货 太仓甲醇估价", "East China spot, Taicang methanol assessment"),
     "cny_t", 2, 2420.0, 0.011, 60_000),
    ("methanol-cfr", "chem", "methanol", ("甲醇CFR中国", "Methanol CFR China"),
     ("进口估价 甲醇CFR中国主港", "Import assessment, methanol CFR China main ports"),
     "usd_t", 2, 271.0, 0.010, 20_000),
    # --- olefins -----------------------------------------------------------
    ("pp", "chem", "olefins", ("聚丙烯", "Polypropylene (DCE PP)"),
     ("大连商品交易所 聚丙烯主力", "DCE, polypropylene main contract"),
     "cny_t", 2, 7310.0, 0.011, 450_000),
    ("pp-ec", "chem", "olefins", ("聚丙烯华东现货", "PP raffia East China spot"),
     ("华东现货 拉丝聚丙烯估价", "East China spot, PP homo-raffia assessment"),
     "cny_t", 2, 7350.0, 0.009, 40_000),
    ("pp-cfr", "chem", "olefins", ("聚丙烯CFR中国", "PP raffia CFR China"),
     ("进口估价 拉丝聚丙烯CFR中国", "Import assessment, PP homo-raffia CFR China"),
     "usd_t", 2, 880.0, 0.008, 15_000),
    ("lldpe", "chem", "olefins", ("线型低密度聚乙烯", "LLDPE (DCE L)"),
     ("大连商品交易所 塑料主力", "DCE, LLDPE main contract"),
     "cny_t", 2, 7920.0, 0.011, 400_000),
    ("pe-ec", "chem", "olefins", ("聚乙烯华东现货", "LLDPE film East China spot"),
     ("华东现货 线性膜聚乙烯估价", "East China spot, LLDPE film assessment"),
     "cny_t", 2, 7980.0, 0.009, 35_000),
    ("pe-cfr", "chem", "olefins", ("聚乙烯CFR中国", "LLDPE CFR China"),
     ("进口估价 线性聚乙烯CFR中国", "Import assessment, LLDPE film CFR China"),
     "usd_t", 2, 930.0, 0.008, 15_000),
    ("hdpe", "chem", "olefins", ("高密度聚乙烯", "HDPE film East China"),
     ("华东现货 高密度膜料估价", "East China spot, HDPE film assessment"),
     "cny_t", 2, 8260.0, 0.009, 30_000),
    ("styrene", "chem", "olefins", ("苯乙烯", "Styrene (DCE EB)"),
     ("大连商品交易所 苯乙烯主力", "DCE, styrene main contract"),
     "cny_t", 2, 7580.0, 0.015, 380_000),
    # --- aromatics & polyester ---------------------------------------------
    ("px", "chem", "aromatics", ("对二甲苯", "Paraxylene (ZCE PX)"),
     ("郑州商品交易所 对二甲苯主力", "ZCE, paraxylene main contract"),
     "cny_t", 2, 6820.0, 0.014, 200_000),
    ("pta", "chem", "aromatics", ("精对苯二甲酸", "PTA (ZCE TA)"),
     ("郑州商品交易所 PTA主力", "ZCE, PTA main contract"),
     "cny_t", 2, 4810.0, 0.013, 1_100_000),
    ("pta-ec", "chem", "aromatics", ("PTA华东现货", "PTA East China spot"),
     ("华东现货 PTA估价", "East China spot, PTA delivered assessment"),
     "cny_t", 2, 4780.0, 0.011, 80_000),
    ("pta-cfr", "chem", "aromatics", ("PTA CFR中国", "PTA CFR China"),
     ("进口估价 PTA CFR中国", "Import assessment, PTA CFR China"),
     "usd_t", 2, 565.0, 0.010, 8_000),
    ("meg", "chem", "aromatics", ("乙二醇", "MEG (DCE EG)"),
     ("大连商品交易所 乙二醇主力", "DCE, ethylene glycol main contract"),
     "cny_t", 2, 4420.0, 0.012, 350_000),
    ("benzene", "chem", "aromatics", ("纯苯", "Benzene (DCE BZ)"),
     ("大连商品交易所 纯苯主力", "DCE, pure benzene main contract"),
     "cny_t", 2, 6050.0, 0.014, 120_000),
    # --- chlor-alkali & inorganics -----------------------------------------
    ("pvc", "chem", "chlor-alkali", ("聚氯乙烯", "PVC (DCE V)"),
     ("大连商品交易所 PVC主力", "DCE, PVC main contract"),
     "cny_t", 2, 5010.0, 0.011, 700_000),
    ("pvc-ec", "chem", "chlor-alkali", ("PVC华东现货", "PVC carbide East China spot"),
     ("华东现货 电石法PVC估价", "East China spot, carbide-process PVC assessment"),
     "cny_t", 2, 4960.0, 0.009, 50_000),
    ("pvc-cfr", "chem", "chlor-alkali", ("PVC CFR中国", "PVC CFR China"),
     ("进口估价 PVC CFR中国", "Import assessment, PVC CFR China"),
     "usd_t", 2, 600.0, 0.008, 10_000),
    ("caustic-soda", "chem", "chlor-alkali", ("烧碱", "Caustic soda (ZCE SH)"),
     ("郑州商品交易所 烧碱主力", "ZCE, caustic soda main contract"),
     "cny_t", 2, 2510.0, 0.016, 250_000),
    ("soda-ash", "chem", "chlor-alkali", ("纯碱", "Soda ash (ZCE SA)"),
     ("郑州商品交易所 纯碱主力", "ZCE, soda ash main contract"),
     "cny_t", 2, 1420.0, 0.018, 900_000),
    ("urea", "chem", "chlor-alkali", ("尿素", "Urea (ZCE UR)"),
     ("郑州商品交易所 尿素主力", "ZCE, urea main contract"),
     "cny_t", 2, 1710.0, 0.013, 300_000),
    # --- fx ----------------------------------------------------------------
    ("usdcny", "fx", "fx", ("美元/人民币", "USD/CNY"),
     ("中国外汇交易中心 在岸即期", "CFETS onshore spot"),
     "cny", 4, 7.1200, 0.003, 40_000),
    ("usdcnh", "fx", "fx", ("美元/离岸人民币", "USD/CNH"),
     ("香港离岸市场 即期", "Hong Kong offshore spot"),
     "cny", 4, 7.1250, 0.0035, 60_000),
    ("eurcny", "fx", "fx", ("欧元/人民币", "EUR/CNY"),
     ("中国外汇交易中心 在岸即期", "CFETS onshore spot"),
     "cny", 4, 7.7000, 0.004, 8_000),
    ("usdjpy", "fx", "fx", ("美元/日元", "USD/JPY"),
     ("国际银行间市场 即期", "Interbank spot"),
     "jpy", 3, 150.000, 0.005, 90_000),
    ("jpycny", "fx", "fx", ("100日元/人民币", "JPY/CNY (100 JPY)"),
     ("中国外汇交易中心 在岸即期", "CFETS onshore spot"),
     "cny_100jpy", 4, 4.7470, 0.005, 3_000),
    ("gbpcny", "fx", "fx", ("英镑/人民币", "GBP/CNY"),
     ("中国外汇交易中心 在岸即期", "CFETS onshore spot"),
     "cny", 4, 9.0500, 0.0045, 4_000),
    ("eurusd", "fx", "fx", ("欧元/美元", "EUR/USD"),
     ("国际银行间市场 即期", "Interbank spot"),
     "usd", 5, 1.08150, 0.004, 120_000),
    ("hkdcny", "fx", "fx", ("港元/人民币", "HKD/CNY"),
     ("中国外汇交易中心 在岸即期", "CFETS onshore spot"),
     "cny", 4, 0.9150, 0.003, 2_000),
)

_CATEGORY_NAMES: tuple[tuple[str, Localised], ...] = (
    ("crude", _l("原油", "Crude oil")),
    ("refined", _l("成品油", "Refined products")),
    ("gas-lpg", _l("天然气与液化气", "Gas & LPG")),
    ("methanol", _l("甲醇", "Methanol")),
    ("olefins", _l("烯烃", "Olefins")),
    ("aromatics", _l("芳烃与聚酯", "Aromatics & polyester")),
    ("chlor-alkali", _l("氯碱与无机化工", "Chlor-alkali & inorganics")),
    ("fx", _l("外汇", "FX")),
)


def _instrument(row: _Row) -> Instrument:
    iid, kind, cat, (nzh, nen), (szh, sen), unit_key, dec, base, vol, volume = row
    unit, currency, price_unit = _UNITS[unit_key]
    venue = INSTRUMENT_VENUES[iid][0]
    return Instrument(
        id=iid, kind=kind, category=cat, name=_l(nzh, nen), source=_l(szh, sen),
        unit=dict(unit), currency=currency, price_unit=price_unit, decimals=dec,
        base_price=base, daily_vol=vol, volume_base=float(volume),
        venue=venue, session=session_of(iid), publication=VENUES[venue].publication.value,
    )


def _categories(instruments: Iterable[Instrument]) -> tuple[Category, ...]:
    members: dict[str, list[str]] = {cid: [] for cid, _ in _CATEGORY_NAMES}
    for inst in instruments:
        members[inst.category].append(inst.id)
    return tuple(Category(cid, name, tuple(members[cid])) for cid, name in _CATEGORY_NAMES)


class Catalogue:
    """Immutable-by-convention lookup tables over instruments and categories.

    Rows: the listed instruments (the products, spot assessments and FX of the source documents' list, each in one
    category) first, then the futures contracts (SPEC 19: `product` set, in no category), each product's in expiry
    order. The listed rows are what `/api/v1/quotes` without filters, `kind` and the categories show; a contract
    comes by its id, its product or the curve."""

    def __init__(self, instruments: Iterable[Instrument], categories: Iterable[Category]) -> None:
        self.instruments: tuple[Instrument, ...] = tuple(instruments)
        self.index: dict[str, int] = {inst.id: i for i, inst in enumerate(self.instruments)}
        # in row order, changed in place only by `bind` (the stream's parts hold these very lists)
        self.ids: list[str] = [inst.id for inst in self.instruments]
        self.decimals: list[int] = [inst.decimals for inst in self.instruments]
        self.owners: list[str] = [inst.owner for inst in self.instruments]
        self.custom_from = next((r for r, o in enumerate(self.owners) if o), len(self.instruments))  # reserved rows
        self.owned: dict[str, tuple[int, ...]] = {}  # account id -> the rows of its declared instruments
        self.bound_version = 0  # bumped by every `bind`
        self.categories: tuple[Category, ...] = tuple(categories)
        self.category_index: dict[str, Category] = {c.id: c for c in self.categories}
        self.listed_rows: tuple[int, ...] = tuple(r for r, inst in enumerate(self.instruments)
                                                  if not inst.product and not inst.owner)
        self.kinds: frozenset[str] = frozenset(self.instruments[r].kind for r in self.listed_rows)
        self._by_kind: dict[str, list[int]] = {}
        self.contract_rows: dict[str, tuple[int, ...]] = {}  # product id -> its contracts' rows, by expiry
        for row in self.listed_rows:
            self._by_kind.setdefault(self.instruments[row].kind, []).append(row)
        for row, inst in enumerate(self.instruments):
            if inst.product:
                self.contract_rows[inst.product] = (*self.contract_rows.get(inst.product, ()), row)
        self._validate()

    def _validate(self) -> None:
        if len(self.index) != len(self.instruments):
            raise ValueError("duplicate instrument ids")
        seen = [iid for cat in self.categories for iid in cat.instrument_ids]
        if sorted(seen) != sorted(self.instruments[r].id for r in self.listed_rows):
            raise ValueError("every instrument must belong to exactly one category")
        if list(self.listed_rows) != list(range(len(self.listed_rows))):
            raise ValueError("the futures contracts come after the listed instruments")
        orphans = sorted(p for p in self.contract_rows if p not in self.index)
        if orphans:
            raise ValueError(f"contracts of unknown products: {', '.join(orphans)}")
        unplaced = [inst.id for inst in self.instruments if not inst.venue]
        if unplaced:
            raise ValueError(f"instruments without a venue: {', '.join(unplaced)}")
        if any(not o for o in self.owners[self.custom_from:]):
            raise ValueError("the reserved rows of declared instruments come last")

    # --- dedicated data sources (SPEC 20) ------------------------------------------------------------------------
    def visible(self, row: int, owner: str | None) -> bool:
        """Whether a key of account `owner` (None: a key no account made) may see the row's instrument."""
        held = self.owners[row]
        return not held or held == owner

    def bind(self, row: int, inst: Instrument) -> None:
        """A reserved row takes a declared instrument (or, with `slot_instrument`, is freed): the tables change in
        place, so every part holding `index`, `ids`, `decimals` or `owners` sees it."""
        if row < self.custom_from:
            raise ValueError(f"row {row} is not a reserved row")
        old = self.instruments[row]
        if self.index.get(old.id) == row:
            del self.index[old.id]
        self.index[inst.id] = row
        self.instruments = (*self.instruments[:row], inst, *self.instruments[row + 1:])
        self.ids[row], self.decimals[row], self.owners[row] = inst.id, inst.decimals, inst.owner
        owned: dict[str, list[int]] = {}
        for r in range(self.custom_from, len(self.owners)):
            if self.owners[r] != SLOT_OWNER:
                owned.setdefault(self.owners[r], []).append(r)
        self.owned = {o: tuple(rows) for o, rows in owned.items()}
        self.bound_version += 1

    def log_ids(self) -> list[str]:
        """The ids a shared tick log names rows by: a reserved row by its slot, whatever it is bound to (every hub
        names it alike however long ago it started)."""
        return [*self.ids[:self.custom_from], *(slot_id(k) for k in range(len(self.ids) - self.custom_from))]

    def __len__(self) -> int:
        return len(self.instruments)

    def rows_of_kind(self, kind: str) -> list[int]:
        """The listed instruments of `kind` (no contracts)."""
        return list(self._by_kind.get(kind, ()))

    def trading_spans(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(first, last) trading day ordinals per row: a contract's listing, every other row unbounded; None without
        contracts."""
        if not self.contract_rows:
            return None
        first = [date.fromisoformat(i.first_trading_day).toordinal() if i.product else 0 for i in self.instruments]
        last = [date.fromisoformat(i.last_trading_day).toordinal() if i.product else date.max.toordinal()
                for i in self.instruments]
        return np.array(first, dtype=np.int64), np.array(last, dtype=np.int64)

    def product_of(self, row: int) -> int:
        """The row of a contract's product; the row itself for any other instrument."""
        product = self.instruments[row].product
        return self.index[product] if product else row

def slot_id(k: int) -> str:
    return f"~custom-{k}"


def slot_instrument(k: int, venue: str = "fx") -> Instrument:
    """Reserved row `k` before a declared instrument is bound to it (nobody's: 404 for every key)."""
    return Instrument(id=slot_id(k), kind=CUSTOM_KIND, category="", name=_l("", ""), source=_l("", ""),
                      unit=_l("", ""), currency="", price_unit="", decimals=2, base_price=1.0, daily_vol=0.0,
                      volume_base=1.0, venue=venue, owner=SLOT_OWNER)


def declared_instrument(inst_id: str, owner: str, name: Localised, unit: Localised, currency: str, decimals: int,
                        venue: str, session: str, publication: str) -> Instrument:
    """An account's own instrument (SPEC 20): its source is the account's dedicated data source."""
    return Instrument(id=inst_id, kind=CUSTOM_KIND, category="", name=dict(name),
                      source=_l("客户专属数据源", "The account's dedicated data source"), unit=dict(unit),
                      currency=currency, price_unit=unit.get("en") or currency, decimals=decimals, base_price=1.0,
                      daily_vol=0.0, volume_base=1.0, venue=venue, session=session, publication=publication,
                      owner=owner)


def with_slots(catalogue: Catalogue, n: int) -> Catalogue:
    """The catalogue and `n` reserved rows for declared instruments after every other row (SPEC 20)."""
    if n <= 0:
        return catalogue
    return Catalogue((*catalogue.instruments, *(slot_instrument(k) for k in range(n))), catalogue.categories)


def default_catalogue() -> Catalogue:
    instruments = tuple(_instrument(row) for row in _ROWS)
    return Catalogue(instruments, _categories(instruments))
