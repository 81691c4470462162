"""What each endpoint is, as data: one `Call` per request, shared by the sync and async clients.

A `Call` names the method, path, query, body, which credential it needs and the
type its answer decodes to. `Outcome` turns a response into that value, a
`Retry` (429 with retries left) or a typed exception. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote as url_quote

import msgspec

from market_client import models as m
from market_client.errors import RateLimited, problem_error, retry_after_seconds

T = TypeVar("T")
Auth = Literal["key", "bearer", "none"]
DEFAULT_URL = "http://127.0.0.1:8000"
Instant = datetime | date | int | str  # a range bound: aware datetime, trading day, epoch ms or ISO text


@dataclass(frozen=True, slots=True)
class RawBody:
    """A request body sent as it is (JSON lines to /api/v1/ingest), not encoded as JSON."""
    data: bytes
    media_type: str


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    result: type[T]  # type(None): an answer without a body (204)
    params: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | RawBody | None = None
    auth: Auth = "none"
    conditional: bool = False  # send If-None-Match with the last ETag; a 304 returns the cached value
    headers: Mapping[str, str] = field(default_factory=dict)  # the call's own (Idempotency-Key)


@dataclass(frozen=True, slots=True)
class Retry:
    seconds: float


def _params(**values: Any) -> dict[str, str]:
    """Query parameters, leaving out the ones not given; lists become comma-separated."""
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        out[name] = ",".join(value) if isinstance(value, (list, tuple)) else str(value)
    return out


def _body(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _seg(value: str) -> str:
    return url_quote(value, safe="")


# --- keyed market data (/api/v1) ----------------------------------------------------------------

def quotes(kind: str | None = None, ids: list[str] | tuple[str, ...] | None = None) -> Call[m.QuoteList]:
    return Call("GET", "/api/v1/quotes", m.QuoteList, _params(kind=kind, ids=ids), auth="key")


def quote(instrument_id: str) -> Call[m.QuoteExtended]:
    return Call("GET", f"/api/v1/quotes/{_seg(instrument_id)}", m.QuoteExtended, auth="key")


def kline(instrument_id: str, days: int | None = None, interval: str | None = None,
          limit: int | None = None, start: Instant | None = None, end: Instant | None = None,
          adjust: str | None = None) -> Call[m.CandleSeries]:
    """`adjust`: "diff" or "ratio", a futures product's series back-adjusted at its main contract's rolls (SPEC 19)."""
    params = _params(days=days, interval=interval, limit=limit, adjust=adjust,
                     **{"from": _instant("start", start), "to": _instant("end", end)})
    return Call("GET", f"/api/v1/kline/{_seg(instrument_id)}", m.CandleSeries, params, auth="key")


def flatfiles(dataset: str, start: date | str | None = None, end: date | str | None = None,
              fmt: str | None = None, venue: str | None = None) -> Call[m.FlatFileList]:
    """SPEC 18's listing: the closed trading days' files of `dataset` from `start` to `end` (both included); with
    `venue`, that venue's own files."""
    params = _params(dataset=dataset, format=fmt, venue=venue, **{"from": _day(start), "to": _day(end)})
    return Call("GET", "/api/v1/flatfiles", m.FlatFileList, params, auth="key")


def _day(value: date | str | None) -> str | None:
    return value.isoformat() if isinstance(value, date) else value


