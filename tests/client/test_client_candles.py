"""`candles()` against a real server (SPEC 14 range queries, issue 20 item 6): it pages through `next` (or back
from `end` without `start`) and gets exactly the candles the plain `/kline` call gives for those buckets."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest
from market_client import AsyncMarketClient, BadRequest, MarketClient

from tests.conftest import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A slow demo feed (a tick every 10 s): the series do not move between the plain call and the pages."""
    srv = ServerProcess(tmp_path_factory.mktemp("candles") / "data", "granian", "--public-rate", "100000",
                        "--tick-interval-ms", "10000")
    yield srv
    assert srv.stop() == 0, srv.output()


@pytest.fixture(scope="module")
def key(server: ServerProcess) -> str:
    return server.demo_key


class Counting(httpx.HTTPTransport):
    """The real transport, counting the requests it sends (how many pages a call took)."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(str(request.url))
        return super().handle_request(request)


# --- candles(): range queries, page by page --------------------------------------------------------------


def test_candles_pages_through_next_and_equals_the_plain_series(server: ServerProcess, key: str) -> None:
    transport = Counting()
    with MarketClient(server.base, key, transport=transport) as api:
        whole = api.kline("brent", interval="1h", limit=1000).series
        assert len(whole) > 30
        start = whole[0].t
        paged = api.candles("brent", "1h", start=start, end=whole[-1].t, page_size=7)
        sent = len(transport.paths) - 1
        assert paged == whole[:-1]  # the live candle is the end, which the half-open range leaves out
        assert sent == -(-(len(whole) - 1) // 7)  # ceil: one request per page, the last without `next`
        assert all("limit=7" in p and "from=" in p for p in transport.paths[1:])
        window = api.candles("brent", "1h", start=whole[5].start, end=whole[12].start)  # aware datetimes
        assert window == whole[5:12]


def test_candles_without_start_pages_back_from_the_end(server: ServerProcess, key: str) -> None:
    transport = Counting()
    with MarketClient(server.base, key, transport=transport) as api:
        daily = api.kline("brent", days=90).series
        got = api.candles("brent", "1d", end=daily[-1].t, page_size=20)
        # a range reaches every daily candle held (the book keeps a third more than 90 days: SPEC 16's axis)
        assert got[-89:] == daily[:-1] and len(got) > 89
        assert len(transport.paths) == 2 + len(got) // 20  # the plain call, then pages of 20 back to the first
        assert all("from=" not in p and "to=" in p for p in transport.paths[1:])


def test_async_candles_equal_the_sync_ones(server: ServerProcess, key: str) -> None:
    async def run() -> None:
        async with AsyncMarketClient(server.base, key) as api:
            series = (await api.kline("brent", interval="15m", limit=50)).series
            epoch_ms = int(datetime.fromisoformat(series[10].t).timestamp() * 1000)
            got = await api.candles("brent", "15m", start=epoch_ms, end=series[40].t, page_size=9)
        assert got == series[10:40]

    asyncio.run(run())


def test_bad_ranges_raise_bad_request_naming_the_parameter(server: ServerProcess, key: str) -> None:
    with MarketClient(server.base, key) as api:
        with pytest.raises(BadRequest) as reversed_range:
            api.candles("brent", "1m", start="2026-11-24", end="2026-11-23")
        assert reversed_range.value.code == "invalid_parameter" and reversed_range.value.errors[0]["field"] == "to"
        with pytest.raises(BadRequest) as garbage:
            api.candles("brent", "1m", start="yesterday")
        assert garbage.value.errors[0]["field"] == "from"
        assert api.candles("brent", "1m", start="2020-01-01", end="2020-01-02") == []  # outside what is held


def test_kline_adjust_back_adjusts_a_product_before_its_rolls(server: ServerProcess, key: str) -> None:
    """SPEC 19's `adjust` through the client: the bars after the last roll are the plain ones, each bar before it
    moved by the gap (diff) or scaled (ratio); a bad mode is the server's 400 (BadRequest)."""
    with MarketClient(server.base, key) as api:
        rolls = httpx.get(server.base + "/api/v1/instruments/methanol/rolls",
                          headers={"X-SERVICE-Key": key}).json()["rolls"]
        last = rolls[-1]["tradingDay"]
        plain = api.kline("methanol", days=90).series
        for mode in ("diff", "ratio"):
            moved = api.kline("methanol", days=90, adjust=mode).series
            assert [b.t for b in moved] == [b.t for b in plain]
            assert [b.close for b in moved if b.t >= last][:-1] == [b.close for b in plain if b.t >= last][:-1]
            before = [(a.close, b.close) for a, b in zip(moved, plain, strict=True) if b.t < last]
            assert before and any(a != b for a, b in before), mode
        with pytest.raises(BadRequest):
            api.kline("methanol", days=90, adjust="sideways")
