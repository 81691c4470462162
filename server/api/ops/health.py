"""Operational endpoints: health, readiness, metrics and the OpenAPI document (its /docs viewer is in web.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import orjson

from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.docs.openapi import build_openapi
from server.config import HttpSettings, ProcessSettings
from server.core.errors import ApiError
from server.core.metrics import Registry
from server.store.sql.repositories import Storage

STORAGE_CHECK_S = 2.0


class OpsApi:
    """`ready`: the hub's own readiness (started, feed or tick log current); `node`: the engine's name for this hub
    and `epoch` the tick history's, both shown by /readyz (several hubs share a port: SPEC 12)."""

    def __init__(self, http: HttpSettings, process: ProcessSettings, router: Router, registry: Registry,
                 storage: Storage, ready: Callable[[], bool], epoch: str, node: str) -> None:
        self.http, self.process = http, process  # /openapi.json names --host and --port; /readyz the worker
        self.router, self.registry, self.storage = router, registry, storage
        self.ready, self.epoch, self.node = ready, epoch, node
        self._openapi: bytes | None = None

    def register(self, router: Router) -> None:
        router.add("GET", "/healthz", self.healthz, Access.OPEN, name="healthz")
        router.add("GET", "/readyz", self.readyz, Access.OPEN, name="readyz")
        router.add("GET", "/metrics", self.metrics, Access.OPEN, name="metrics")
        router.add("GET", "/openapi.json", self.openapi, Access.OPEN, name="openapi")

    def healthz(self, req: Request) -> Response:
        return Response(200, b'{"status":"ok"}')

    async def readyz(self, req: Request) -> Response:
        checks = {"feed": self.ready(), "storage": await _storage_ok(self.storage)}
        if not all(checks.values()):
            raise ApiError("not_ready", "Not ready: " + ", ".join(k for k, ok in checks.items() if not ok))
        # node and worker: which hub process answered (several share a port: SPEC 12)
        return Response(200, orjson.dumps({"status": "ready", "checks": checks, "epoch": self.epoch,
                                           "node": self.node, "worker": self.process.worker_id}))

    def metrics(self, req: Request) -> Response:
        return Response(200, self.registry.render(), "text/plain; version=0.0.4; charset=utf-8")

    def openapi(self, req: Request) -> Response:
        if self._openapi is None:
            self._openapi = orjson.dumps(build_openapi(self.router, self.http))
        return Response(200, self._openapi)


async def _storage_ok(storage: Storage) -> bool:
    """A reader answers within STORAGE_CHECK_S (reads never wait for the write lock in WAL mode)."""
    try:
        async with asyncio.timeout(STORAGE_CHECK_S):
            return await storage.ping()
    except TimeoutError:
        return False
