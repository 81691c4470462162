"""Typed results of the REST API (SPEC sections 6 and 8), as msgspec Structs.

Field names are snake_case in Python and camelCase on the wire (``rename="camel"``).
Unknown fields a newer server adds are ignored, so an older client keeps working.
Candles read ``o, h, l, c, v`` into ``open, high, low, close, volume`` (a futures product's daily candles
also ``oi, s`` into ``open_interest, settle``).
Timestamps are timezone-aware ``datetime``; candle ``t`` stays a string because it
is a date (``YYYY-MM-DD``) for daily candles and a timestamp for intraday ones
(``Candle.start`` parses either).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

import msgspec


class Model(msgspec.Struct, rename="camel", kw_only=True):
    """Base of every result: camelCase on the wire."""


class Localised(Model):
    zh: str
    en: str


Kind = Literal["oil", "chem", "fx"]
Condition = Literal["available", "degraded", "pending", "missing"]  # Databento's per-day conditions


class Quote(Model):
    id: str
    kind: str
    name: Localised
    price: float | None
    price_text: str
    change: float | None
    change_pct: float | None
    source: Localised
    unit: Localised
    currency: str
    updated: datetime | None
    # a futures product's board (SPEC 19); None for spot assessments and FX, and where unknown
    bid: float | None = None
    ask: float | None = None
    bid_size: int | None = None
    ask_size: int | None = None
    open_interest: int | None = None
    oi_change: int | None = None
    turnover: float | None = None
    prev_settle: float | None = None
    settle: float | None = None
    limit_up: float | None = None
    limit_down: float | None = None

    @property
    def decimals(self) -> int:
        """The instrument's price precision, as the server formats `price_text` ("7.1234 CNY/USD": 4);
        2 before the first price ("n/a CNY/t")."""
        if self.price is None:
            return 2
        return len(self.price_text.split(" ", 1)[0].partition(".")[2])


class QuoteExtended(Quote):
    """`GET /api/v1/quotes/{id}`: a quote with today's candle and the instrument's `seq`."""

    extended: bool = True
    open: float | None = None
    high: float | None = None
    low: float | None = None
    prev_close: float | None = None
    volume: float = 0.0
    seq: int = 0


class QuoteList(Model):
    updated: datetime | None
    count: int
    demo: bool
    quotes: list[Quote]


class Candle(Model):
    t: str
    open: float = msgspec.field(name="o")
    high: float = msgspec.field(name="h")
    low: float = msgspec.field(name="l")
    close: float = msgspec.field(name="c")
    volume: float = msgspec.field(name="v")
    open_interest: float | None = msgspec.field(default=None, name="oi")  # futures, daily candles only
    settle: float | None = msgspec.field(default=None, name="s")  # futures, daily: None until known

    @property
    def start(self) -> datetime | date:
        """`t` parsed: a `date` for daily candles, an aware `datetime` for intraday buckets."""
        return datetime.fromisoformat(self.t) if "T" in self.t else date.fromisoformat(self.t)


class CandleSeries(Model):
    """`GET /api/v1/kline/{id}`. With a range query (`start=`), `next` is the `t` of the first candle left
    out when more remain in the range (pass it as the next `start`), else None."""

    id: str
    updated: datetime | None
    demo: bool
    series: list[Candle]
    interval: str | None = None
    next: str | None = None


class Spread(Model):
    pair: str
    shfe: float
    dce: float
    intl: float
    basis: float
    note: str
    cfr_usd: float
    fx: float
    tariff: float
    vat: float
    port_fee: float
    basis_pct: float


class SpreadList(Model):
    updated: datetime | None
    demo: bool
    spreads: list[Spread]


class InventoryItem(Model):
    id: str
    name: Localised
    type: str
    level: float
    unit: str
    wow: float
    wow_pct: float


class InventoryList(Model):
    updated: datetime | None
    demo: bool
    items: list[InventoryItem]


class Category(Model):
    id: str
    name: Localised
    count: int
    quotes: list[Quote]


class MarketSnapshot(Model):
    updated: datetime
    refresh_seconds: float
    demo: bool
    categories: list[Category]


class CategorySnapshot(Model):
    updated: datetime
    refresh_seconds: float
    demo: bool
    id: str
    name: Localised
    count: int
    quotes: list[Quote]


class NewsItem(Model):
    id: str
    title: Localised
    summary: Localised
    source: str
    published_at: datetime
    tags: list[str]


class ResearchItem(NewsItem):
    author: str
    category: str


class NewsPage(Model):
    items: list[NewsItem]
    total: int
    limit: int
    offset: int


class ResearchPage(Model):
    items: list[ResearchItem]
    total: int
    limit: int
    offset: int


class Registered(Model):
    id: str
    email: str


class Token(Model):
    token: str
    token_type: str
    expires_in: int


class Created(Model):
    id: str
    status: str
    created_at: datetime


class Receipt(Model):
    receipt_no: str
    commodity: str
    grade: str
    quantity: float
    unit: str
    warehouse: str
    holder: str
    status: str
    issued_at: datetime
    expires_at: datetime | None
    evidence_hash: str
    anchored: bool


class Verification(Model):
    """`GET /api/verify-anchor`: pending/tampered carry only hash, verified and status."""

    hash: str
    verified: bool
    status: str
    anchored_at: datetime | None = None
    ledger: str | None = None
    block_height: int | None = None
    tx_hash: str | None = None
    merkle_root: str | None = None
    leaf_index: int | None = None
    tree_size: int | None = None
    proof: list[str] = msgspec.field(default_factory=list)


class Health(Model):
    status: str


class Ready(Model):
    status: str
    checks: dict[str, bool]
    epoch: str


class ClientConfig(Model):
    ws_port: int
    ws_path: str
    demo: bool


def to_builtins(value: Any) -> Any:
    """A result as plain JSON-ready Python values (camelCase keys, ISO strings), e.g. for printing."""
    return msgspec.to_builtins(value)


class FlatFile(Model):
    """One closed trading day's file of a dataset (SPEC 18): where to GET it, its size, sha256 and data rows;
    `venue` names the venue of a venue's own file (listed with `venue=`), None for an all-venue file."""

    dataset: str
    date: date
    format: str
    url: str
    bytes: int
    sha256: str
    rows: int
    # the day's data quality (SPEC 20, as quality() reports it): a venue's file its venue's day, an all-venue file
    # the worst over the venues trading that date; gaps: how many in-session gaps (summed over those venues)
    condition: Condition | None = None  # None from a server older than the field
    gaps: int = 0
    venue: str | None = None


class FlatFileList(Model):
    files: list[FlatFile]
