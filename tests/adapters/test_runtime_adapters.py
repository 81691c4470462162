"""The runtime adapters in process (the middle tier of ENGINEERING.md's three, after uvicorn's tests/protocols):
Granian's RSGI adapter and Robyn's handlers driven with fakes of what each runtime hands them, against one built
hub per runtime (real market state, key cache over SQLite, GCRA, metrics), no socket and no server process.

The hub's loop runs in a thread of its own, as in the server: Granian's adapter is awaited on it; Robyn's sync
handler is called from this (test) thread, as actix's thread calls it, and hands what it cannot answer itself to
the loop and waits, as it does in the server.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest

from server.api.core.pipeline import MAX_BODY
from server.config import Runtime, Settings
from server.http.edge import EdgeGate
from server.http.granian_rsgi import RsgiAdapter
from server.root import Node, build
from server.store.sql.db import open_db
from server.store.sql.sqlite_sync import KeyRepo

T = TypeVar("T")


class Hub:
    """A built hub whose loop runs in a thread: `run(coro)` runs a coroutine there and waits for it."""

    def __init__(self, tmp: Path, runtime: Runtime) -> None:
        data = tmp / "data"
        data.mkdir()
        _, self.secret = KeyRepo(open_db(data)).create("professional", None, "adapter tests")
        self.node: Node = build(Settings(data_dir=data, runtime=runtime, demo_key=False))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.run(self._prepare())

    async def _prepare(self) -> None:
        """The parts the HTTP path uses (no listener, no feed: nothing ticks, so every version holds)."""
        await self.node.storage.open()
        await self.node.engine.start()
        await self.node.keys.refresh()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        self.run(self.node.engine.stop())
        self.run(self.node.storage.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def ok_count(hub: Hub, path: str) -> float:
    """Requests of `path` the remembered-answer path has answered 200 (its metrics cell), 0 if none remembered."""
    by_query = hub.node.app.answers.by_path.get(path, {})
    return sum(hot.count_ok[0] for hot in by_query.values())


# --- Granian (RSGI) --------------------------------------------------------------------------------------------


class Scope:
    """The attributes of Granian's RSGI HTTP scope the adapter reads."""

    def __init__(self, method: str, path: str, headers: dict[str, str], query: str = "") -> None:
        self.proto = "http"
        self.method, self.path, self.query_string = method, path, query
        self.headers = headers
        self.client = "127.0.0.1:50000"


class Proto:
    """Granian's RSGI HTTP protocol object: the body as async chunks, and the one response it takes."""

    def __init__(self, chunks: tuple[bytes, ...] = ()) -> None:
        self.chunks = list(chunks)
        self.answers: list[tuple[int, list[tuple[str, str]], bytes]] = []

    def __aiter__(self) -> Proto:
        return self

    async def __anext__(self) -> bytes:
        if not self.chunks:
            raise StopAsyncIteration
        return self.chunks.pop(0)

    def response_bytes(self, status: int, headers: Any, body: bytes) -> None:
        self.answers.append((status, list(headers), body))

    @property
    def answer(self) -> tuple[int, dict[str, str], bytes]:
        assert len(self.answers) == 1, self.answers  # exactly one response per request
        status, headers, body = self.answers[0]
        return status, {name.lower(): value for name, value in headers}, body


@pytest.fixture(scope="module")
def granian(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hub, RsgiAdapter]]:
    hub = Hub(tmp_path_factory.mktemp("granian"), Runtime.GRANIAN)
    yield hub, RsgiAdapter(hub.node.app, EdgeGate(5.0, 8), None)
    hub.close()


def rsgi(hub: Hub, adapter: RsgiAdapter, method: str, path: str, headers: dict[str, str] | None = None,
         body: bytes = b"", query: str = "") -> tuple[int, dict[str, str], bytes]:
    sent = {"host": "127.0.0.1:8000", **(headers or {})}
    if body:
        sent["content-length"] = str(len(body))
    proto = Proto((body,) if body else ())
    hub.run(adapter.__rsgi__(Scope(method, path, sent, query), proto))
    return proto.answer


def test_granian_a_keyed_get_is_remembered_then_answered_from_memory(granian: tuple[Hub, RsgiAdapter]) -> None:
    hub, adapter = granian
    key = {"x-service-key": hub.secret}
    status, first_headers, first = rsgi(hub, adapter, "GET", "/api/v1/spreads", key)
    assert status == 200 and first_headers["content-type"] == "application/json"
    before = ok_count(hub, "/api/v1/spreads")
    status, headers, again = rsgi(hub, adapter, "GET", "/api/v1/spreads", {**key, "x-request-id": "abc-1"})
    assert status == 200 and again == first and ok_count(hub, "/api/v1/spreads") == before + 1
    assert headers["x-request-id"] == "abc-1" and headers["etag"] == first_headers["etag"]
    assert int(headers["x-ratelimit-remaining"]) < int(first_headers["x-ratelimit-remaining"])
    status, headers, body = rsgi(hub, adapter, "GET", "/api/v1/spreads", {**key, "if-none-match": headers["etag"]})
    assert status == 304 and body == b"" and "content-type" not in headers


def test_granian_head_has_the_get_headers_and_no_body(granian: tuple[Hub, RsgiAdapter]) -> None:
    hub, adapter = granian
    key = {"x-service-key": hub.secret}
    _, get_headers, _ = rsgi(hub, adapter, "GET", "/api/v1/inventory", key)
    status, headers, body = rsgi(hub, adapter, "HEAD", "/api/v1/inventory", key)
    assert status == 200 and body == b"" and headers["etag"] == get_headers["etag"]


