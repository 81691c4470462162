"""Sync and async REST clients: one method per endpoint, typed results, problems as exceptions.

    with MarketClient(key="mk_...") as api:
        brent = api.quote("brent")          # QuoteExtended
    async with AsyncMarketClient(key="mk_...") as api:
        oil = await api.quotes(kind="oil")  # QuoteList

A 429 is retried after its `Retry-After` (at most `max_retries` times, and only when the
wait is at most `max_retry_wait` seconds); after that it raises `RateLimited`.
`/api/market` answers are revalidated with their ETag (a 304 returns the cached value).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

import httpx
import msgspec

from market_client import _calls as c
from market_client import flatfiles
from market_client import models as m
from market_client import sources as src
from market_client import status as st
from market_client.console import AsyncConsole, Console
from market_client.errors import MarketError, NotFound, TransportError
from market_client.events import CandleGap
from market_client.paging import MAX_PAGE, Pager
from market_client.stream import QuoteStream

T = TypeVar("T")
USER_AGENT = "market-client/0.1.0"
RetryHook = Callable[[float], None]


class _Base:
    def __init__(self, url: str = c.DEFAULT_URL, key: str | None = None, *, token: str | None = None,
                 timeout: float = 10.0, max_retries: int = 3, max_retry_wait: float = 60.0,
                 on_retry: RetryHook | None = None) -> None:
        self.url = url.rstrip("/")
        self.key = key
        self.token = token  # Bearer JWT for submit_inquiry; login() sets it
        self.timeout = timeout
        self.on_retry = on_retry
        self._outcome = c.Outcome(max_retries, max_retry_wait)

    def _prepare(self, call: c.Call[Any]) -> tuple[str, dict[str, str], bytes | None]:
        """URL (also the ETag cache's key), headers and body of a call."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if call.auth == "key" and self.key:
            headers["X-SERVICE-Key"] = self.key
        if call.auth == "bearer" and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(call.headers)
        content = None
        if isinstance(call.body, c.RawBody):
            content = call.body.data
            headers["Content-Type"] = call.body.media_type
        elif call.body is not None:
            content = msgspec.json.encode(call.body)
            headers["Content-Type"] = "application/json"
        url = self.url + call.path + ("?" + urlencode(call.params) if call.params else "")
        headers.update(self._outcome.headers(call, url))
        return url, headers, content

    def _retrying(self, wait: float) -> None:
        if self.on_retry is not None:
            self.on_retry(wait)

    def ws_url(self, ws_port: int = 8001) -> str:
        """The stream's URL on this server's host with the given port (SPEC: 8001 by default)."""
        parts = urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return f"{scheme}://{parts.hostname}:{ws_port}/ws/quotes"


class MarketClient(_Base):
    """Blocking client over `httpx.Client` (one connection pool; use as a context manager or `close()`)."""

    def __init__(self, url: str = c.DEFAULT_URL, key: str | None = None, **options: Any) -> None:
        transport = options.pop("transport", None)
        super().__init__(url, key, **options)
        self._http = httpx.Client(timeout=self.timeout, transport=transport)
        self.console = Console(self)  # the service console's calls (Bearer: login() first)

    def __enter__(self) -> MarketClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def call(self, call: c.Call[T]) -> T:
        for attempt in itertools.count():
            url, headers, content = self._prepare(call)
            try:
                r = self._http.request(call.method, url, headers=headers, content=content)
            except httpx.TransportError as exc:
                raise TransportError(f"{call.method} {call.path}: {exc!r}") from exc
            out = self._outcome.read(call, url, r.status_code, r.headers, r.content, attempt)
            if not isinstance(out, c.Retry):
                return out
            self._retrying(out.seconds)
            time.sleep(out.seconds)
        raise AssertionError("unreachable")

    # /api/v1 (key)
    def quotes(self, kind: str | None = None, ids: Sequence[str] | None = None) -> m.QuoteList:
        return self.call(c.quotes(kind, tuple(ids) if ids is not None else None))

    def quote(self, instrument_id: str) -> m.QuoteExtended:
        return self.call(c.quote(instrument_id))

    def kline(self, instrument_id: str, days: int | None = None, *, interval: str | None = None,
              limit: int | None = None, start: c.Instant | None = None, end: c.Instant | None = None,
              adjust: str | None = None) -> m.CandleSeries:
        """`adjust`: "diff" or "ratio" for a futures product's series back-adjusted at its rolls (SPEC 19)."""
        return self.call(c.kline(instrument_id, days, interval, limit, start, end, adjust))

    def ingest(self, ticks: Iterable[Mapping[str, Any]] | bytes | str,
               idempotency_key: str | None = None) -> src.IngestAnswer:
        """Publish ticks of the key's account's own instruments (an ingest key; SPEC 20, docs/ingest.md): mappings
        `{id, price, ts?, volume?}` or JSON lines, at most 1 MiB a call; bad lines come back by number, the good ones
        are kept. A 429 (the account's ticks a second) kept nothing: it is retried as any 429. Every call sends an
        `Idempotency-Key` (a new UUID unless `idempotency_key` is given: give the same one to send a batch again
        after a call that failed), so its own retries keep the batch once."""
        return self.call(src.ingest(ticks, idempotency_key))

    def candles(self, instrument_id: str, interval: str = "1d", *, start: c.Instant | None = None,
                end: c.Instant | None = None, page_size: int = MAX_PAGE) -> list[m.Candle]:
        """Every candle with `start <= t < end`, ascending, fetched page by page (`next`); `start=None`: from the
        earliest held, `end=None`: up to and including the live candle."""
        pager = Pager(instrument_id, interval, start, end, page_size)
        out: list[m.Candle] = []
        while not pager.done:
            out += pager.take(self.call(pager.call()))
        return out

    def spreads(self) -> m.SpreadList:
        return self.call(c.spreads())

    def flatfiles(self, dataset: str, start: date | str | None = None, end: date | str | None = None,
                  fmt: str | None = None, venue: str | None = None) -> m.FlatFileList:
        """The closed trading days' files of `dataset` (ticks, candles-1m, candles-1d) from `start` to `end`,
        both included, as csv.gz (default) or parquet (SPEC 18; professional and enterprise plans). With `venue`
        (e.g. "zce"): that venue's own files, its instruments only, each day's from the venue's close plus 2
        minutes; else the all-venue files, made once every venue trading the day has closed."""
        return self.call(c.flatfiles(dataset, start, end, fmt, venue))

    def download_flatfile(self, entry: m.FlatFile, directory: str | os.PathLike[str] = ".",
                          attempts: int = 5) -> Path:
        """Download a listed file into `directory`, resuming a broken download and checking its sha256
        (market_client/flatfiles.py); the path written."""
        headers = {"User-Agent": USER_AGENT, **({"X-SERVICE-Key": self.key} if self.key else {})}
        return flatfiles.download(self._http, self.url, headers, entry, directory, attempts,
                                  self._outcome.max_retry_wait)

    def inventory(self) -> m.InventoryList:
        return self.call(c.inventory())

    # /api (public site)
    def market(self) -> m.MarketSnapshot:
        return self.call(c.market())

    def market_category(self, category_id: str) -> m.CategorySnapshot:
        return self.call(c.market_category(category_id))

    def news(self, limit: int | None = None, offset: int | None = None) -> m.NewsPage:
        return self.call(c.news(limit, offset))

    def research(self, limit: int | None = None, offset: int | None = None) -> m.ResearchPage:
        return self.call(c.research(limit, offset))

    def register(self, email: str, password: str, name: str | None = None,
                 company: str | None = None) -> m.Registered:
        return self.call(c.register(email, password, name, company))

    def login(self, email: str, password: str) -> m.Token:
        token = self.call(c.login(email, password))
        self.token = token.token
        return token

    def submit_inquiry(self, product: str, quantity: float, *, unit: str | None = None,
                       message: str | None = None, delivery_place: str | None = None,
                       contact_phone: str | None = None) -> m.Created:
        return self.call(c.submit_inquiry(product, quantity, unit, message, delivery_place, contact_phone))

    def cooperation(self, company: str, contact_name: str, *, email: str | None = None, phone: str | None = None,
                    type: str | None = None, message: str | None = None) -> m.Created:
        return self.call(c.cooperation(company, contact_name, email, phone, type, message))

    def receipt(self, receipt_no: str) -> m.Receipt:
        return self.call(c.receipt(receipt_no))

    def verify_anchor(self, hash: str) -> m.Verification:
        return self.call(c.verify_anchor(hash))

    # operations
    def health(self) -> m.Health:
        return self.call(c.health())

    def ready(self) -> m.Ready:
        return self.call(c.ready())

    def status(self) -> st.Status:
        """`/api/v1/status` (no key): the indicator, every component, unresolved incidents, maintenance."""
        return self.call(st.status())

    def incidents(self) -> st.IncidentList:
        """`/api/v1/status/incidents` (no key): the newest 50 incidents, resolved ones too."""
        return self.call(st.incidents())

    def quality(self, venue: str | None = None, start: date | str | None = None,
                end: date | str | None = None) -> st.QualityList:
        """`/api/v1/quality`: each venue's trading days with their condition and gaps."""
        return self.call(st.quality(venue, start, end))

    def config(self) -> m.ClientConfig:
        return self.call(c.config())


class AsyncMarketClient(_Base):
    """The same methods as `MarketClient`, awaitable, over `httpx.AsyncClient`; plus `stream()`."""

    def __init__(self, url: str = c.DEFAULT_URL, key: str | None = None, **options: Any) -> None:
        transport = options.pop("transport", None)
        super().__init__(url, key, **options)
        self._http = httpx.AsyncClient(timeout=self.timeout, transport=transport)
        self._ws_url: str | None = None
        self.console = AsyncConsole(self)  # the service console's calls (Bearer: login() first)

    async def __aenter__(self) -> AsyncMarketClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, call: c.Call[T]) -> T:
        for attempt in itertools.count():
            url, headers, content = self._prepare(call)
            try:
                r = await self._http.request(call.method, url, headers=headers, content=content)
            except httpx.TransportError as exc:
                raise TransportError(f"{call.method} {call.path}: {exc!r}") from exc
            out = self._outcome.read(call, url, r.status_code, r.headers, r.content, attempt)
            if not isinstance(out, c.Retry):
                return out
            self._retrying(out.seconds)
            await asyncio.sleep(out.seconds)
        raise AssertionError("unreachable")

    # /api/v1 (key)
    async def quotes(self, kind: str | None = None, ids: Sequence[str] | None = None) -> m.QuoteList:
        return await self.call(c.quotes(kind, tuple(ids) if ids is not None else None))

    async def quote(self, instrument_id: str) -> m.QuoteExtended:
        return await self.call(c.quote(instrument_id))

    async def kline(self, instrument_id: str, days: int | None = None, *, interval: str | None = None,
                    limit: int | None = None, start: c.Instant | None = None,
                    end: c.Instant | None = None, adjust: str | None = None) -> m.CandleSeries:
        return await self.call(c.kline(instrument_id, days, interval, limit, start, end, adjust))

    async def ingest(self, ticks: Iterable[Mapping[str, Any]] | bytes | str,
                     idempotency_key: str | None = None) -> src.IngestAnswer:
        """As `MarketClient.ingest`."""
        return await self.call(src.ingest(ticks, idempotency_key))

    async def candles(self, instrument_id: str, interval: str = "1d", *, start: c.Instant | None = None,
                      end: c.Instant | None = None, page_size: int = MAX_PAGE) -> list[m.Candle]:
        """As `MarketClient.candles`."""
        pager = Pager(instrument_id, interval, start, end, page_size)
        out: list[m.Candle] = []
        while not pager.done:
            out += pager.take(await self.call(pager.call()))
        return out

    async def spreads(self) -> m.SpreadList:
        return await self.call(c.spreads())

    async def inventory(self) -> m.InventoryList:
        return await self.call(c.inventory())

    # /api (public site)
    async def market(self) -> m.MarketSnapshot:
        return await self.call(c.market())

    async def market_category(self, category_id: str) -> m.CategorySnapshot:
        return await self.call(c.market_category(category_id))

    async def news(self, limit: int | None = None, offset: int | None = None) -> m.NewsPage:
        return await self.call(c.news(limit, offset))

    async def research(self, limit: int | None = None, offset: int | None = None) -> m.ResearchPage:
        return await self.call(c.research(limit, offset))

    async def register(self, email: str, password: str, name: str | None = None,
                       company: str | None = None) -> m.Registered:
        return await self.call(c.register(email, password, name, company))

    async def login(self, email: str, password: str) -> m.Token:
        token = await self.call(c.login(email, password))
        self.token = token.token
        return token

    async def submit_inquiry(self, product: str, quantity: float, *, unit: str | None = None,
                             message: str | None = None, delivery_place: str | None = None,
                             contact_phone: str | None = None) -> m.Created:
        return await self.call(c.submit_inquiry(product, quantity, unit, message, delivery_place, contact_phone))

    async def cooperation(self, company: str, contact_name: str, *, email: str | None = None,
                          phone: str | None = None, type: str | None = None,
                          message: str | None = None) -> m.Created:
        return await self.call(c.cooperation(company, contact_name, email, phone, type, message))

    async def receipt(self, receipt_no: str) -> m.Receipt:
        return await self.call(c.receipt(receipt_no))

    async def verify_anchor(self, hash: str) -> m.Verification:
        return await self.call(c.verify_anchor(hash))

    # operations
    async def health(self) -> m.Health:
        return await self.call(c.health())

    async def ready(self) -> m.Ready:
        return await self.call(c.ready())

    async def status(self) -> st.Status:
        return await self.call(st.status())

    async def incidents(self) -> st.IncidentList:
        return await self.call(st.incidents())

    async def quality(self, venue: str | None = None, start: date | str | None = None,
                      end: date | str | None = None) -> st.QualityList:
        return await self.call(st.quality(venue, start, end))

    async def config(self) -> m.ClientConfig:
        return await self.call(c.config())

    # stream
    def stream(self, ids: Sequence[str] | None = None, **options: Any) -> QuoteStream:
        """A resuming `QuoteStream` on this server with this key; the WebSocket port is read from
        `/api/config` unless `ws_url=` is given. With `candles=[...]`, candles a reconnect missed are fetched
        with range queries and yielded as final `CandleUpdate`s (`backfill=None` yields `CandleGap`s instead)."""
        if "ws_url" not in options:
            options["ws_url"] = self._discover_ws_url
        options.setdefault("backfill", self._backfill)
        return QuoteStream(ids, key=self.key, **options)

    async def _backfill(self, gap: CandleGap) -> list[m.Candle]:
        """The candles of a stream's `CandleGap` (final ones: the gap ends at a bucket that is live now)."""
        return await self.candles(gap.id, gap.interval, start=gap.start, end=gap.end)

    async def _discover_ws_url(self) -> str:
        """Asked once, then remembered: a reconnect while the server restarts must not fall back to another
        port. Only a server without /api/config (404) means SPEC's default port; anything else is retried."""
        if self._ws_url is None:
            try:
                cfg = await self.config()
            except NotFound:
                self._ws_url = self.ws_url()
            except MarketError as exc:  # down, restarting: the stream's backoff tries again
                raise OSError(f"cannot read the WebSocket port from {self.url}/api/config: {exc}") from exc
            else:
                self._ws_url = self.ws_url(cfg.ws_port).replace("/ws/quotes", cfg.ws_path)
        return self._ws_url
