"""The HTTP pipeline every runtime shares.

`App.handle(Request) -> Response` does, in order: request id, CORS preflight,
body limit, routing (404/405), access control (key or client IP) with GCRA
limits, the handler, then the common headers and metrics. Any `ApiError`
becomes a problem document; any other exception a 500 that leaks nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

import orjson

from server.api.auth.keys import KeyCache
from server.api.auth.limits import Decision, Gcra, Rate, shared_rate
from server.api.core.encoding import (
    IDENTITY,
    MIN_SIZE,
    Encoder,
    compressible,
    encoded_etag,
    etag_matches,
)
from server.api.core.router import Access, Route, Router
from server.api.core.types import Headers, Request, Response
from server.config import Settings
from server.core.client_ip import client_address
from server.core.errors import UDF_PREFIX, ApiError, udf_fields
from server.core.metrics import HttpMetrics
from server.core.usage import UsageMeter
from server.engine import Limiter, Pending, RateFields
from server.store.keys import ApiKey
from server.store.storage import storage_unavailable

log = logging.getLogger("market.http")
perf_counter = time.perf_counter
# enum members as module globals: Python 3.11's EnumType.__getattr__ makes every `Access.KEYED` a slow attribute
# lookup (~460 instructions, as much as the rest of the admission check)
KEYED, OPEN, AWAIT = Access.KEYED, Access.OPEN, Pending.AWAIT

MAX_BODY = 64 * 1024
MAX_TARGET = 8 * 1024  # path + query; longer ones get our 414 (Granian/hyper answers a bare 414 past 64 KiB)
RATE_HEADERS = (
    "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, "
    "Retry-After, X-Request-ID, ETag"
)
ALLOWED_REQUEST_HEADERS = "X-SERVICE-Key, Authorization, Content-Type, X-Request-ID, If-None-Match"
STORAGE_RETRY_AFTER_S = 5  # a 503 storage_unavailable's Retry-After (the pool reconnects at least every 2 s)
STORAGE_LOG_EVERY_S = 10.0  # one warning per this while storage stays away, not one per request
MAX_HOT = 4096  # remembered answers of versioned GET routes (path + query string)
ID_BLOCK = 1000  # request ids made at a time (App._new_ids)
_DIGITS_DOWN = tuple(f"{n:03d}" for n in range(ID_BLOCK - 1, -1, -1))  # "999" .. "000": popped from the end
MAX_KNOWN = 10_000  # secrets serve_hot keeps the bucket and rate of (as KeyCache keeps its secrets)
VARY_ENCODING = ("vary", "Accept-Encoding")
# representation metadata a 304 does not repeat (RFC 9110 15.4.5: it SHOULD NOT, beyond the validator and the cache
# fields); the client keeps the type and coding it stored with the ETag, which names the coding (`-gz`, `-br`)
NOT_IN_304 = frozenset({"content-type", "content-encoding"})
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

    Built once by the full pipeline (the handler ran); `App.serve_hot` answers from it without a Request, a
    Response, the handler or any header formatting: what is left per request is the key, the GCRA check, the
    request id, the coding and If-None-Match, and the metrics (updated through the series kept here)."""

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
        "variants",
        "version",
    )

    def __init__(self, route: Route, version: object, resp: Response, etag: str, metrics: HttpMetrics) -> None:
        self.route, self.version = route, version
        self.current: Callable[[], object] = route.version  # type: ignore[assignment]
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


