"""The REST clients against a real server: every method returns typed data; problems raise typed exceptions;
a 429 is retried after Retry-After."""

from __future__ import annotations

import asyncio
import uuid
from datetime import date, datetime

import pytest
from market_client import (
    AsyncMarketClient,
    BadRequest,
    Conflict,
    MarketClient,
    NotFound,
    RateLimited,
    Unauthorized,
)
from market_client import models as m

from tests.conftest import ServerProcess

RECEIPT = "WR-NB-000101"  # a demo receipt


@pytest.fixture(scope="module")
def api(server: ServerProcess, key: str) -> MarketClient:
    with MarketClient(server.base, key) as client:
        yield client  # type: ignore[misc]


def test_keyed_endpoints_return_typed_results(api: MarketClient) -> None:
    everything = api.quotes()
    assert isinstance(everything, m.QuoteList) and everything.count == len(everything.quotes) >= 40
    assert all(isinstance(q, m.Quote) and isinstance(q.name, m.Localised) for q in everything.quotes)
    oil = api.quotes(kind="oil")
    assert oil.quotes and {q.kind for q in oil.quotes} == {"oil"}
    picked = api.quotes(ids=["wti", "brent"])
    assert [q.id for q in picked.quotes] == [q.id for q in everything.quotes if q.id in {"brent", "wti"}]
    brent = api.quote("brent")
    assert isinstance(brent, m.QuoteExtended) and brent.id == "brent" and brent.extended and brent.seq >= 0
    assert isinstance(brent.updated, datetime) and brent.updated.utcoffset() is not None
    kline = api.kline("brent", days=5)
    assert isinstance(kline, m.CandleSeries) and len(kline.series) == 5
    candle = kline.series[-1]
    assert isinstance(candle.start, date) and candle.low <= min(candle.open, candle.close) <= candle.high
    spreads = api.spreads()
    assert [s.pair for s in spreads.spreads] == ["methanol", "PTA", "PP", "PE", "PVC"]
    assert all(isinstance(s, m.Spread) and s.vat == 0.13 for s in spreads.spreads)
    inventory = api.inventory()
    assert inventory.items and all(isinstance(i, m.InventoryItem) for i in inventory.items)


def test_intraday_candles_and_their_parameter_errors(api: MarketClient) -> None:
    five = api.kline("brent", interval="5m", limit=12)
    assert five.interval == "5m" and 0 < len(five.series) <= 12
    starts = [c.start for c in five.series]
    assert all(isinstance(t, datetime) and t.utcoffset() is not None for t in starts) and starts == sorted(starts)
    daily = api.kline("brent", interval="1d", days=3)
    assert len(daily.series) == 3 and type(daily.series[-1].start) is date
    with pytest.raises(BadRequest) as mixed:  # days with a range (days with any interval is fine: issue 21)
        api.kline("brent", days=3, interval="1h", start="2026-11-20")
    assert mixed.value.code == "invalid_parameter" and mixed.value.errors[0]["field"] == "days"
    with pytest.raises(BadRequest) as bad_interval:
        api.kline("brent", interval="2m")
    assert bad_interval.value.errors[0]["field"] == "interval"


def test_public_endpoints_return_typed_results(api: MarketClient) -> None:
    market = api.market()
    assert isinstance(market, m.MarketSnapshot) and len(market.categories) == 8
    assert api.market() is market  # revalidated with its ETag: the 304 hands back the cached value
    category = api.market_category(market.categories[0].id)
    assert isinstance(category, m.CategorySnapshot) and category.count == len(category.quotes)
    news = api.news(limit=2)
    assert isinstance(news, m.NewsPage) and news.limit == 2 and all(isinstance(i, m.NewsItem) for i in news.items)
    research = api.research(limit=1, offset=1)
    assert research.offset == 1 and all(isinstance(i, m.ResearchItem) for i in research.items)
    receipt = api.receipt(RECEIPT)
    assert isinstance(receipt, m.Receipt) and receipt.receipt_no == RECEIPT
    check = api.verify_anchor(receipt.evidence_hash)
    assert isinstance(check, m.Verification) and check.hash == receipt.evidence_hash
    assert isinstance(api.health(), m.Health) and api.ready().status == "ready"
    assert api.config().ws_path == "/ws/quotes"