def test_granian_refusals_are_problem_documents(granian: tuple[Hub, RsgiAdapter]) -> None:
    hub, adapter = granian
    status, headers, body = rsgi(hub, adapter, "GET", "/api/v1/quotes")
    assert status == 401 and headers["content-type"] == "application/problem+json"
    assert orjson.loads(body)["code"] == "unauthorized" and "www-authenticate" in headers
    status, _, body = rsgi(hub, adapter, "GET", "/api/v1/quotes", {"x-service-key": "mk_not-a-key"})
    assert status == 401 and orjson.loads(body)["detail"] == "Unknown or revoked API key."
    status, _, body = rsgi(hub, adapter, "GET", "/no/such/path")
    assert status == 404 and orjson.loads(body)["code"] == "not_found"
    status, headers, _ = rsgi(hub, adapter, "DELETE", "/api/v1/quotes")
    assert status == 405 and headers["allow"] == "GET, HEAD, OPTIONS"


def test_granian_an_oversized_body_is_refused_not_buffered(granian: tuple[Hub, RsgiAdapter]) -> None:
    hub, adapter = granian
    status, _, body = rsgi(hub, adapter, "POST", "/api/submit-inquiry", {"content-type": "application/json"},
                           body=b"x" * (MAX_BODY + 1))
    assert status == 413 and orjson.loads(body)["code"] == "payload_too_large"


def test_granian_while_stopping_new_requests_get_503(tmp_path: Path) -> None:
    hub = Hub(tmp_path, Runtime.GRANIAN)
    try:
        gate = EdgeGate(5.0, 8)
        adapter = RsgiAdapter(hub.node.app, gate, None)
        gate.closing = True
        status, headers, body = rsgi(hub, adapter, "GET", "/api/v1/quotes", {"x-service-key": hub.secret})
        assert status == 503 and orjson.loads(body)["code"] == "shutting_down" and "x-request-id" in headers
    finally:
        hub.close()


# --- Robyn -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def robyn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hub, Any]]:
    from server.http.robyn_app import Hub as RobynHub
    from server.http.robyn_app import RobynRuntime

    hub = Hub(tmp_path_factory.mktemp("robyn"), Runtime.ROBYN)
    node = hub.node
    runtime = RobynRuntime(node.settings, RobynHub(node.app, node.start, lambda _http: node.stop(),
                                                   lambda: None, lambda *_: None))
    runtime.app, runtime.loop = node.app, hub.loop
    yield hub, runtime
    hub.close()


def robyn_request(path: str, headers: dict[str, str], method: str = "GET") -> Any:
    from robyn.robyn import Headers, QueryParams, Url
    from robyn.robyn import Request as RobynRequest

    sent = Headers({})
    for name, value in {"host": "127.0.0.1:8000", **headers}.items():
        sent.set(name, value)
    return RobynRequest(QueryParams(), sent, {}, "", method, Url("http", "127.0.0.1", path), {}, {},
                        identity=None, ip_addr="127.0.0.1", session=None)


def answer(response: Any) -> tuple[int, Callable[[str], str | None], bytes]:
    body = response.description
    return response.status_code, response.headers.get, body.encode() if isinstance(body, str) else bytes(body)


def test_robyn_remembered_routes_come_from_the_router() -> None:
    from server.http.robyn_app import hot_routes

    patterns = ["/api/v1/quotes", "/api/v1/quotes/{id}", "/api/v1/kline/{id}", "/api/market",
                "/api/market/{category}", "/api/v1/kline/{id}"]
    assert hot_routes(patterns) == ["/api/v1/quotes", "/api/v1/quotes/*path", "/api/v1/kline/*path", "/api/market",
                                    "/api/market/*path"]


def test_robyn_sync_handler_hands_a_miss_to_the_loop_then_answers_from_memory(robyn: tuple[Hub, Any]) -> None:
    hub, runtime = robyn
    handler = runtime.hot_handler("/api/v1/kline/*path")
    request = robyn_request("/api/v1/kline/brent", {"x-service-key": hub.secret})
    status, header, first = answer(handler(request))  # not remembered yet: the pipeline ran on the loop
    assert status == 200 and header("content-type") == "application/json"
    before = ok_count(hub, "/api/v1/kline/brent")
    status, again_header, again = answer(handler(request))  # answered on this thread, under the guard
    assert status == 200 and again == first and ok_count(hub, "/api/v1/kline/brent") == before + 1
    assert again_header("etag") == header("etag") and again_header("x-request-id") != header("x-request-id")


def test_robyn_exact_route_handler_answers_its_own_path(robyn: tuple[Hub, Any]) -> None:
    hub, runtime = robyn
    handler = runtime.hot_handler("/api/v1/quotes")
    request = robyn_request("/api/v1/quotes", {"x-service-key": hub.secret})
    first = answer(handler(request))
    second = answer(handler(request))
    assert first[0] == second[0] == 200 and first[2] == second[2]
    # /api/v1/quotes without filters lists the listed instruments only, no contract rows (docs/contracts.md)
    body, catalogue = orjson.loads(first[2]), hub.node.catalogue
    assert body["count"] == len(catalogue.listed_rows) == len(body["quotes"])
    assert [q["id"] for q in body["quotes"]] == [catalogue.instruments[r].id for r in catalogue.listed_rows]


def test_robyn_refusals_and_the_async_handler(robyn: tuple[Hub, Any]) -> None:
    hub, runtime = robyn
    status, header, body = answer(runtime.hot_handler("/api/v1/quotes")(robyn_request("/api/v1/quotes", {})))
    assert status == 401 and header("content-type") == "application/problem+json"
    assert orjson.loads(body)["code"] == "unauthorized"
    response = hub.run(runtime.handle(robyn_request("/no/such/path", {})))
    status, header, body = answer(response)
    assert status == 404 and orjson.loads(body)["code"] == "not_found" and header("x-request-id")
