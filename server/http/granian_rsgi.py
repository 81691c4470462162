"""Granian RSGI adapter: RSGI scope/protocol in, `App.handle`, bytes out. Nothing else."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.server.embed import Server

from server.api.app import MAX_BODY, App
from server.api.types import Request
from server.config import BENCH_STATIC_PATH

log = logging.getLogger("market.granian")

DRAIN_LIMIT = 1024 * 1024
TOO_LARGE = b"\0" * (MAX_BODY + 1)  # any body longer than MAX_BODY makes the pipeline answer 413


class RsgiAdapter:
    def __init__(self, app: App, static_body: bytes | None = None) -> None:
        self.app = app
        self.static_body = static_body

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":  # websockets are served on their own port
            return
        if self.static_body is not None and scope.path == BENCH_STATIC_PATH:
            proto.response_bytes(200, [("content-type", "application/json")], self.static_body)
            return
        req = Request(
            scope.method,
            scope.path,
            scope.query_string,
            scope.headers,  # Granian's header map: lower-case names, .get()
            await _read_body(proto, scope.headers) if _has_body(scope.headers) else b"",
            _peer(scope.client),
        )
        resp = await self.app.handle(req)
        proto.response_bytes(resp.status, resp.all_headers(), resp.body)


def _has_body(headers: Any) -> bool:
    length = headers.get("content-length")
    return (length is not None and length != "0") or "transfer-encoding" in headers


async def _read_body(proto: Any, headers: Any) -> bytes:
    """Keep at most MAX_BODY + 1 bytes, so an oversized body is refused without being buffered.

    An oversized body of up to DRAIN_LIMIT is read and dropped before the 413 goes out: a
    client still uploading would otherwise see the connection reset instead of the answer.
    """
    length = headers.get("content-length")
    declared = int(length) if length is not None and length.isdigit() else None
    if declared is not None and declared > DRAIN_LIMIT:
        return TOO_LARGE
    chunks: list[bytes] = []
    size = 0
    async for chunk in proto:
        size += len(chunk)
        if size <= MAX_BODY + 1:
            chunks.append(chunk)
        elif size > DRAIN_LIMIT:
            break
    return TOO_LARGE if size > MAX_BODY else b"".join(chunks)


def _peer(client: str) -> str:
    host = client.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


class GranianRuntime:
    """Embedded Granian serving the app inside the hub's event loop."""

    def __init__(self, app: App, host: str, port: int, static_body: bytes | None = None) -> None:
        self.server = Server(
            RsgiAdapter(app, static_body),
            address=host,
            port=port,
            interface=Interfaces.RSGI,
            http=HTTPModes.http1,
            websockets=False,
            log_enabled=False,
            backlog=2048,
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

    async def stop(self) -> None:
        self._stopping = True
        self.server.stop()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 3.0)
            except (TimeoutError, asyncio.CancelledError):
                log.warning("granian did not stop in time")
            except Exception:  # it already failed; on_exit reported why
                pass
