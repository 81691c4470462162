"""The OpenAPI 3.1 document, generated from the route table plus per-route descriptions."""

from __future__ import annotations

from typing import Any

from server.api.router import Access, Router
from server.config import Settings


def build_openapi(router: Router, settings: Settings) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for route in router.routes():
        op: dict[str, Any] = {"operationId": f"{route.method.lower()}_{route.name}", "responses": {"200": {"description": "OK"}}}
        if route.access is Access.KEYED:
            op["security"] = [{"ServiceKey": []}]
        paths.setdefault(route.pattern, {})[route.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "Commodity market service", "version": "1.0.0"},
        "servers": [{"url": f"http://{settings.host}:{settings.port}"}],
        "paths": paths,
        "components": {"securitySchemes": {"ServiceKey": {"type": "apiKey", "in": "header", "name": "X-SERVICE-Key"}}},
    }