def test_accounts_inquiries_and_cooperation(api: MarketClient) -> None:
    email = f"client-{uuid.uuid4().hex[:8]}@example.com"
    registered = api.register(email, "correct horse battery", name="Client Test")
    assert isinstance(registered, m.Registered) and registered.email == email
    token = api.login(email, "correct horse battery")
    assert isinstance(token, m.Token) and token.token_type == "Bearer" and api.token == token.token
    inquiry = api.submit_inquiry("PTA", 500, unit="t", message="via market_client")
    assert isinstance(inquiry, m.Created) and inquiry.status == "received"
    intent = api.cooperation("ACME Trading", "Li Lei", email=email, type="data")
    assert isinstance(intent, m.Created) and isinstance(intent.created_at, datetime)
    with pytest.raises(Conflict) as dup:
        api.register(email, "correct horse battery")
    assert dup.value.status == 409


def test_problems_raise_typed_exceptions(server: ServerProcess, api: MarketClient) -> None:
    with MarketClient(server.base) as anonymous, pytest.raises(Unauthorized) as no_key:
        anonymous.quotes()
    assert (no_key.value.status, no_key.value.code) == (401, "unauthorized")
    assert no_key.value.problem["status"] == 401 and "unauthorized" in no_key.value.type
    with MarketClient(server.base, "mk_not_a_key") as wrong, pytest.raises(Unauthorized):
        wrong.quote("brent")
    with pytest.raises(NotFound) as missing:
        api.quote("no-such-instrument")
    assert (missing.value.status, missing.value.code) == (404, "not_found") and missing.value.detail
    with pytest.raises(BadRequest) as bad:
        api.quotes(kind="metal")
    assert bad.value.status == 400 and bad.value.errors[0]["field"] == "kind"
    with pytest.raises(BadRequest) as bad_days:
        api.kline("brent", days=0)
    assert bad_days.value.code == "invalid_parameter"
    with pytest.raises(NotFound):
        api.market_category("no-such-category")
    with pytest.raises(Unauthorized):
        MarketClient(server.base).submit_inquiry("PTA", 1)


def test_rate_limited_is_retried_after_retry_after(server: ServerProcess) -> None:
    _, key = server.create_key("enterprise", "--rate", "60")  # a burst of 60, then one a second
    waits: list[float] = []
    with MarketClient(server.base, key, max_retries=3, on_retry=waits.append) as patient:
        answers = [patient.quote("wti") for _ in range(62)]  # past the burst: refused, waits, then answered
    assert all(isinstance(a, m.QuoteExtended) and a.id == "wti" for a in answers)
    assert waits and all(w >= 1 for w in waits)
    with MarketClient(server.base, key, max_retries=0) as impatient, pytest.raises(RateLimited) as limited:
        for _ in range(61):
            impatient.quote("brent")
    assert limited.value.status == 429 and limited.value.code == "rate_limited"
    assert limited.value.retry_after >= 1 and limited.value.headers["retry-after"]


def test_rate_limited_wait_beyond_the_cap_raises_at_once(server: ServerProcess) -> None:
    _, key = server.create_key("enterprise", "--rate", "1")  # after one request, the next waits 60 s
    waits: list[float] = []
    with MarketClient(server.base, key, max_retry_wait=5, on_retry=waits.append) as api:
        api.spreads()
        with pytest.raises(RateLimited) as limited:
            api.spreads()
    assert limited.value.retry_after > 5 and waits == []


def test_async_client_covers_every_endpoint(server: ServerProcess, key: str) -> None:
    async def run() -> None:
        async with AsyncMarketClient(server.base, key) as api:
            quotes, quote, kline, spreads, inventory = await asyncio.gather(
                api.quotes(kind="fx"), api.quote("wti"), api.kline("wti", days=3), api.spreads(), api.inventory())
            assert {q.kind for q in quotes.quotes} == {"fx"} and quote.id == "wti" and len(kline.series) == 3
            assert isinstance(spreads, m.SpreadList) and isinstance(inventory, m.InventoryList)
            market = await api.market()
            assert await api.market() is market
            assert isinstance(await api.market_category(market.categories[-1].id), m.CategorySnapshot)
            assert isinstance(await api.news(), m.NewsPage) and isinstance(await api.research(), m.ResearchPage)
            receipt = await api.receipt(RECEIPT)
            assert (await api.verify_anchor(receipt.evidence_hash)).hash == receipt.evidence_hash
            email = f"async-{uuid.uuid4().hex[:8]}@example.com"
            assert (await api.register(email, "correct horse battery")).email == email
            await api.login(email, "correct horse battery")
            assert (await api.submit_inquiry("MEG", 2.5)).status == "received"
            assert isinstance(await api.cooperation("ACME", "Han Meimei", phone="+86 21 5555 0100"), m.Created)
            assert (await api.health()).status == "ok" and (await api.ready()).epoch
            assert (await api.config()).ws_port == server.ws_port
            with pytest.raises(NotFound):
                await api.quote("nope")
            with pytest.raises(BadRequest):
                await api.receipt("!")

    asyncio.run(run())
