"""Remembered answers: the 200 of a versioned GET route per path and query string, while its version holds.

The full pipeline (`App.handle`) runs the handler and keeps its 200 here (`remember`); `App.serve_hot` answers
later requests for the same path and query from it while `route.version()` is unchanged, without a Request, a
Response, the handler or any header formatting. A remembered answer keeps one `Variant` per content coding,
made on first use by the finishing step (server/api/core/finish.py).

Invariants: `by_path` is one dict for the life of the cache (cleared in place, so a reader may hold it); at most
`MAX_HOT` answers are kept (all are dropped when it is full: the next requests remember them again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Coroutine
from typing import Any

from server.api.core.encoding import MIN_SIZE, compressible
from server.api.core.router import Route
from server.api.core.types import Response
from server.core.metrics import HttpMetrics

MAX_HOT = 4096  # remembered answers of versioned GET routes (path + query string)
# representation metadata a 304 does not repeat (RFC 9110 15.4.5: it SHOULD NOT, beyond the validator and the cache
# fields); the client keeps the type and coding it stored with the ETag, which names the coding (`-gz`, `-br`)
NOT_IN_304 = frozenset({"content-type", "content-encoding", "content-length", "content-range"})
HeaderList = list[tuple[str, str]]
HotFields = tuple[tuple[str, str], ...]  # a remembered answer's header fields (any sequence suits the runtimes)
# serve_hot's reply: (status, variant, fields, request id, body). The answer's header fields are
# `variant.head + fields + (("x-request-id", request id),)`: `fields` are the rate-limit fields (the limiter's
# shared tuple: the same object while its values stay the same) plus, without wildcard CORS, this request's CORS
# fields. Given in parts so a runtime can keep its own response object per variant (Robyn: robyn_app.py)
HotReply = tuple[int, "Variant", HotFields, str, bytes]
# serve_hot's answer: a reply, None (take the full pipeline), or the awaitable of either
HotAnswer = HotReply | None | Coroutine[Any, Any, HotReply | None]


class Variant:
    """One coding of a remembered answer: its body, ETag and every header that does not change per request."""

    __slots__ = ("body", "etag", "head", "prebuilt", "unchanged")

    def __init__(self, body: bytes, etag: str, head: HeaderList, not_modified: bool = False) -> None:
        # a tuple: an answer's fields are `head + rate fields + (request id,)`, two tuple concatenations (a list
        # built by unpacking costs ~800 instructions more per request)
        self.body, self.etag, self.head = body, etag, tuple(head)
        # the runtime's own: Robyn keeps its response objects for this variant here (robyn_app.Prebuilt)
        self.prebuilt: Any = None
        # the 304 of this variant: no body, no content type or coding (a variant of its own, so a runtime's
        # per-variant response objects need no other key)
        self.unchanged: Variant = self if not_modified else Variant(
            b"", etag, [field for field in head if field[0] not in NOT_IN_304], not_modified=True)


class Hot:
    """The 200 answer of a versioned GET route for one path + query string, while `route.version()` is `version`.

    What is left per request is the key, the GCRA check, the request id, the coding and If-None-Match, and the
    metrics (updated through the series kept here)."""

    __slots__ = (
        "access",
        "body",
        "bucket",
        "compressible",
        "content_type",
        "count_304",
        "count_ok",
        "current",
        "etag",
        "extra",
        "identity",
        "latency",
        "route",
        "source",
        "variants",
        "version",
    )

    def __init__(self, route: Route, version: object, resp: Response, etag: str, metrics: HttpMetrics) -> None:
        self.route, self.version = route, version
        self.current: Callable[[], object] = route.version  # type: ignore[assignment]
        self.source = route.version_of  # read as `source.version` (no call) when the route names one
        self.access, self.bucket = route.access, route.bucket
        extra = [(name, value) for name, value in resp.headers if name != "etag"]  # the ETag goes per coding
        self.body, self.content_type, self.extra, self.etag = resp.body, resp.content_type, extra, etag
        self.compressible = len(resp.body) >= MIN_SIZE and compressible(resp.content_type)
        self.variants: dict[str, Variant] = {}
        self.identity: Variant | None = None  # variants[IDENTITY], once made
        # the route's series of market_http_requests_total and market_http_request_seconds, updated in place
        self.count_ok = metrics.requests.cell((("route", route.name), ("status", "200")))
        self.count_304 = metrics.requests.cell((("route", route.name), ("status", "304")))
        self.latency = metrics.latency.series((("route", route.name),))


class RememberedAnswers:
    """path -> query string -> `Hot`: what serve_hot answers from (see the module docstring)."""

    def __init__(self, metrics: HttpMetrics, max_hot: int = MAX_HOT) -> None:
        self.metrics = metrics
        self.max_hot = max_hot
        self.by_path: dict[str, dict[str, Hot]] = {}
        self.count = 0

    def remember(self, route: Route, version: object, path: str, query: str, resp: Response) -> Hot:
        """Keep a versioned route's 200 (before any per-request header is added) for serve_hot."""
        by_query = self.by_path.get(path)
        old = by_query.get(query) if by_query is not None else None
        if old is not None and old.version == version and old.body is resp.body:
            return old  # serve_hot could not answer this request (a refusal, the shared limiter, a route bucket)
        etag = next((value for name, value in resp.headers if name == "etag"), None)  # the handler's own, if any
        if etag is None:
            etag = '"' + hashlib.blake2b(resp.body, digest_size=16).hexdigest() + '"'
        hot = Hot(route, version, resp, etag, self.metrics)
        if old is None:
            if self.count >= self.max_hot:
                self.by_path.clear()
                self.count = 0
                by_query = None
            self.count += 1
        if by_query is None:
            by_query = self.by_path[path] = {}
        by_query[query] = hot
        return hot