class App:
    def __init__(
        self,
        settings: Settings,
        router: Router,
        keys: KeyCache,
        metrics: HttpMetrics,
        limiter: Limiter,
        buckets: Gcra,
        clock: Callable[[], float] = time.time,
        *,
        lock: threading.Lock | None = None,
        parse_peer: Callable[[Any], str] = str,
    ) -> None:
        """`limiter`: the engine's bucket store for keys, client IPs and route buckets (memory or shared);
        `buckets`: this hub's own (the 401 bucket and its storage-read guard, per-user buckets: they protect this
        hub). `lock`: given by a runtime that calls serve_hot from a thread other than the event loop's (Robyn's
        sync handlers): then the loop's own updates of the limiter, metrics and remembered answers take it too.
        `parse_peer`: the runtime's peer -> client address, for serve_hot's public routes (Granian gives "host:port",
        Robyn its request object: each is read only when needed)."""
        self.settings = settings
        self.router = router
        self.keys = keys
        self.metrics = metrics
        self.limiter = limiter
        self.buckets = buckets
        self.clock = clock
        # request ids "<prefix>-<n>", n = 1, 2, ...: made ID_BLOCK at a time (a block's ids share their head, so
        # each is one concatenation) and taken with one list.pop per request, ~1,400 instructions less than an
        # f-string per request. Blocks are numbered atomically: two threads refilling at once (Robyn) take
        # different blocks, so an id is never given twice (a block may be left unfinished).
        self._id_pool: list[str] = []
        self._id_blocks = itertools.count(0)
        self._storage_warned = -STORAGE_LOG_EVERY_S  # perf_counter of the last storage_unavailable warning
        self._id_prefix = os.urandom(4).hex()
        self._wildcard_cors = "*" in settings.cors_origins
        self._origins = frozenset(settings.cors_origins)
        self._cors_wildcard_headers = [
            ("access-control-allow-origin", "*"),
            ("access-control-expose-headers", RATE_HEADERS),
        ]
        self._labels: dict[tuple[str, int], tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = {}
        labels = {coding: (("coding", coding),) for coding in ("br", "gzip")}
        self.encoder = Encoder(lambda coding, _size: metrics.compressed.inc(labels[coding]))
        self._hot: dict[str, dict[str, Hot]] = {}  # path -> query string -> remembered answer
        self._hot_count = 0
        # secret -> (bucket, rate, usage cell) of keys KeyCache.lookup found, while KeyCache.version stays
        # `_known_version` (issue 32: the cell is the key's hot-path request counter in the usage meter)
        self._known: dict[str, tuple[str, Rate, list[int]]] = {}
        self._known_version = -1
        self._public_rate = shared_rate(settings.public_rate, "public")
        self._bounds = metrics.latency.buckets
        self.take = limiter.take
        self.join = limiter.join
        self.lock = lock
        self.parse_peer = parse_peer
        self.meter = UsageMeter()  # issue 32: console usage per key (the root flushes it)
        self._no_cell = [0]  # issue 32: the counter a public hot request bumps (never read)

    # --- the hot path: remembered answers of versioned GET routes ------------------------------------------------

    def serve_hot(self, method: str, path: str, query: str, headers: Headers, peer: Any = "") -> HotAnswer:
        """The answer to a GET/HEAD whose route remembers its 200 for this path and query, if still current and
        the request is admitted; None sends the request through `handle` (unknown or missing key, a refusal, a
        changed version, a route with its own bucket...), which answers the same bytes and headers.

        Synchronous while the limiter answers without I/O (the memory engine; Redis while it is away); on the
        shared limiter it returns the awaitable of the same answer (`_hot_awaiting`: the GCRA check is the only
        extra work), which the runtime awaits."""
        by_query = self._hot.get(path)
        if by_query is None:
            return None
        hot = by_query.get(query)
        if hot is None or (method != "GET" and method != "HEAD"):
            return None
        # callables held in attributes are read into a local first: Python 3.11 specializes `obj.attr` but not
        # `obj.attr()` when attr is not a method of obj's class (the generic lookup costs ~300 instructions)
        current = hot.current
        if hot.version != current():
            return None
        started = perf_counter()
        access = hot.access
        if access is KEYED:
            secret = headers.get("x-service-key")
            if not secret:
                return None
            keys = self.keys
            if keys.version != self._known_version:  # a key refresh, load or revocation since the memo was made
                self._known = {}
                self._known_version = keys.version
            known = self._known.get(secret) or self._know(secret)
            if known is None:
                return None
            bucket, rate, cell = known
        elif access is OPEN:
            return self._hot_answer(hot, method, headers, (), started)
        elif hot.bucket is None:  # public: the per-IP bucket (a route with its own bucket goes through handle)
            ip = self.parse_peer(peer)
            trusted = self.settings.trusted_proxies
            if trusted:
                ip = client_address(ip, headers.get("x-forwarded-for"), trusted)
            bucket, rate, cell = "ip:" + ip, self._public_rate, self._no_cell
        else:
            return None
        take, clock = self.take, self.clock
        fields = take(bucket, rate, clock())
        if fields is None:
            return None  # the 429 comes from handle
        if fields is AWAIT:
            return self._hot_awaiting(hot, method, headers, bucket, rate, started)
        cell[0] += 1  # issue 32: usage metering (the key's counter; a public request's goes nowhere)
        # _hot_answer, inlined (a call is ~2% of the request)
        rid = headers.get("x-request-id")
        if rid is None or len(rid) > 128 or not rid.isprintable():
            try:
                rid = self._id_pool.pop()
            except IndexError:
                rid = self._new_ids()
        accept = headers.get("accept-encoding")
        if accept is None or not hot.compressible:
            variant = hot.identity or self._variant(hot, IDENTITY)
        else:
            coding = self.encoder.choose(accept) or IDENTITY
            variant = hot.variants.get(coding) or self._variant(hot, coding)
        inm = headers.get("if-none-match")
        if inm is not None and etag_matches(inm, variant.etag):
            status, variant, body = 304, variant.unchanged, b""
            hot.count_304[0] += 1
        else:
            status, body = 200, (variant.body if method != "HEAD" else b"")
            hot.count_ok[0] += 1
        if not self._wildcard_cors:
            fields += tuple(self._cors_for(headers.get("origin")))
        elapsed = perf_counter() - started
        latency, bounds = hot.latency, self._bounds  # market_http_request_seconds, as Histogram.observe does it
        latency[0 if elapsed <= bounds[0] else bisect_left(bounds, elapsed)] += 1  # the first bucket holds most
        latency[-1] += elapsed
        return status, variant, fields, rid, body

    def _new_id(self) -> str:
        try:
            return self._id_pool.pop()
        except IndexError:
            return self._new_ids()

    def _new_ids(self) -> str:
        """The next block of request ids (the pool ran out): keep it and return its first."""
        block = next(self._id_blocks)
        if block:
            head = f"{self._id_prefix}-{block}"  # ids block * ID_BLOCK + 0..999
            pool = [head + digits for digits in _DIGITS_DOWN]
        else:
            pool = [f"{self._id_prefix}-{n}" for n in range(ID_BLOCK - 1, 0, -1)]  # 1..999
        first = pool.pop()
        self._id_pool = pool
        return first

    def _know(self, secret: str) -> tuple[str, Rate, list[int]] | None:
        """A cached key's bucket and rate, kept for serve_hot's next request with this secret."""
        key = self.keys.lookup(secret)
        if key is None:
            return None
        known = ("key:" + key.id, shared_rate(self.settings.rate_for(key.plan, key.rate), key.plan),
                 self.meter.cell(key.id))
        if len(self._known) >= MAX_KNOWN:
            self._known = {}
        self._known[secret] = known
        return known

    async def _hot_awaiting(self, hot: Hot, method: str, headers: Headers, bucket: str, rate: Rate,
                            started: float) -> HotReply | None:
        """serve_hot on a limiter that has to be awaited (Redis): the same answer once the bucket admitted it.
        Joined here, on the event loop (Robyn calls serve_hot on actix's thread and runs this on the loop)."""
        answers, place = self.join(bucket, rate)
        fields = (await answers)[place]
        if fields is None:
            return None  # the 429 comes from handle (a refusal leaves the bucket as it was)
        if hot.access is KEYED:
            self.meter.hits[bucket] += 1  # issue 32: usage metering
        lock = self.lock
        if lock is None:
            return self._hot_answer(hot, method, headers, fields, started)
        with lock:
            return self._hot_answer(hot, method, headers, fields, started)

    def _hot_answer(self, hot: Hot, method: str, headers: Headers, rate: RateFields,
                    started: float) -> HotReply:
        rid = headers.get("x-request-id")
        if rid is None or len(rid) > 128 or not rid.isprintable():
            rid = self._new_id()
        accept = headers.get("accept-encoding")
        if accept is None or not hot.compressible:
            variant = hot.identity or self._variant(hot, IDENTITY)
        else:
            coding = self.encoder.choose(accept) or IDENTITY
            variant = hot.variants.get(coding) or self._variant(hot, coding)
        inm = headers.get("if-none-match")
        if inm is not None and etag_matches(inm, variant.etag):
            status, variant, body = 304, variant.unchanged, b""
            hot.count_304[0] += 1
        else:
            status, body = 200, (variant.body if method != "HEAD" else b"")
            hot.count_ok[0] += 1
        if not self._wildcard_cors:
            rate += tuple(self._cors_for(headers.get("origin")))
        elapsed = perf_counter() - started
        latency, bounds = hot.latency, self._bounds  # market_http_request_seconds, as Histogram.observe does it
        latency[0 if elapsed <= bounds[0] else bisect_left(bounds, elapsed)] += 1  # the first bucket holds most
        latency[-1] += elapsed
        return status, variant, rate, rid, body

    def _variant(self, hot: Hot, coding: str) -> Variant:
        head: HeaderList = [] if hot.content_type is None else [("content-type", hot.content_type)]
        head += hot.extra
        if coding == IDENTITY:
            body, etag = hot.body, hot.etag
        else:
            body, etag = self.encoder.encode(hot.body, coding), encoded_etag(hot.etag, coding)
            head.append(("content-encoding", coding))
        head.append(("etag", etag))
        if hot.compressible:
            head.append(VARY_ENCODING)
        if self._wildcard_cors:
            head += self._cors_wildcard_headers
        variant = hot.variants[coding] = Variant(body, etag, head)
        if coding == IDENTITY:
            hot.identity = variant
        return variant

    def _remember(self, route: Route, version: object, path: str, query: str, resp: Response) -> Hot:
        """Keep a versioned route's 200 (before any per-request header is added) for serve_hot."""
        by_query = self._hot.get(path)
        old = by_query.get(query) if by_query is not None else None
        if old is not None and old.version == version and old.body is resp.body:
            return old  # serve_hot could not answer this request (a refusal, the shared limiter, a route bucket)
        etag = next((value for name, value in resp.headers if name == "etag"), None)  # the handler's own, if any
        if etag is None:
            etag = '"' + hashlib.blake2b(resp.body, digest_size=16).hexdigest() + '"'
        hot = Hot(route, version, resp, etag, self.metrics)
        if old is None:
            if self._hot_count >= MAX_HOT:
                self._hot, self._hot_count = {}, 0
                by_query = None
            self._hot_count += 1
        if by_query is None:
            by_query = self._hot[path] = {}
        by_query[query] = hot
        return hot

    async def handle(self, req: Request) -> Response:
        started = time.perf_counter()
        request_id = _client_request_id(req) or self._new_id()
        route_name = "unmatched"
        try:
            route, resp = await self._dispatch(req)
            if route is not None:
                route_name = route.name
        except ApiError as exc:
            if req.path.startswith(UDF_PREFIX):  # the UDF datafeed's errors carry s/errmsg too (SPEC 14)
                udf_fields(exc)
            resp = exc.response()
            route_name = req.route_name  # a refusal after routing (401, 429, 400...) counts for its route
        except Exception as exc:
            if storage_unavailable(exc):  # PostgreSQL away: retry later, nothing was half-written (one transaction)
                if started - self._storage_warned >= STORAGE_LOG_EVERY_S:
                    self._storage_warned = started
                    log.warning("storage unavailable (answering 503 for %.0f s at least) request_id=%s path=%s: %s",
                                STORAGE_LOG_EVERY_S, request_id, req.path, type(exc).__name__)
                resp = ApiError("storage_unavailable", "The database cannot be reached; retry shortly.",
                                headers=[("retry-after", str(STORAGE_RETRY_AFTER_S))]).response()
            else:
                log.exception("unhandled error request_id=%s method=%s path=%s", request_id, req.method, req.path)
                resp = ApiError("internal_error", "An unexpected error occurred; quote the request id.").response()
            route_name = req.route_name
        return self._finish(req, resp, route_name, request_id, started)

    def refuse(self, req: Request, error: ApiError) -> Response:
        """A problem a runtime adapter decided on before the pipeline ran (a stalled body, too many uploads from
        one client, shutdown): it gets the request id, CORS headers and metrics like every other answer."""
        request_id = _client_request_id(req) or self._new_id()
        return self._finish(req, error.response(), "edge", request_id, time.perf_counter())

    def _finish(self, req: Request, resp: Response, route_name: str, request_id: str, started: float) -> Response:
        resp.headers.append(("x-request-id", request_id))
        if req.auth is not None:  # issue 32: usage metering of keyed requests answered here
            self.meter.answered(req.auth.id, resp.status)
        self._cors(req, resp)
        if req.method == "GET" or req.method == "HEAD":
            self._encode(req, resp)
        if req.method == "HEAD":
            resp.body = b""
        lock = self.lock
        if lock is not None:
            with lock:
                self._count(resp, route_name, started)
        else:
            self._count(resp, route_name, started)
        return resp

    def _encode(self, req: Request, resp: Response) -> None:
        """Content coding of a 200 of at least MIN_SIZE textual bytes (Vary, per-coding ETag, If-None-Match)."""
        status = resp.status
        if status == 304:
            if any(name == "etag" for name, _ in resp.headers):
                resp.headers.append(VARY_ENCODING)
            return
        if status != 200:
            return
        headers = resp.headers
        coding = IDENTITY
        if (len(resp.body) >= MIN_SIZE and compressible(resp.content_type)
                and not any(name == "content-encoding" for name, _ in headers)):
            headers.append(VARY_ENCODING)
            coding = self.encoder.choose(req.headers.get("accept-encoding")) or IDENTITY
            if coding != IDENTITY:
                resp.body = self.encoder.encode(resp.body, coding)
                headers.append(("content-encoding", coding))
        for i, (name, value) in enumerate(headers):  # small bodies too: If-None-Match as serve_hot answers it
            if name == "etag":
                etag = headers[i] = ("etag", encoded_etag(value, coding))
                if etag_matches(req.headers.get("if-none-match"), etag[1]):
                    resp.status, resp.body, resp.content_type = 304, b"", None
                    resp.headers = [field for field in headers if field[0] not in NOT_IN_304]
                break

    def _count(self, resp: Response, route_name: str, started: float) -> None:
        labels = self._labels.get((route_name, resp.status))
        if labels is None:
            labels = self._labels[(route_name, resp.status)] = (
                (("route", route_name), ("status", str(resp.status))),
                (("route", route_name),),
            )
        self.metrics.requests.inc(labels[0])
        self.metrics.latency.observe(time.perf_counter() - started, labels[1])

    async def _dispatch(self, req: Request) -> tuple[Route | None, Response]:
        if len(req.path) + len(req.query_string) > MAX_TARGET:
            raise ApiError("uri_too_long", f"Request targets are limited to {MAX_TARGET} characters.")
        found = self.router.match(req.path)
        if found is None:
            raise ApiError("not_found", f"No resource at {req.path}.")
        entry, params = found
        if req.method == "OPTIONS":
            return None, _preflight(entry.methods)
        route = entry.methods.get(req.method)
        if route is None:
            allow = ", ".join(sorted({*entry.methods, "OPTIONS"}))
            raise ApiError(
                "method_not_allowed", f"{req.method} is not allowed on {req.path}.", headers=[("allow", allow)]
            )
        req.route_name = route.name
        if len(req.body) > MAX_BODY:
            raise ApiError("payload_too_large", f"Request bodies are limited to {MAX_BODY} bytes.")
        req.path_params = params
        decision = await self._admit(route, req)
        version = route.version() if route.version is not None else None
        try:
            result = route.handler(req)
            resp: Response = await result if route.is_async else result  # type: ignore[misc,assignment]
        except ApiError as exc:
            # a 429 raised by the handler (a per-user bucket) carries its own bucket's headers
            if decision is not None and exc.code != "rate_limited":
                exc.headers.extend(decision.headers())
            raise
        if version is not None and resp.status == 200:
            # the same answer serve_hot gives from now on, with its ETag (an async handler's too: the version was
            # read before it ran, so its answer is at least as new as the version it is remembered under)
            lock = self.lock
            if lock is None:
                hot = self._remember(route, version, req.path, req.query_string, resp)
            else:
                with lock:
                    hot = self._remember(route, version, req.path, req.query_string, resp)
            if not any(name == "etag" for name, _ in resp.headers):
                resp.headers.append(("etag", hot.etag))
        if decision is not None:
            resp.headers.extend(decision.headers())
        return route, resp

    async def _admit(self, route: Route, req: Request) -> Decision | None:
        """Authenticate and rate-limit (one path for both engines); returns the decision whose headers go on the
        response, or raises the 401/429 problem."""
        if route.access is OPEN:
            return None
        if route.access is KEYED:
            key = await self._authenticate(req)
            decision = await self._limit("key:" + key.id, self.settings.rate_for(key.plan, key.rate), key.plan)
        else:
            ip = self.client_ip(req)
            decision = await self._limit("ip:" + ip, self.settings.public_rate, "public")
            if decision.allowed and route.bucket is not None:
                extra = await self._limit(f"{route.bucket}:{ip}", self._bucket_rate(route.bucket), route.bucket)
                decision = extra if not extra.allowed else decision
        return self._enforce(decision)

    async def _limit(self, bucket: str, per_minute: int, policy: str) -> Decision:
        """The limiter's decision: at once if it needs no I/O (under the runtime's lock), else awaited."""
        lock = self.lock
        if lock is None:
            decision = self.limiter.decide(bucket, per_minute, self.clock(), policy)
        else:
            with lock:
                decision = self.limiter.decide(bucket, per_minute, self.clock(), policy)
        if decision is AWAIT:
            return await self.limiter.check(bucket, per_minute, policy)
        return decision

    async def _authenticate(self, req: Request) -> ApiKey:
        """The request's active key (cache, then storage once), or the 401/429 of `_unauthorized`."""
        secret = req.headers.get("x-service-key")
        key = self.keys.lookup(secret) if secret else None
        if key is None:
            try:
                self._unauthorized_locked(req, secret, loaded=False)
            except _UnknownKey as miss:
                key = await self.keys.load(miss.secret)
                if key is None:
                    self._unauthorized_locked(req, secret, loaded=True)
        req.auth = key
        return key

    def _unauthorized_locked(self, req: Request, secret: str | None, loaded: bool) -> NoReturn:
        lock = self.lock
        if lock is None:
            self._unauthorized(req, secret, self.clock(), loaded)
        with lock:
            self._unauthorized(req, secret, self.clock(), loaded)

    def _unauthorized(self, req: Request, secret: str | None, now: float, loaded: bool) -> NoReturn:
        """No cached key: raise _UnknownKey to have storage read (unless `loaded`), or the 401.

        401s are limited per client IP (the `unauthorized` bucket, at the public rate): an address over
        it gets 429 and causes no storage read, so guessing keys costs the server next to nothing."""
        bucket = "unauthorized:" + self.client_ip(req)
        rate = self.settings.public_rate
        if secret and not loaded and self.buckets.would_allow(bucket, rate, now):
            raise _UnknownKey(secret)
        decision = self._enforce(self.buckets.check(bucket, rate, now, "unauthorized"))
        detail = "Missing X-SERVICE-Key header." if not secret else "Unknown or revoked API key."
        raise ApiError("unauthorized", detail,
                       headers=[("www-authenticate", 'ApiKey header="X-SERVICE-Key"'), *decision.headers()])

    def _enforce(self, decision: Decision) -> Decision:
        """Raise the 429 problem for a refusal; pass an allowed decision through."""
        if decision.allowed:
            return decision
        self.metrics.rate_limited.inc((("bucket", decision.policy),))
        raise ApiError(
            "rate_limited",
            f"Rate limit of {decision.limit} requests per minute exceeded; retry in {decision.retry_after_s} s.",
            headers=decision.headers(),
            extra={"retryAfter": decision.retry_after_s},
        )

    def _bucket_rate(self, bucket: str) -> int:
        return {"login": self.settings.login_rate, "inquiry": self.settings.inquiry_rate}.get(bucket, 60)

    def check_bucket(self, bucket: str, subject: str, per_minute: int) -> Decision:
        """For handlers whose bucket key is known only after authentication (e.g. per user)."""
        return self._enforce(self.buckets.check(f"{bucket}:{subject}", per_minute, self.clock(), bucket))

    def client_ip(self, req: Request) -> str:
        """The peer address; X-Forwarded-For only when the peer is a trusted proxy."""
        trusted = self.settings.trusted_proxies
        if not trusted:
            return req.client_ip
        return client_address(req.client_ip, req.headers.get("x-forwarded-for"), trusted)

    def _cors_for(self, origin: str | None) -> HeaderList:
        out = [("access-control-allow-origin", origin)] if origin in self._origins else []  # type: ignore[list-item]
        out += [("vary", "Origin"), ("access-control-expose-headers", RATE_HEADERS)]
        return out

    def _cors(self, req: Request, resp: Response) -> None:
        if self._wildcard_cors:
            resp.headers += self._cors_wildcard_headers
        else:
            origin = req.headers.get("origin")
            if origin in self._origins:
                resp.headers.append(("access-control-allow-origin", origin))
            resp.headers.append(("vary", "Origin"))
            resp.headers.append(("access-control-expose-headers", RATE_HEADERS))


class _UnknownKey(Exception):
    def __init__(self, secret: str) -> None:
        super().__init__("key not cached")
        self.secret = secret


def _preflight(methods: dict[str, Any]) -> Response:
    allow = ", ".join(sorted({*methods, "OPTIONS"}))
    return Response(
        204,
        b"",
        None,
        [
            ("access-control-allow-methods", allow),
            ("access-control-allow-headers", ALLOWED_REQUEST_HEADERS),
            ("access-control-max-age", "600"),
        ],
    )


def _client_request_id(req: Request) -> str | None:
    rid = req.headers.get("x-request-id")
    if rid and len(rid) <= 128 and rid.isprintable():
        return rid
    return None


def json_response(data: Any, status: int = 200, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, orjson.dumps(data), "application/json", headers or [])
