"""Per-IP limits on what costs the server without a valid key (401s, WebSocket handshakes), on a live feed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.conftest import RUNTIMES, ServerProcess

PUBLIC_RATE = 5
HANDSHAKE_RATE = 3


@pytest.fixture(scope="module", params=RUNTIMES)
def live(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp(f"abuse-{request.param}")
    ticks = root / "ticks.jsonl"
    ticks.write_text("")
    srv = ServerProcess(root / "data", request.param, "--feed", f"jsonl:{ticks}",
                        "--public-rate", str(PUBLIC_RATE), "--ws-handshake-rate", str(HANDSHAKE_RATE))
    yield srv
    assert srv.stop() == 0, srv.output()


def _refusals(srv: ServerProcess, name: str, label: str, value: str) -> float:
    text = httpx.get(srv.base + "/metrics").text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels.get(label) == value:
                return s.value
    return 0.0


def test_inventory_is_demo_even_under_a_live_feed(live: ServerProcess) -> None:
    headers = {"X-SERVICE-Key": live.demo_key}
    assert httpx.get(live.base + "/api/v1/quotes", headers=headers).json()["demo"] is False
    inventory = httpx.get(live.base + "/api/v1/inventory", headers=headers)
    assert inventory.status_code == 200 and inventory.json()["demo"] is True  # a synthetic series


def test_unauthorized_requests_are_limited_per_client_ip(live: ServerProcess) -> None:
    with live.client() as http:
        for i in range(PUBLIC_RATE):  # a different made-up key each time: the negative cache does not help
            resp = http.get("/api/v1/quotes", headers={"X-SERVICE-Key": f"mk_guess{i}"})
            assert resp.status_code == 401
            assert resp.headers["x-ratelimit-limit"] == str(PUBLIC_RATE)
            assert resp.headers["x-ratelimit-remaining"] == str(PUBLIC_RATE - 1 - i)
        refused = http.get("/api/v1/quotes")  # no key at all counts too
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        problem = refused.json()
        assert problem["code"] == "rate_limited" and problem["retryAfter"] >= 1
        assert refused.headers["content-type"] == "application/problem+json"
        assert http.get("/api/v1/quotes", headers={"X-SERVICE-Key": live.demo_key}).status_code == 200
    assert _refusals(live, "market_rate_limit_refusals_total", "bucket", "unauthorized") == 1


def test_websocket_handshakes_are_limited_per_client_ip(live: ServerProcess) -> None:
    async def handshake(key: str) -> InvalidStatus:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"{live.ws_base}/ws/quotes?key={key}", open_timeout=10):
                pass
        return refused.value

    async def scenario() -> None:
        for i in range(HANDSHAKE_RATE):
            assert (await handshake(f"mk_nope{i}")).response.status_code == 401
        limited = (await handshake(live.demo_key)).response  # even a good key: this address is over its rate
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert limited.headers["Content-Type"] == "application/problem+json"
        assert orjson.loads(limited.body)["code"] == "rate_limited"

    asyncio.run(scenario())
    assert _refusals(live, "market_ws_handshake_refusals_total", "reason", "rate_limited") == 1
