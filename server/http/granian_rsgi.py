"""Granian RSGI adapter: RSGI scope/protocol in, `App.handle`, bytes out. Nothing else."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.server.embed import Server

from server.api.app import MAX_BODY, App
from server.api.types import Request

log = logging.getLogger("market.granian")


class RsgiAdapter:
    def __init__(self, app: App) -> None:
        self.app = app

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":  # websockets are served on their own port
            return
        req = Request(
            scope.method,
            scope.path,
            scope.query_string,
            {k.lower(): v for k, v in scope.headers.items()},
            await _read_body(proto, scope.headers.get("content-length")),
            _peer(scope.client),
        )
        resp = await self.app.handle(req)
        proto.response_bytes(resp.status, resp.all_headers(), resp.body)


async def _read_body(proto: Any, length: str | None) -> bytes:
    """Read at most MAX_BODY + 1 bytes, so an oversized body is refused without being buffered."""
    if length is not None and length.isdigit() and int(length) > MAX_BODY:
        return b"\0" * (MAX_BODY + 1)
    if length == "0":
        return b""
    chunks: list[bytes] = []
    size = 0
    async for chunk in proto:
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY:
            break
    return b"".join(chunks)


def _peer(client: str) -> str:
    host = client.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


class GranianRuntime:
    """Embedded Granian serving the app inside the hub's event loop."""

    def __init__(self, app: App, host: str, port: int) -> None:
        self.server = Server(
            RsgiAdapter(app),
            address=host,
            port=port,
            interface=Interfaces.RSGI,
            http=HTTPModes.http1,
            websockets=False,
            log_enabled=False,
            backlog=2048,
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.server.serve())

    async def stop(self) -> None:
        self.server.stop()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 3.0)
            except (TimeoutError, asyncio.CancelledError):
                log.warning("granian did not stop in time")