def _instant(name: str, value: Instant | None) -> str | None:
    """A range bound as the server reads it (SPEC 14): an aware datetime as ISO 8601 with its offset, a date as
    YYYY-MM-DD (00:00 Asia/Shanghai), an int as epoch milliseconds, a str as given (e.g. a `next` cursor)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name}: a datetime, date, epoch milliseconds or ISO string, not {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{name}: a naive datetime is ambiguous; give it a timezone (e.g. tzinfo=timezone.utc)")
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{name}: a datetime, date, epoch milliseconds or ISO string, not {type(value).__name__}")


def spreads() -> Call[m.SpreadList]:
    return Call("GET", "/api/v1/spreads", m.SpreadList, auth="key")


def inventory() -> Call[m.InventoryList]:
    return Call("GET", "/api/v1/inventory", m.InventoryList, auth="key")


# --- public site (/api) -------------------------------------------------------------------------

def market() -> Call[m.MarketSnapshot]:
    return Call("GET", "/api/market", m.MarketSnapshot, conditional=True)


def market_category(category_id: str) -> Call[m.CategorySnapshot]:
    return Call("GET", f"/api/market/{_seg(category_id)}", m.CategorySnapshot, conditional=True)


def news(limit: int | None = None, offset: int | None = None) -> Call[m.NewsPage]:
    return Call("GET", "/api/news", m.NewsPage, _params(limit=limit, offset=offset))


def research(limit: int | None = None, offset: int | None = None) -> Call[m.ResearchPage]:
    return Call("GET", "/api/research", m.ResearchPage, _params(limit=limit, offset=offset))


def register(email: str, password: str, name: str | None = None, company: str | None = None) -> Call[m.Registered]:
    body = _body(email=email, password=password, name=name, company=company)
    return Call("POST", "/api/auth/register", m.Registered, body=body)


def login(email: str, password: str) -> Call[m.Token]:
    return Call("POST", "/api/auth/login", m.Token, body={"email": email, "password": password})


def submit_inquiry(product: str, quantity: float, unit: str | None = None, message: str | None = None,
                   delivery_place: str | None = None, contact_phone: str | None = None) -> Call[m.Created]:
    body = _body(product=product, quantity=quantity, unit=unit, message=message,
                 deliveryPlace=delivery_place, contactPhone=contact_phone)
    return Call("POST", "/api/submit-inquiry", m.Created, body=body, auth="bearer")


def cooperation(company: str, contact_name: str, email: str | None = None, phone: str | None = None,
                type: str | None = None, message: str | None = None) -> Call[m.Created]:
    body = _body(company=company, contactName=contact_name, email=email, phone=phone, type=type, message=message)
    return Call("POST", "/api/cooperation", m.Created, body=body)


def receipt(receipt_no: str) -> Call[m.Receipt]:
    return Call("GET", f"/api/receipt/{_seg(receipt_no)}", m.Receipt)


def verify_anchor(hash: str) -> Call[m.Verification]:
    return Call("GET", "/api/verify-anchor", m.Verification, _params(hash=hash))


# --- operations ---------------------------------------------------------------------------------

def health() -> Call[m.Health]:
    return Call("GET", "/healthz", m.Health)


def ready() -> Call[m.Ready]:
    return Call("GET", "/readyz", m.Ready)


def config() -> Call[m.ClientConfig]:
    return Call("GET", "/api/config", m.ClientConfig)


# --- turning answers into values ------------------------------------------------------------------

class Outcome:
    """Decoding, the ETag cache and the 429 policy: shared state of one client."""

    def __init__(self, max_retries: int, max_retry_wait: float) -> None:
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._decoders: dict[type, msgspec.json.Decoder[Any]] = {}
        self._etags: dict[str, tuple[str, Any]] = {}

    def headers(self, call: Call[Any], cache_key: str) -> dict[str, str]:
        cached = self._etags.get(cache_key) if call.conditional else None
        return {"If-None-Match": cached[0]} if cached else {}

    def read(self, call: Call[T], cache_key: str, status: int, headers: Mapping[str, str], content: bytes,
             attempt: int) -> T | Retry:
        if 200 <= status < 300:
            if call.result is type(None):
                return None  # type: ignore[return-value]
            value: T = self._decoder(call.result).decode(content)
            etag = headers.get("etag")
            if call.conditional and etag:
                self._etags[cache_key] = (etag, value)
            return value
        if status == 304 and cache_key in self._etags:
            cached: T = self._etags[cache_key][1]
            return cached
        error = problem_error(status, _problem(status, headers, content), headers)
        if isinstance(error, RateLimited) and attempt < self.max_retries:
            wait = retry_after_seconds(headers, error.problem)
            wait = 1.0 if wait is None else wait
            if wait <= self.max_retry_wait:
                return Retry(wait)
        raise error

    def _decoder(self, result: type[T]) -> msgspec.json.Decoder[T]:
        decoder = self._decoders.get(result)
        if decoder is None:
            decoder = self._decoders[result] = msgspec.json.Decoder(result)
        return decoder


def _problem(status: int, headers: Mapping[str, str], content: bytes) -> dict[str, Any]:
    """The problem document, or one made up from the status when the body is not one (a proxy's page)."""
    try:
        doc = msgspec.json.decode(content) if content else None
    except msgspec.DecodeError:
        doc = None
    if isinstance(doc, dict) and ("code" in doc or "title" in doc):
        return doc
    text = content[:200].decode("utf-8", "replace")
    return {"type": "about:blank", "title": f"HTTP {status}", "status": status, "detail": text, "code": ""}
