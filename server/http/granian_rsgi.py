"""Granian RSGI adapter: RSGI scope/protocol in, `App.handle`, bytes out; the edge gate around it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.server.embed import Server

from server.api.core.pipeline import MAX_BODY, App, body_limit
from server.api.core.types import Request, Response
from server.config import BENCH_STATIC_PATH, HttpSettings
from server.core.client_ip import peer_host
from server.http.edge import EdgeGate, shutting_down

log = logging.getLogger("market.granian")

DRAIN_LIMIT = 1024 * 1024
TOO_LARGE = b"\0" * (MAX_BODY + 1)  # any body longer than MAX_BODY makes the pipeline answer 413
BACKLOG = 8192  # the kernel caps it at net.core.somaxconn
MAX_BACKPRESSURE = 65536


class RsgiAdapter:
    def __init__(self, app: App, gate: EdgeGate, static_body: bytes | None = None) -> None:
        self.app = app
        self.gate = gate
        self.static_body = static_body

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":  # websockets are served on their own port
            return
        if self.static_body is not None and scope.path == BENCH_STATIC_PATH:
            proto.response_bytes(200, [("content-type", "application/json")], self.static_body)
            return
        headers = scope.headers  # Granian's header map: lower-case names, .get()
        gate = self.gate
        length = headers.get("content-length")  # _has_body, inlined: this is every request's path
        if not gate.closing and (length is None or length == "0") and "transfer-encoding" not in headers:
            # a remembered answer (versioned GET routes): no Request, no await, headers prebuilt per version;
            # the scope goes as the peer (the App was built with granian_peer to read it, for a public route only)
            hot = self.app.serve_hot(scope.method, scope.path, scope.query_string, headers, scope)
            if hot is not None:
                if not isinstance(hot, tuple):  # the shared limiter's check is awaited (a request in flight)
                    gate.in_flight += 1
                    try:
                        hot = await hot
                    finally:
                        gate.in_flight -= 1
                        if gate.closing:
                            gate.settled()
                if hot is not None:
                    status, variant, fields, rid, body = hot
                    proto.response_bytes(status, variant.head + fields + (("x-request-id", rid),), body)
                    return
        req = Request(scope.method, scope.path, scope.query_string, headers, b"", peer_host(scope.client))
        gate.in_flight += 1  # EdgeGate.enter/leave, inlined: this is every request's path
        try:
            if gate.closing:
                resp = self.app.refuse(req, shutting_down())
            elif _has_body(headers):
                resp = await self._with_body(req, proto)
            else:
                resp = await self.app.handle(req)
        finally:
            gate.in_flight -= 1
            if gate.closing:
                gate.settled()
        file = resp.file
        if file is None:
            proto.response_bytes(resp.status, resp.all_headers(), resp.body)
        else:  # Granian streams it from the file in Rust (its end is exclusive); the Content-Length is ours
            proto.response_file_range(resp.status, resp.all_headers(), file.path, file.start, file.start + file.length)

    async def _with_body(self, req: Request, proto: Any) -> Response:
        ip = self.app.client_ip(req)
        refusal = self.gate.start_upload(ip)
        if refusal is not None:  # answered without reading the body; hyper then closes the connection
            return self.app.refuse(req, refusal)
        try:
            async with self.gate.body_deadline():
                req.body = await _read_body(proto, req.headers, body_limit(req.path))
        except TimeoutError:
            return self.app.refuse(req, self.gate.timed_out())
        finally:
            self.gate.end_upload(ip)
        return await self.app.handle(req)


def _has_body(headers: Any) -> bool:
    length = headers.get("content-length")
    return (length is not None and length != "0") or "transfer-encoding" in headers


async def _read_body(proto: Any, headers: Any, limit: int = MAX_BODY) -> bytes:
    """Keep at most `limit` + 1 bytes (MAX_BODY; the ingest route's 1 MiB), so an oversized body is refused without
    being buffered.

    An oversized body of up to DRAIN_LIMIT is read and dropped before the 413 goes out: a
    client still uploading would otherwise see the connection reset instead of the answer.
    """
    length = headers.get("content-length")
    declared = int(length) if length is not None and length.isdigit() else None
    too_large = TOO_LARGE if limit == MAX_BODY else bytes(limit + 1)
    if declared is not None and declared > max(DRAIN_LIMIT, limit + 1):
        return too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in proto:
        size += len(chunk)
        if size <= limit + 1:
            chunks.append(chunk)
        elif size > max(DRAIN_LIMIT, limit + 1):
            break
    return too_large if size > limit else b"".join(chunks)


def backpressure(open_files: int) -> int:
    """Connections Granian serves at once (each holds a file descriptor); the rest wait in the backlog.

    Granian's default (the backlog, 1024-2048) let 2,048 idle connections from one client lock everyone
    out; here it takes three quarters of the descriptors, leaving the rest to WebSockets and storage.
    """
    return max(128, min(MAX_BACKPRESSURE, open_files * 3 // 4))


class GranianRuntime:
    """Embedded Granian serving the app inside the hub's event loop."""

    def __init__(self, app: App, settings: HttpSettings, open_files: int, static_body: bytes | None = None) -> None:
        self.gate = EdgeGate(settings.body_timeout_s, settings.uploads_per_ip)
        self.server = Server(
            RsgiAdapter(app, self.gate, static_body),
            address=settings.host,
            port=settings.port,
            interface=Interfaces.RSGI,
            http=HTTPModes.http1,
            websockets=False,
            log_enabled=False,
            backlog=BACKLOG,
            backpressure=backpressure(open_files),
            # hyper's header read timeout covers an unfinished request head and an idle keep-alive connection
            http1_settings=HTTP1Settings(header_read_timeout=round(settings.idle_timeout_s * 1000), keep_alive=True),
        )
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self, on_exit: Callable[[BaseException | None], None]) -> None:
        """Start serving; `on_exit` is called if the server stops by itself (e.g. the port is taken)."""
        self._task = asyncio.get_running_loop().create_task(self.server.serve())

        def done(task: asyncio.Task[None]) -> None:
            if not self._stopping:
                on_exit(None if task.cancelled() else task.exception())

        self._task.add_done_callback(done)

    # --- lifecycle.HttpRuntime -------------------------------------------------------------------------------
    def stop_accepting(self) -> None:
        self._stopping = True
        self.gate.closing = True
        self.server.stop()

    async def drain(self, timeout_s: float) -> bool:
        return await self.gate.drain(timeout_s)

    async def release(self, timeout_s: float) -> bool:
        """Wait for Granian's worker to close its connections; never cancel it (its shutdown callback would
        then hit a cancelled future: the InvalidStateError traceback)."""
        if self._task is None:
            return True
        done, _ = await asyncio.wait({self._task}, timeout=timeout_s)
        if done and not self._task.cancelled() and self._task.exception() is not None:
            return True  # it had already failed; on_exit reported why
        return bool(done)
