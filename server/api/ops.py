"""Operational endpoints: health, readiness, metrics, the OpenAPI document and its /docs viewer."""

from __future__ import annotations

import mimetypes
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import swagger_ui_bundle

from server.api.errors import ApiError
from server.api.openapi import build_openapi
from server.api.router import Access, Router
from server.api.types import Request, Response

if TYPE_CHECKING:
    from server.hub import Hub

DOCS_HTML = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Market API docs</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>
"""
DOCS_INIT = b'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#ui"});\n'
DOCS_FILES = ("swagger-ui.css", "swagger-ui-bundle.js")


class OpsApi:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._openapi: bytes | None = None
        self._docs = _load_docs()

    def register(self, router: Router) -> None:
        router.add("GET", "/healthz", self.healthz, Access.OPEN, name="healthz")
        router.add("GET", "/readyz", self.readyz, Access.OPEN, name="readyz")
        router.add("GET", "/metrics", self.metrics, Access.OPEN, name="metrics")
        router.add("GET", "/openapi.json", self.openapi, Access.OPEN, name="openapi")
        router.add("GET", "/docs", self.docs, Access.OPEN, name="docs")
        router.add("GET", "/docs/{file}", self.docs_file, Access.OPEN, name="docs_file")

    def healthz(self, req: Request) -> Response:
        return Response(200, b'{"status":"ok"}')

    def readyz(self, req: Request) -> Response:
        checks = {"feed": self.hub.ready(), "storage": _storage_ok(self.hub.conn)}
        if not all(checks.values()):
            raise ApiError("not_ready", "Not ready: " + ", ".join(k for k, ok in checks.items() if not ok))
        return Response(200, orjson.dumps({"status": "ready", "checks": checks, "epoch": self.hub.epoch}))

    def metrics(self, req: Request) -> Response:
        return Response(200, self.hub.registry.render(), "text/plain; version=0.0.4; charset=utf-8")

    def openapi(self, req: Request) -> Response:
        if self._openapi is None:
            self._openapi = orjson.dumps(build_openapi(self.hub.router, self.hub.settings))
        return Response(200, self._openapi)

    def docs(self, req: Request) -> Response:
        return Response(200, DOCS_HTML, "text/html; charset=utf-8")

    def docs_file(self, req: Request) -> Response:
        found = self._docs.get(req.path_params["file"])
        if found is None:
            raise ApiError("not_found", "No such documentation file.")
        body, ctype = found
        return Response(200, body, ctype, [("cache-control", "public, max-age=86400")])


def _load_docs() -> dict[str, tuple[bytes, str]]:
    root = Path(swagger_ui_bundle.swagger_ui_path)
    files = {name: ((root / name).read_bytes(), mimetypes.guess_type(name)[0] or "application/octet-stream")
             for name in DOCS_FILES}
    files["init.js"] = (DOCS_INIT, "text/javascript")
    return files


def _storage_ok(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1").fetchone()
    except sqlite3.Error:
        return False
    return True
