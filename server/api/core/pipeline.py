"""The HTTP pipeline every runtime shares: small steps, composed once (starlette's `build_middleware_stack`).

`App.handle(Request) -> Response`, in order:
1. the target's length, routing (404/405, CORS preflight), the body limit;
2. admission (server/api/core/admission.py: the key or the client address, GCRA; 401/429);
3. the handler; a versioned route's 200 is remembered (server/api/core/answers.py);
4. the finishing step (server/api/core/finish.py: request id, CORS, content coding, If-None-Match, HEAD);
5. metrics.
Any `ApiError` becomes its problem document; a storage outage a 503 with Retry-After; anything else a 500 that
leaks nothing.

`App.serve_hot` answers a GET/HEAD from a remembered answer without steps 1-3: the remembered answer, the key's
bucket (memoised), the limiter's synchronous `take`, then the same finishing step (`Finisher.hot`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import orjson

from server.api.core.admission import Admission
from server.api.core.answers import Hot, HotAnswer, HotReply, RememberedAnswers
from server.api.core.encoding import Encoder
from server.api.core.finish import Finisher, preflight
from server.api.core.router import Access, Route, Router
from server.api.core.types import Headers, Request, Response, problem_response
from server.config import Settings
from server.core.client_ip import client_address
from server.core.errors import UDF_PREFIX, ApiError, storage_unavailable, udf_fields
from server.core.keys import ApiKey
from server.core.limits import Decision, Gcra, Rate
from server.core.metrics import HttpMetrics
from server.core.usage import UsageMeter
from server.engine import Limiter, Pending
from server.store.accounts.key_cache import KeyCache

log = logging.getLogger("market.http")
perf_counter = time.perf_counter
# enum members as module globals: Python 3.11's EnumType.__getattr__ makes every `Access.KEYED` a slow attribute
# lookup (~460 instructions, as much as the rest of the admission check)
KEYED, OPEN, AWAIT = Access.KEYED, Access.OPEN, Pending.AWAIT

MAX_BODY = 64 * 1024
INGEST_PATH = "/api/v1/ingest"  # SPEC 20: a dedicated data source publishes JSON lines here, up to INGEST_MAX_BODY
INGEST_MAX_BODY = 1024 * 1024
MAX_TARGET = 8 * 1024  # path + query; longer ones get our 414 (Granian/hyper answers a bare 414 past 64 KiB)
STORAGE_RETRY_AFTER_S = 5  # a 503 storage_unavailable's Retry-After (the pool reconnects at least every 2 s)
STORAGE_LOG_EVERY_S = 10.0  # one warning per this while storage stays away, not one per request


def body_limit(path: str) -> int:
    """The largest body a request to `path` may carry (over it: 413)."""
    return INGEST_MAX_BODY if path == INGEST_PATH else MAX_BODY


class App:
    def __init__(self, router: Router, admission: Admission, answers: RememberedAnswers, finisher: Finisher,
                 metrics: HttpMetrics, *, parse_peer: Callable[[Any], str] = str) -> None:
        """`parse_peer`: the runtime's peer -> client address, for serve_hot's public routes (Granian gives
        "host:port", Robyn its request object: each is read only when needed). The admission's guard is the
        runtime's (a lock for Robyn, whose sync handlers call serve_hot on actix's thread)."""
        self.router = router
        self.admission = admission
        self.answers = answers
        self.finisher = finisher
        self.metrics = metrics
        self.guard: AbstractContextManager[object] = admission.guard
        self.keys = admission.keys
        self.clock = admission.clock
        self.take = admission.limiter.take
        self.join = admission.limiter.join
        self.parse_peer = parse_peer
        self._by_path = answers.by_path  # the same dict for the cache's life (cleared in place)
        self._known = admission.known  # the same dict for the memo's life (cleared in place)
        self.meter = admission.meter
        self._no_cell = [0]  # what a public remembered answer counts into (usage is per key: never read)
        self._public_rate = admission.public_rate
        self._trusted = admission.settings.trusted_proxies
        self._bounds = metrics.latency.buckets
        self._labels: dict[tuple[str, int], tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = {}
        self._storage_warned = -STORAGE_LOG_EVERY_S  # perf_counter of the last storage_unavailable warning

    # --- remembered answers ------------------------------------------------------------------------------------
    def serve_hot(self, method: str, path: str, query: str, headers: Headers, peer: Any = "") -> HotAnswer:
        """The answer to a GET/HEAD whose route remembers its 200 for this path and query, if still current and
        the request is admitted; None sends the request through `handle` (unknown or missing key, a refusal, a
        changed version, a route with its own bucket...), which answers the same bytes and headers. Synchronous
        while the limiter answers without I/O; on the shared limiter, the awaitable of the same answer."""
        by_query = self._by_path.get(path)
        if by_query is None:
            return None
        hot = by_query.get(query)
        if hot is None or (method != "GET" and method != "HEAD"):
            return None
        source = hot.source
        if source is not None:
            if hot.version != source.version:
                return None
        else:
            # a callable held in an attribute is read into a local first: Python 3.11 specializes `obj.attr` but
            # not `obj.attr()` when attr is not a method of obj's class (the generic lookup costs ~300 instructions)
            current = hot.current
            if hot.version != current():
                return None
        started = perf_counter()
        access = hot.access
        if access is KEYED:
            secret = headers.get("x-service-key")
            if not secret:
                return None
            known = self._known.get(secret) or self.admission.know(secret)
            if known is None:
                return None
            bucket, rate, cell = known
        elif access is OPEN:
            return self.finisher.hot(hot, method, headers, (), started)
        elif hot.bucket is None:  # public: the per-IP bucket (a route with its own bucket goes through handle)
            ip = self.parse_peer(peer)
            if self._trusted:
                ip = client_address(ip, headers.get("x-forwarded-for"), self._trusted)
            bucket, rate, cell = "ip:" + ip, self._public_rate, self._no_cell
        else:
            return None
        take, clock = self.take, self.clock
        fields = take(bucket, rate, clock())
        if fields is None:
            return None  # the 429 comes from handle
        if fields is AWAIT:
            return self._hot_awaiting(hot, method, headers, bucket, rate, started)
        cell[0] += 1  # the key's usage (SPEC 17): one increment, read by the usage flusher
        return self.finisher.hot(hot, method, headers, fields, started)

    async def _hot_awaiting(self, hot: Hot, method: str, headers: Headers, bucket: str, rate: Rate,
                            started: float) -> HotReply | None:
        """serve_hot on a limiter that has to be awaited (Redis): the same answer once the bucket admitted it.
        Joined here, on the event loop: every request on one bucket in one loop iteration shares one check."""
        answers, place = self.join(bucket, rate)
        fields = (await answers)[place]
        if fields is None:
            return None  # the 429 comes from handle (a refusal leaves the bucket as it was)
        if hot.access is KEYED:
            self.meter.hits[bucket] += 1  # the key's usage (SPEC 17), by its bucket name
        with self.guard:
            return self.finisher.hot(hot, method, headers, fields, started)

    # --- the full pipeline ---------------------------------------------------------------------------------------
    async def handle(self, req: Request) -> Response:
        started = time.perf_counter()
        request_id = self.finisher.request_id(req.headers)
        try:
            route, resp = await self._dispatch(req)
            route_name = route.name if route is not None else "unmatched"
        except Exception as exc:
            resp = self._failure(req, exc, request_id, started)
            route_name = req.route_name  # a refusal after routing (401, 429, 400...) counts for its route
        return self._finish(req, resp, route_name, request_id, started)

    def refuse(self, req: Request, error: ApiError) -> Response:
        """A problem a runtime adapter decided on before the pipeline ran (a stalled body, too many uploads from
        one client, shutdown): it gets the request id, CORS headers and metrics like every other answer."""
        request_id = self.finisher.request_id(req.headers)
        return self._finish(req, problem_response(error), "edge", request_id, time.perf_counter())

    def _failure(self, req: Request, exc: Exception, request_id: str, started: float) -> Response:
        """The answer to an exception: its own problem, 503 for storage away, else a 500 that leaks nothing."""
        if isinstance(exc, ApiError):
            if req.path.startswith(UDF_PREFIX):  # the UDF datafeed's errors carry s/errmsg too (SPEC 14)
                udf_fields(exc)
            return problem_response(exc)
        if storage_unavailable(exc):  # PostgreSQL away: retry later, nothing was half-written (one transaction)
            if started - self._storage_warned >= STORAGE_LOG_EVERY_S:
                self._storage_warned = started
                log.warning("storage unavailable (answering 503 for %.0f s at least) request_id=%s path=%s: %s",
                            STORAGE_LOG_EVERY_S, request_id, req.path, type(exc).__name__)
            return problem_response(ApiError("storage_unavailable", "The database cannot be reached; retry shortly.",
                                             headers=[("retry-after", str(STORAGE_RETRY_AFTER_S))]))
        log.error("unhandled error request_id=%s method=%s path=%s", request_id, req.method, req.path, exc_info=exc)
        return problem_response(ApiError("internal_error", "An unexpected error occurred; quote the request id."))

    def _finish(self, req: Request, resp: Response, route_name: str, request_id: str, started: float) -> Response:
        self.finisher.finish(req, resp, request_id)
        labels = self._labels.get((route_name, resp.status))
        if labels is None:
            labels = self._labels[(route_name, resp.status)] = (
                (("route", route_name), ("status", str(resp.status))),
                (("route", route_name),),
            )
        with self.guard:
            if req.auth is not None:  # a keyed request answered here: the key's usage (SPEC 17)
                self.meter.answered(req.auth.id, resp.status)
            self.metrics.requests.inc(labels[0])
            self.metrics.latency.observe(time.perf_counter() - started, labels[1])
        return resp

    async def _dispatch(self, req: Request) -> tuple[Route | None, Response]:
        route = self._route(req)
        if isinstance(route, Response):
            return None, route
        decision = await self.admission.admit(route, req)
        version = route.version() if route.version is not None else None
        try:
            result = route.handler(req)
            # a sync handler may hand back a coroutine for a rare answer that reads storage (SPEC 18's deep ranges)
            resp: Response = (await result if route.is_async or result.__class__ is not Response  # type: ignore[misc]
                              else result)  # type: ignore[assignment]
        except ApiError as exc:
            # a 429 raised by the handler (a per-user bucket) carries its own bucket's headers
            if decision is not None and exc.code != "rate_limited":
                exc.headers.extend(decision.headers())
            raise
        private = req.auth is not None and self.admission.private(req.auth)  # SPEC 20: never shared
        if version is not None and resp.status == 200 and not private:
            # the same answer serve_hot gives from now on, with its ETag (an async handler's too: the version was
            # read before it ran, so its answer is at least as new as the version it is remembered under)
            with self.guard:
                hot = self.answers.remember(route, version, req.path, req.query_string, resp)
            if not any(name == "etag" for name, _ in resp.headers):
                resp.headers.append(("etag", hot.etag))
        if decision is not None:
            resp.headers.extend(decision.headers())
        return route, resp

    def _route(self, req: Request) -> Route | Response:
        """The request's route (the answer itself for a CORS preflight), or the 414/404/405/413 problem."""
        if len(req.path) + len(req.query_string) > MAX_TARGET:
            raise ApiError("uri_too_long", f"Request targets are limited to {MAX_TARGET} characters.")
        found = self.router.match(req.path)
        if found is None:
            page = self.router.missing(req) if req.method in ("GET", "HEAD") else None
            if page is not None:
                return page  # a browser's HTML 404 (server/api/ops/web.py)
            raise ApiError("not_found", f"No resource at {req.path}.")
        entry, params = found
        if req.method == "OPTIONS":
            return preflight(entry.methods)  # type: ignore[arg-type]
        route = entry.methods.get(req.method)
        if route is None:
            allow = ", ".join(sorted({*entry.methods, "OPTIONS"}))
            raise ApiError(
                "method_not_allowed", f"{req.method} is not allowed on {req.path}.", headers=[("allow", allow)]
            )
        req.route_name = route.name
        limit = body_limit(req.path)
        if len(req.body) > limit:
            raise ApiError("payload_too_large", f"Request bodies are limited to {limit} bytes.")
        req.path_params = params
        return route

    # --- for handlers and runtimes -------------------------------------------------------------------------------
    def check_bucket(self, bucket: str, subject: str, per_minute: int) -> Decision:
        """For handlers whose bucket key is known only after authentication (e.g. per user)."""
        with self.guard:
            return self.admission.check_bucket(bucket, subject, per_minute)

    def client_ip(self, req: Request) -> str:
        return self.admission.client_ip(req)


def build_app(settings: Settings, router: Router, keys: KeyCache, metrics: HttpMetrics, limiter: Limiter,
              buckets: Gcra, clock: Callable[[], float], guard: AbstractContextManager[object], meter: UsageMeter,
              parse_peer: Callable[[Any], str] = str, private: Callable[[ApiKey], bool] = lambda key: False) -> App:
    """The pipeline's steps, composed once: admission, remembered answers, the finishing step, the App. `private`:
    keys whose answers are never remembered nor answered from memory (SPEC 20: Admission)."""
    admission = Admission(settings, keys, limiter, buckets, clock, metrics.rate_limited, guard, meter, private)
    labels = {coding: (("coding", coding),) for coding in ("br", "gzip")}
    encoder = Encoder(lambda coding, _size: metrics.compressed.inc(labels[coding]))
    finisher = Finisher(settings.cors_origins, encoder, metrics.latency.buckets)
    return App(router, admission, RememberedAnswers(metrics), finisher, metrics, parse_peer=parse_peer)


def json_response(data: Any, status: int = 200, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, orjson.dumps(data), "application/json", headers or [])
