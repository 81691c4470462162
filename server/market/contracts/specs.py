"""Each futures product's specification, read from `products.toml` (and the operator's `--catalogue-file`).

`load_products(extra)` reads the repository's catalogue, then each extra file (an entry with an id already
known replaces it: the operator's file wins); a bad entry raises `CatalogueFileError` with one line naming the
file, the entry (1-based) and the field. `PRODUCTS` is the repository's catalogue alone.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from server.market.contracts.rules import ListingRule, parse_listing
from server.market.venues.data import VENUES

DEFAULT_PRODUCTS = Path(__file__).with_name("products.toml")
PRODUCT_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_CODE = re.compile(r"[A-Za-z]{1,8}")
_WINDOW = re.compile(r"vwap-window ([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)")


class CatalogueFileError(ValueError):
    """A catalogue file that cannot be used; the message names the file, the entry and the field."""


@dataclass(frozen=True, slots=True)
class ProductSpec:
    id: str
    venue: str
    code: str
    tick: float
    multiplier: float
    limit_pct: float  # 0: no daily price limit
    settlement: str  # "vwap-day" or "vwap-window HH:MM-HH:MM"
    entry: dict[str, Any]  # the whole table as read (fields read by later modules)
    listing: ListingRule  # which months are listed, the last trading day's rule, the symbol's form (rules.py)

    @property
    def settle_window(self) -> tuple[str, str] | None:
        """("HH:MM", "HH:MM") in the venue's zone for a window settlement, None for the day's VWAP."""
        m = _WINDOW.fullmatch(self.settlement)
        return (f"{m[1]}:{m[2]}", f"{m[3]}:{m[4]}") if m else None


def _field(entry: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if name not in entry:
        raise CatalogueFileError(f"{where}: missing field {name!r}")
    value = entry[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CatalogueFileError(f"{where}: field {name!r} has the wrong type ({type(value).__name__})")
    return value


def _spec(entry: Any, where: str) -> ProductSpec:
    if not isinstance(entry, dict):
        raise CatalogueFileError(f"{where}: not a table")
    pid = _field(entry, "id", str, where)
    if not PRODUCT_ID.fullmatch(pid):
        raise CatalogueFileError(f"{where}: field 'id' must be lower-case letters, digits and dashes (methanol)")
    venue = _field(entry, "venue", str, where)
    if venue not in VENUES:
        raise CatalogueFileError(f"{where}: field 'venue': unknown venue {venue!r}")
    tick = float(_field(entry, "tick", (int, float), where))
    mult = float(_field(entry, "multiplier", (int, float), where))
    limit = float(_field(entry, "limit_pct", (int, float), where))
    if not tick > 0:
        raise CatalogueFileError(f"{where}: field 'tick' must be > 0")
    if not mult > 0:
        raise CatalogueFileError(f"{where}: field 'multiplier' must be > 0")
    if not 0 <= limit < 1:
        raise CatalogueFileError(f"{where}: field 'limit_pct' must be in [0, 1)")
    code = _field(entry, "code", str, where)
    if not _CODE.fullmatch(code):
        raise CatalogueFileError(f"{where}: field 'code' must be 1-8 letters (the exchange's product code)")
    settlement = _field(entry, "settlement", str, where)
    if settlement != "vwap-day" and not _WINDOW.fullmatch(settlement):
        raise CatalogueFileError(f"{where}: field 'settlement' must be 'vwap-day' or 'vwap-window HH:MM-HH:MM'")
    try:
        listing = parse_listing(entry)
    except ValueError as exc:
        raise CatalogueFileError(f"{where}: {exc}") from None
    return ProductSpec(pid, venue, code, tick, mult, limit, settlement, dict(entry), listing)


def parse_products(text: str, origin: str) -> dict[str, ProductSpec]:
    """One catalogue document's products by id; `origin` names it in errors."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueFileError(f"{origin}: not valid TOML: {exc}") from exc
    unknown = sorted(set(doc) - {"product"})
    if unknown:
        raise CatalogueFileError(f"{origin}: unknown table [[{unknown[0]}]] (expected [[product]])")
    out: dict[str, ProductSpec] = {}
    for i, entry in enumerate(doc.get("product", []), 1):
        spec = _spec(entry, f"{origin}: [[product]] {i}")
        if spec.id in out:
            raise CatalogueFileError(f"{origin}: [[product]] {i}: field 'id': {spec.id!r} appears twice")
        out[spec.id] = spec
    return out


def load_products(extra: Iterable[Path] = ()) -> Mapping[str, ProductSpec]:
    products = parse_products(DEFAULT_PRODUCTS.read_text(encoding="utf-8"), DEFAULT_PRODUCTS.name)
    for path in extra:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CatalogueFileError(f"{path}: cannot be read: {exc.strerror}") from exc
        products.update(parse_products(text, str(path)))
    return MappingProxyType(products)


PRODUCTS: Mapping[str, ProductSpec] = load_products()
