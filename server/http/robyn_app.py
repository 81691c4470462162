"""Robyn adapter: Robyn's request in, `App.handle`, Robyn's response out; the hub runs on Robyn's uvloop.

What it works around in robyn 0.88.0 (measured here; single process, one worker):

- It drives `robyn.robyn.Server` the way `robyn.processpool.spawn_process` does, not `Robyn.start()`,
  which parses sys.argv (our --log-level), adds its own /docs and /openapi.json, asks on stdin
  when the port is busy, lets ROBYN_HOST/ROBYN_PORT override our settings, inspects the handler's
  signature on every request and re-enters `run_forever()` once the server stops.
- Routing: Robyn answers unmatched paths and methods with its own text 404, so `/` and `/*path`
  are registered for every method it knows and the shared router makes the JSON 404/405.
- Signals: on SIGTERM/SIGINT actix stops accepting but the process never exits (issue 1324). The
  startup handler puts our handlers on Robyn's loop; shutdown runs server/lifecycle.py's order (the
  edge gate refuses what still arrives, in-flight requests drain, WebSockets close 1001, workers
  stop, the hub flushes), stops the loop, then `os._exit`, because finalising Python while actix's
  thread is alive makes pyo3 panic.
- Edge limits: actix buffers the whole body before the handler runs and Robyn sets no header, body or
  keep-alive timeout we could change, so the body deadline and the per-IP upload cap of the Granian
  runtime cannot be applied here (docs/operations.md says what each runtime guarantees).
- Thread state: pyo3 takes the GIL on actix's thread with PyGILState_Ensure/Release, and with no outer Ensure
  outstanding every Release deletes the thread state its Ensure made: each request (twice) paid a new thread
  state, a fresh 16 KiB frame stack (mmap, page faults) and its munmap (a TLB flush). The first sync request
  on a thread takes one Ensure it never releases, so the thread keeps one state (what CPython's documentation
  of non-Python threads advises, gh-146219). Measured: every Robyn route costs about half the core (bench/README).
- It binds with SO_REUSEPORT, so a second server on a busy port would start and share it: we
  check the port first. A startup handler that raises aborts the process: ours never raises.
- Request: the path comes raw minus one trailing slash. Granian's path is percent-decoded (with
  no raw one to be had), so this decodes it the same way; the router ignores trailing slashes.
  There is no raw query string: it is rebuilt from Robyn's raw pairs (order across different
  names is lost; `Request.query` keeps the last value per name anyway).
- Body: any size is buffered (ROBYN_MAX_PAYLOAD_SIZE has no effect) and UTF-8 text arrives as
  str; over MAX_BODY it is swapped for a placeholder so the pipeline answers 413 without
  re-encoding it.
- Response: headers go as a dict (Robyn adds only content-length and date); a repeated name goes
  through `Headers.append` so every line is sent. A remembered answer (handle_sync) returns a Response kept per
  variant and status (`Prebuilt`), with only its per-request fields set: Robyn copies a returned Response's
  status, headers and body into Rust before the handler's thread runs any other Python, and a new Response with
  our ~12 fields costs Robyn several times what setting one field on a kept one does (bench/README.md).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from threading import get_ident
from typing import Any, NoReturn, TypeVar
from urllib.parse import unquote

import uvloop
from robyn.responses import StreamingResponse
from robyn.robyn import FunctionInfo, Headers, HttpMethod, Server, SocketHeld
from robyn.robyn import Response as RobynResponse

from server.api.core.answers import HotFields, HotReply, Variant
from server.api.core.pipeline import MAX_BODY, App, body_limit
from server.api.core.types import FileBody, Request, Response
from server.config import BENCH_STATIC_PATH, Settings
from server.http.edge import EdgeGate, shutting_down
from server.store.flatfiles.byte_range import iter_file

log = logging.getLogger("market.robyn")

# every method Robyn routes; its .pyi types the members as str
METHODS: tuple[HttpMethod, ...] = (  # type: ignore[assignment]
    HttpMethod.GET, HttpMethod.HEAD, HttpMethod.POST, HttpMethod.PUT, HttpMethod.PATCH, HttpMethod.DELETE,
    HttpMethod.OPTIONS, HttpMethod.TRACE, HttpMethod.CONNECT,
)
TOO_LARGE = bytes(MAX_BODY + 1)  # stands for any body over the limit
T = TypeVar("T")
BRIDGE_TIMEOUT_S = 60.0  # a request handed from actix's thread to the loop: longer than any handler runs
# actix worker threads. One: handle_sync's kept responses (Prebuilt) are set and returned on that thread alone
WORKERS = 1
REQUEST_ID = "x-request-id"
ENCODED_SLASH = re.compile("%2F", re.IGNORECASE)
INLINE_MAX = 8 * 1024 * 1024  # a file body up to this is sent with its Content-Length (read whole: Robyn copies it)


@dataclass(frozen=True, slots=True)
class Hub:
    """What the adapter is handed to run a built hub (server/serve.py makes it: adapters never import the root)."""

    app: App
    start: Callable[[], Awaitable[None]]  # announce and start the parts, on Robyn's loop before it accepts
    stop: Callable[[Any], Awaitable[None]]  # the shutdown order (server/lifecycle.py), given this runtime
    static_body: Callable[[], bytes | None]  # --bench-static's body once started, or None
    on_signals: Callable[[asyncio.AbstractEventLoop, Callable[[], None]], None]


def run_robyn(settings: Settings, hub: Hub) -> int:
    """Serve until SIGTERM/SIGINT, then exit the process (0, or 1 if the hub failed to start)."""
    # Robyn's Rust side logs every request's query parameters at DEBUG (logger robyn.types.multimap), and a
    # query string may hold a key (SPEC 7: never logged): Robyn's loggers stay at INFO whatever --log-level.
    robyn_log = logging.getLogger("robyn")
    robyn_log.setLevel(max(logging.INFO, robyn_log.getEffectiveLevel()))
    runtime = RobynRuntime(settings, hub)
    server = Server()
    handler = FunctionInfo(runtime.handle, True, 1, {"request": None}, {})
    for method in METHODS:
        for route in ("/", "/*path"):
            server.add_route(method, route, handler, False)
    # the remembered GETs (the router's versioned routes): a sync handler, on actix's thread, answers remembered
    # bodies without the hand-over to the event loop (App.serve_hot under the lock); anything else it hands to the
    # loop and waits. A parameterless route is an exact Robyn route (preferred by its router), whose handler knows
    # its path; a templated one is its literal head + `*path`
    for route in hot_routes(hub.app.router.remembered_patterns()):
        server.add_route(METHODS[0], route, FunctionInfo(runtime.hot_handler(route), False, 1, {"request": None}, {}),
                         False)
    if settings.bench_static:
        static = FunctionInfo(runtime.static, False, 1, {"request": None}, {})
        server.add_route(METHODS[0], BENCH_STATIC_PATH, static, False)
    server.add_startup_handler(FunctionInfo(runtime.startup, True, 0, {}, {}))
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())  # Robyn makes its loop with new_event_loop()
    # one worker; returns when the loop stops (the .pyi lists two more arguments 0.88 does not take)
    server.start(SocketHeld(settings.host, settings.port), WORKERS)  # type: ignore[call-arg]
    _exit(runtime.exit_code)


def hot_routes(patterns: list[str]) -> list[str]:
    """Robyn's routes for the router's remembered patterns: exact ones as they are, `/a/{id}/b` as `/a/*path`."""
    routes: list[str] = []
    for pattern in patterns:
        head, brace, _ = pattern.partition("{")
        route = head.rstrip("/") + "/*path" if brace else pattern
        if route not in routes:
            routes.append(route)
    return routes


class RobynRuntime:
    def __init__(self, settings: Settings, hub: Hub) -> None:
        self.settings = settings
        self.hub = hub
        self.app: App | None = None
        self.static_response: RobynResponse | None = None
        self.exit_code = 0
        self.gate = EdgeGate(settings.body_timeout_s, settings.uploads_per_ip)  # only in-flight and closing apply
        self._stopping: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._kept: set[int] = set()  # threads whose Python thread state is kept (_keep_thread_state)

    async def startup(self) -> None:
        """Runs on Robyn's loop, on the main thread, before actix accepts connections."""
        loop = asyncio.get_running_loop()
        try:
            await self.hub.start()  # its App has the lock handle_sync needs (built for Robyn)
        except Exception:
            log.exception("the hub failed to start")
            self.exit_code = 1
            loop.stop()
            return
        self.app = self.hub.app
        self.loop = loop
        body = self.hub.static_body()
        if body is not None:
            self.static_response = RobynResponse(200, {"content-type": "application/json"}, body)
        self.hub.on_signals(loop, self.begin_shutdown)

    async def handle(self, request: Any) -> RobynResponse | StreamingResponse:
        app = self.app
        assert app is not None
        req = _request(request)
        try:
            resp = await app.handle(req) if self.gate.enter() else app.refuse(req, shutting_down())
        finally:
            self.gate.leave()
        if resp.file is not None:
            return await _file_response(resp, resp.file)
        return _response(resp)

    def hot_handler(self, route: str) -> Callable[[Any], RobynResponse | StreamingResponse]:
        """The sync handler of one of the remembered routes (GET only), on actix's thread. A remembered answer costs no
        hand-over to the event loop; a miss (first request of a data version, unknown key, 429, 400...) runs
        `handle` on the loop and waits for it. Every getter of Robyn's request is a call into Rust, so only what
        serve_hot needs is read: the path of an exact route is the route itself (and Robyn makes no path
        parameters for it), the method is GET, and the request goes as the peer (`robyn_peer` reads its address
        for a public route only)."""
        fixed = None if route.endswith("*path") else route
        runtime, gate, kept_threads = self, self.gate, self._kept

        def handle_sync(request: Any) -> RobynResponse | StreamingResponse:
            app, loop = runtime.app, runtime.loop
            assert app is not None and loop is not None
            if get_ident() not in kept_threads:
                runtime._keep_thread_state()
            if not gate.closing and not request.body:
                path = fixed
                if path is None:
                    path = request.url.path
                    if "%" in path:
                        path = decode_path(path)
                pairs = request.query_params.multi_items()
                query = "&".join([f"{k}={v}" for k, v in pairs if k or v]) if pairs else ""
                with app.guard:  # the hub's lock (Robyn's header map answers .get(lower-case name) itself)
                    hot = app.serve_hot("GET", path, query, request.headers, request)
                if hot is not None and not isinstance(hot, tuple):  # the shared limiter: its check runs on the loop
                    hot = runtime._on_loop(runtime._awaited(hot), loop)
                if hot is not None:
                    status, variant, fields, rid, body = hot
                    kept = variant.prebuilt
                    if kept is not None:  # the response kept for this variant and status, its fields set in place
                        entry = kept.get(status if body is variant.body else -status)  # a HEAD's 200 has no body
                        if entry is not None and (fields is entry.fields or entry.take(fields)):
                            entry.headers.set(REQUEST_ID, rid)
                            return entry.response
                    return _new_response(status, variant, fields, rid, body)
            answer = runtime._on_loop(runtime.handle(request), loop)
            return answer if answer is not None else _response(app.refuse(_request(request), shutting_down()))

        return handle_sync

    def _keep_thread_state(self) -> None:
        """Keep this (actix) thread's Python thread state for the life of the process: one PyGILState_Ensure that
        is never released, so pyo3's Ensure/Release around each call into Python only takes and drops the GIL
        instead of making and deleting a thread state (the process ends with os._exit, never finalising)."""
        ctypes.pythonapi.PyGILState_Ensure()  # we hold the GIL here: this only counts one more Ensure
        self._kept.add(get_ident())

    @staticmethod
    def _on_loop(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> T | None:
        """Run `coro` on the event loop and wait for it here (actix's thread); None if it took BRIDGE_TIMEOUT_S."""
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(BRIDGE_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            return None

    async def _awaited(self, hot: Coroutine[Any, Any, HotReply | None]) -> HotReply | None:
        """A remembered answer whose GCRA check is awaited (shared limiter), counted in flight like `handle`."""
        self.gate.enter()
        try:
            return await hot
        finally:
            self.gate.leave()

    def static(self, request: Any) -> RobynResponse | None:
        """The bench's static route (--bench-static), the reference of the hot routes' ratios: it keeps actix's
        thread state as they do, so it costs the same whichever route a run asks first (made per call, every
        Robyn route costs about twice the core)."""
        if get_ident() not in self._kept:
            self._keep_thread_state()
        return self.static_response

    def begin_shutdown(self) -> None:
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._shutdown())

    async def _shutdown(self) -> None:
        try:
            await self.hub.stop(self)
        except Exception:
            log.exception("shutdown failed")
        asyncio.get_running_loop().stop()

    # --- lifecycle.HttpRuntime -------------------------------------------------------------------------------
    def stop_accepting(self) -> None:
        """actix stops accepting on the same signal; the gate refuses what it had already accepted."""
        self.gate.closing = True

    async def drain(self, timeout_s: float) -> bool:
        return await self.gate.drain(timeout_s)

    async def release(self, timeout_s: float) -> bool:
        return True  # actix's connections end with the process


def _request(r: Any) -> Request:
    body = r.body
    path = r.url.path
    if "%" in path:
        path = decode_path(path)
    limit = body_limit(path)
    if len(body) > limit:  # a str longer than the limit has more bytes than that too
        body = TOO_LARGE if limit == MAX_BODY else bytes(limit + 1)
    elif type(body) is str:
        body = body.encode()
    pairs = r.query_params.multi_items()  # raw: still percent-encoded
    query = "&".join([f"{k}={v}" for k, v in pairs if k or v]) if pairs else ""  # "&&" gives ("", "")
    return Request(r.method, path, query, r.headers.to_dict(), body, r.ip_addr or "")


def decode_path(raw: str) -> str:
    """The path percent-decoded as Granian decodes it (invalid UTF-8 becomes U+FFFD), except an encoded slash:
    `%2F` stays as sent, so it is part of a segment and never a separator (`/api/v1/flatfiles/ticks%2F2026-11-23
    .csv.gz` matches no route: 404), as Apache's `AllowEncodedSlashes NoDecode`. Granian gives no raw path, so
    there it cannot be told from `/` (docs/input-rules.md)."""
    return "%2F".join(unquote(part) for part in ENCODED_SLASH.split(raw))


class Prebuilt:
    """A Robyn Response kept for one variant of a remembered answer and one status (200 with its body, 200 to a
    HEAD, 304), handed out again to every request that gets that answer with its per-request fields set in place:
    the request id each time, the rate-limit fields when the limiter's tuple is another one. Safe because Robyn
    copies a returned Response into Rust (status, body, a clone of the headers) on actix's thread right after
    the handler returns, with no Python running in between, and only that thread (WORKERS = 1) touches it."""

    __slots__ = ("fields", "headers", "names", "response", "values")

    def __init__(self, response: RobynResponse, headers: Headers, fields: HotFields) -> None:
        self.response, self.headers, self.fields = response, headers, fields
        self.names = [name for name, _ in fields]
        self.values = [value for _, value in fields]

    def take(self, fields: HotFields) -> bool:
        """Set `fields` on the kept headers; False if they are not the same names in the same order (the caller
        then builds a new Response: this one stays as it is for the answers it fits). The caller has seen that
        they are not the kept tuple itself (the limiter's shared tuple: nothing moved since the last request)."""
        if [name for name, _ in fields] != self.names:
            return False
        values, headers = self.values, self.headers
        for i, (name, value) in enumerate(fields):
            if value != values[i]:
                headers.set(name, value)
                values[i] = value
        self.fields = fields
        return True


def _new_response(status: int, variant: Variant, fields: HotFields, rid: str, body: bytes) -> RobynResponse:
    """serve_hot's reply as a new Robyn Response (the first request of a variant and status, or fields that do
    not fit the kept one), kept for the variant and status when setting its per-request fields in place is safe."""
    headers = Headers({})  # Headers.append per field costs half of what converting a dict costs Robyn (~0.6 vs ~1.2 us)
    for name, value in variant.head:
        headers.append(name, value)
    for name, value in fields:
        headers.append(name, value)
    headers.append(REQUEST_ID, rid)
    response = RobynResponse(status, headers, body)
    kept: dict[int, Prebuilt | None] | None = variant.prebuilt
    if kept is None:
        kept = variant.prebuilt = {}
    key = status if body is variant.body else -status
    if key not in kept:
        # kept only if setting a per-request field replaces exactly that field: no name twice (Headers.set drops
        # every other value of its name: a CORS Vary: Origin next to the variant's Vary: Accept-Encoding)
        names = [name.lower() for name, _ in (*variant.head, *fields)]
        names.append(REQUEST_ID)
        kept[key] = Prebuilt(response, headers, fields) if len(set(names)) == len(names) else None
    return response


def _response(resp: Response) -> RobynResponse:
    pairs = resp.all_headers()
    headers = dict(pairs)
    if len(headers) == len(pairs):
        return RobynResponse(resp.status, headers, resp.body)
    repeated = Headers({})  # a repeated name: send every value
    for name, value in pairs:
        repeated.append(name, value)
    return RobynResponse(resp.status, repeated, resp.body)


async def _file_response(resp: Response, file: FileBody) -> RobynResponse | StreamingResponse:
    """A file body on Robyn 0.88, which has no sized stream: its `file_path` response reads the whole file into
    memory (twice), and its StreamingResponse is always chunked (actix drops our Content-Length for a stream). So a
    body up to INLINE_MAX is read off the loop and sent as bytes (actix writes its Content-Length); a larger one
    is streamed chunked, CHUNK bytes at a time from Robyn's blocking threads (docs/history.md: the difference)."""
    if file.length <= INLINE_MAX:
        resp.body = await asyncio.to_thread(_read_range, file)
        resp.headers = [(name, value) for name, value in resp.headers if name != "content-length"]
        return _response(resp)
    headers = Headers({})
    for name, value in resp.all_headers():
        if name != "content-length":
            headers.append(name, value)
    chunks = iter_file(Path(file.path), file.start, file.start + file.length - 1)
    return StreamingResponse(chunks, resp.status, headers,  # type: ignore[arg-type]  # any iterator serves
                             media_type=resp.content_type or "application/octet-stream")


def _read_range(file: FileBody) -> bytes:
    with open(file.path, "rb") as fh:
        fh.seek(file.start)
        return fh.read(file.length)


def _exit(code: int) -> NoReturn:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
