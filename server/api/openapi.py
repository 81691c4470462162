"""The OpenAPI 3.1 document: operations described here, merged with the live route table.

Every route the router knows appears; each gets the errors that its access
class implies (401/429 for keyed, 429 for public, 405 and 413 everywhere), the
rate-limit response headers, and X-Request-ID. A route missing from OPERATIONS
still appears (with a generic description), so the document never hides one.
"""

from __future__ import annotations

from typing import Any

from server.api.router import Access, Router
from server.config import Settings

S = dict[str, Any]


def ref(name: str) -> S:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: list[str], **props: S) -> S:
    return {"type": "object", "required": required, "properties": props}


STR: S = {"type": "string"}
NUM: S = {"type": "number"}
INT: S = {"type": "integer"}
BOOL: S = {"type": "boolean"}
TS: S = {"type": "string", "format": "date-time", "description": "ISO 8601 with offset (Asia/Shanghai, +08:00)"}
NULLNUM: S = {"type": ["number", "null"]}

QUOTE_PROPS: dict[str, S] = {
    "id": STR, "kind": {"type": "string", "enum": ["oil", "chem", "fx"]}, "name": ref("Localised"),
    "price": NULLNUM, "priceText": {"type": "string", "examples": ["2,415.00 CNY/t"]},
    "change": {**NULLNUM, "description": "price minus the previous daily close, in the price's unit"},
    "changePct": {**NULLNUM, "description": "change in percent of the previous close"},
    "source": ref("Localised"), "unit": ref("Localised"), "currency": STR,
    "updated": {**TS, "type": ["string", "null"]},
}

SCHEMAS: dict[str, S] = {
    "Localised": obj(["zh", "en"], zh=STR, en=STR),
    "Problem": {
        **obj(["type", "title", "status", "detail", "code"], type=STR, title=STR, status=INT, detail=STR,
              code={"type": "string", "description": "stable snake_case identifier"}),
        "properties": {
            "type": STR, "title": STR, "status": INT, "detail": STR,
            "code": {"type": "string", "enum": [
                "invalid_parameter", "invalid_body", "validation_failed", "unauthorized", "forbidden",
                "not_found", "method_not_allowed", "conflict", "payload_too_large", "unsupported_media_type",
                "rate_limited", "internal_error", "not_ready"]},
            "errors": {"type": "array", "items": obj(["field", "message"], field=STR, message=STR)},
            "retryAfter": {"type": "integer", "description": "on 429: seconds to wait"},
        },
    },
    "Quote": obj(list(QUOTE_PROPS), **QUOTE_PROPS),
    "QuoteExtended": obj(
        [*QUOTE_PROPS, "extended", "open", "high", "low", "prevClose", "volume", "seq"],
        **QUOTE_PROPS, extended={"const": True}, open=NULLNUM, high=NULLNUM, low=NULLNUM, prevClose=NULLNUM,
        volume=NUM, seq={"type": "integer", "description": "ticks of this instrument since the server started"},
    ),
    "QuoteList": obj(["updated", "count", "demo", "quotes"], updated=TS, count=INT, demo=BOOL,
                     quotes={"type": "array", "items": ref("Quote")}),
    "Candle": obj(["t", "o", "h", "l", "c", "v"], t={"type": "string", "format": "date"}, o=NUM, h=NUM, l=NUM,
                  c=NUM, v=NUM),
    "CandleSeries": obj(["id", "updated", "demo", "series"], id=STR, updated=TS, demo=BOOL,
                        series={"type": "array", "items": ref("Candle"),
                                "description": "ascending, one per trading day (Mon-Fri); the last is live"}),
    "Spread": obj(
        ["pair", "shfe", "dce", "intl", "basis", "note", "cfrUsd", "fx", "tariff", "vat", "portFee", "basisPct"],
        pair={"type": "string", "enum": ["methanol", "PTA", "PP", "PE", "PVC"]},
        shfe={**NUM, "description": "first domestic price, CNY/t"},
        dce={**NUM, "description": "second domestic price, CNY/t"},
        intl={**NUM, "description": "cfrUsd x fx x (1 + tariff) x (1 + vat) + portFee, CNY/t"},
        basis={**NUM, "description": "(shfe + dce) / 2 - intl"}, note=STR, cfrUsd=NUM, fx=NUM, tariff=NUM,
        vat=NUM, portFee=NUM, basisPct={**NUM, "description": "100 x basis / intl"},
    ),
    "SpreadList": obj(["updated", "demo", "spreads"], updated=TS, demo=BOOL,
                      spreads={"type": "array", "items": ref("Spread")}),
    "InventoryItem": obj(["id", "name", "type", "level", "unit", "wow", "wowPct"], id=STR, name=ref("Localised"),
                         type={"type": "string", "enum": ["port", "social", "factory"]}, level=NUM, unit=STR,
                         wow=NUM, wowPct=NUM),
    "InventoryList": obj(["updated", "demo", "items"], updated=TS, demo=BOOL,
                         items={"type": "array", "items": ref("InventoryItem")}),
    "Category": obj(["id", "name", "count", "quotes"], id=STR, name=ref("Localised"), count=INT,
                    quotes={"type": "array", "items": ref("Quote")}),
    "MarketSnapshot": obj(["updated", "refreshSeconds", "demo", "categories"], updated=TS, refreshSeconds=NUM,
                          demo=BOOL, categories={"type": "array", "items": ref("Category")}),
    "NewsItem": obj(["id", "title", "summary", "source", "publishedAt", "tags"], id=STR, title=ref("Localised"),
                    summary=ref("Localised"), source=STR, publishedAt=TS, tags={"type": "array", "items": STR}),
    "ResearchItem": obj(["id", "title", "summary", "source", "publishedAt", "tags", "author", "category"],
                        id=STR, title=ref("Localised"), summary=ref("Localised"), source=STR, publishedAt=TS,
                        tags={"type": "array", "items": STR}, author=STR, category=STR),
    "Register": obj(["email", "password"], email={"type": "string", "format": "email"},
                    password={"type": "string", "minLength": 8}, name=STR, company=STR),
    "Registered": obj(["id", "email"], id=STR, email=STR),
    "Login": obj(["email", "password"], email=STR, password=STR),
    "Token": obj(["token", "tokenType", "expiresIn"], token=STR, tokenType={"const": "Bearer"},
                 expiresIn={"type": "integer", "description": "seconds"}),
    "Inquiry": obj(["product", "quantity"], product=STR, quantity={"type": "number", "exclusiveMinimum": 0},
                   unit=STR, message={"type": "string", "maxLength": 2000}, deliveryPlace=STR, contactPhone=STR),
    "Cooperation": {
        **obj(["company", "contactName"], company=STR, contactName=STR, email={"type": "string", "format": "email"},
              phone=STR, type={"type": "string", "enum": ["data", "partnership", "advertising", "other"]},
              message={"type": "string", "maxLength": 2000}),
        "description": "at least one of email or phone",
    },
    "Created": obj(["id", "status", "createdAt"], id=STR, status={"const": "received"}, createdAt=TS),
    "Receipt": obj(
        ["receiptNo", "commodity", "grade", "quantity", "unit", "warehouse", "holder", "status", "issuedAt",
         "expiresAt", "evidenceHash", "anchored"],
        receiptNo=STR, commodity=STR, grade=STR, quantity=NUM, unit=STR, warehouse=STR,
        holder={"type": "string", "description": "masked: at most half of the characters are shown"},
        status={"type": "string", "enum": ["active", "pledged", "frozen", "cancelled"]}, issuedAt=TS,
        expiresAt={**TS, "type": ["string", "null"]}, evidenceHash=STR, anchored=BOOL,
    ),
    "Verification": {
        "type": "object",
        "required": ["hash", "verified"],
        "properties": {
            "hash": STR, "verified": BOOL, "status": {"type": "string", "enum": ["pending", "anchored", "tampered"]},
            "anchoredAt": TS, "ledger": STR, "blockHeight": INT, "txHash": STR, "merkleRoot": STR,
            "leafIndex": INT, "treeSize": INT,
            "proof": {"type": "array", "items": STR,
                      "description": "RFC 9162 inclusion proof (hex), recomputes merkleRoot from hash"},
        },
    },
}

RATE_HEADERS: dict[str, S] = {
    "X-RateLimit-Limit": {"schema": INT, "description": "requests per minute of this bucket"},
    "X-RateLimit-Remaining": {"schema": INT},
    "X-RateLimit-Reset": {"schema": INT, "description": "seconds until the bucket is full"},
    "RateLimit-Policy": {"schema": STR, "description": 'IETF field, e.g. "free";q=60;w=60'},
    "RateLimit": {"schema": STR, "description": 'IETF field, e.g. "free";r=59;t=1'},
}
COMMON_HEADERS: dict[str, S] = {
    "X-Request-ID": {"schema": STR, "description": "echoed when the client sent one"},
    "Access-Control-Allow-Origin": {"schema": STR},
}


def param(name: str, where: str, schema: S, description: str, required: bool = False) -> S:
    return {"name": name, "in": where, "required": required or where == "path", "schema": schema,
            "description": description}


ID = param("id", "path", STR, "instrument id, e.g. brent, methanol, usdcny")


def ok(schema: str, description: str = "OK", status: str = "200") -> dict[str, S]:
    return {status: {"description": description, "content": {"application/json": {"schema": ref(schema)}}}}


def problem(description: str) -> S:
    return {"description": description, "content": {"application/problem+json": {"schema": ref("Problem")}}}


def body(schema: str) -> S:
    return {"required": True, "content": {"application/json": {"schema": ref(schema)}}}


OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/quotes"): {
        "summary": "All quotes, in catalogue order", "tags": ["market data"],
        "parameters": [param("kind", "query", {"type": "string", "enum": ["oil", "chem", "fx"]}, "filter by kind"),
                       param("ids", "query", STR, "comma-separated instrument ids (max 100); unknown ids: 400")],
        "responses": {**ok("QuoteList"), "400": problem("unknown kind or unknown/too many ids")},
    },
    ("GET", "/api/v1/quotes/{id}"): {
        "summary": "One quote with today's open/high/low, previous close, volume and seq", "tags": ["market data"],
        "parameters": [ID], "responses": {**ok("QuoteExtended"), "404": problem("unknown instrument")},
    },
    ("GET", "/api/v1/kline/{id}"): {
        "summary": "Daily candles (90 trading days at most; the last is live)", "tags": ["market data"],
        "parameters": [ID, param("days", "query", {"type": "integer", "minimum": 1, "maximum": 90, "default": 90},
                                 "the most recent N trading days")],
        "responses": {**ok("CandleSeries"), "400": problem("days is not an integer 1..90"),
                      "404": problem("unknown instrument")},
    },
    ("GET", "/api/v1/spreads"): {
        "summary": "Domestic prices against CFR China import parity (methanol, PTA, PP, PE, PVC)",
        "tags": ["market data"], "responses": ok("SpreadList"),
    },
    ("GET", "/api/v1/inventory"): {
        "summary": "Port, social and factory inventories with week-on-week change", "tags": ["market data"],
        "responses": ok("InventoryList"),
    },
    ("GET", "/api/market"): {
        "summary": "The 8 market categories with their quotes (snapshot refreshed every --market-refresh-s)",
        "tags": ["public site"],
        "parameters": [param("If-None-Match", "header", STR, "ETag of a snapshot already held")],
        "responses": {"200": {**ok("MarketSnapshot")["200"], "headers": {"ETag": {"schema": STR},
                                                                         "Cache-Control": {"schema": STR}}},
                      "304": {"description": "the snapshot has not changed"}},
    },
    ("GET", "/api/market/{id}"): {
        "summary": "One market category", "tags": ["public site"],
        "parameters": [param("id", "path", STR, "category id, e.g. crude, methanol, fx")],
        "responses": {**ok("Category"), "304": {"description": "not changed"}, "404": problem("unknown category")},
    },
    ("GET", "/api/news"): {
        "summary": "Latest news first", "tags": ["public site"],
        "parameters": [param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, ""),
                       param("offset", "query", {"type": "integer", "minimum": 0, "default": 0}, "")],
        "responses": {"200": {"description": "a page of news", "content": {"application/json": {"schema": obj(
            ["items", "total", "limit", "offset"], items={"type": "array", "items": ref("NewsItem")}, total=INT,
            limit=INT, offset=INT)}}}, "400": problem("bad limit or offset")},
    },
    ("GET", "/api/research"): {
        "summary": "Latest research reports first", "tags": ["public site"],
        "parameters": [param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, ""),
                       param("offset", "query", {"type": "integer", "minimum": 0, "default": 0}, "")],
        "responses": {"200": {"description": "a page of research", "content": {"application/json": {"schema": obj(
            ["items", "total", "limit", "offset"], items={"type": "array", "items": ref("ResearchItem")},
            total=INT, limit=INT, offset=INT)}}}, "400": problem("bad limit or offset")},
    },
    ("POST", "/api/auth/register"): {
        "summary": "Create a site account", "tags": ["accounts"], "requestBody": body("Register"),
        "responses": {**ok("Registered", "created", "201"), "409": problem("the e-mail is already registered")},
    },
    ("POST", "/api/auth/login"): {
        "summary": "Get a Bearer JWT (10/min per client IP)", "tags": ["accounts"], "requestBody": body("Login"),
        "responses": {**ok("Token"), "401": problem("wrong e-mail or password (same answer for both)")},
    },
    ("POST", "/api/submit-inquiry"): {
        "summary": "Submit an inquiry (Bearer JWT; 30/min per user); notifies by e-mail and messaging",
        "tags": ["inquiries"], "security": [{"Bearer": []}], "requestBody": body("Inquiry"),
        "responses": {**ok("Created", "accepted and stored", "201"),
                      "401": problem("missing, invalid or expired token"), "403": problem("account disabled")},
    },
    ("POST", "/api/cooperation"): {
        "summary": "Submit a cooperation intent (no auth); notifies", "tags": ["inquiries"],
        "requestBody": body("Cooperation"), "responses": ok("Created", "accepted and stored", "201"),
    },
    ("GET", "/api/receipt/{receiptNo}"): {
        "summary": "Public information on a digital warehouse receipt (holder masked)", "tags": ["receipts"],
        "parameters": [param("receiptNo", "path", {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9-]{2,63}$"},
                             "receipt number")],
        "responses": {**ok("Receipt"), "400": problem("malformed receipt number"), "404": problem("unknown receipt")},
    },
    ("GET", "/api/verify-anchor"): {
        "summary": "Verify on-chain evidence by SHA-256: status and RFC 9162 inclusion proof", "tags": ["receipts"],
        "parameters": [param("hash", "query", {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}, "SHA-256 (hex)",
                             required=True)],
        "responses": {**ok("Verification"), "400": problem("not 64 hex characters"), "404": problem("unknown hash")},
    },
    ("GET", "/api/config"): {
        "summary": "What the web dashboard needs to know: the WebSocket port and path", "tags": ["dashboard"],
        "responses": {"200": {"description": "client configuration", "content": {"application/json": {"schema": obj(
            ["wsPort", "wsPath", "demo"], wsPort={**INT, "description": "port of ws://HOST:PORT/ws/quotes"},
            wsPath={"const": "/ws/quotes"}, demo=BOOL)}}}},
    },
    ("GET", "/"): {
        "summary": "The web dashboard (HTML, not JSON)", "tags": ["dashboard"],
        "parameters": [param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": STR}}},
                      "304": {"description": "not changed"}},
    },
    ("GET", "/static/{file}"): {
        "summary": "The dashboard's scripts and styles (ETag; revalidated on each load)", "tags": ["dashboard"],
        "parameters": [param("file", "path", STR, "e.g. app.js, app.css"),
                       param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the file (text/javascript, text/css, ...)"},
                      "304": {"description": "not changed"}, "404": problem("no such file")},
    },
    ("GET", "/static/vendor/{file}"): {
        "summary": "Vendored browser libraries (lightweight-charts, Swagger UI), cached as immutable",
        "tags": ["dashboard"],
        "parameters": [param("file", "path", STR, "e.g. lightweight-charts.standalone.production.js"),
                       param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the file"}, "304": {"description": "not changed"},
                      "404": problem("no such file")},
    },
    ("GET", "/docs"): {
        "summary": "This document in Swagger UI 5 (HTML, not JSON)", "tags": ["operations"],
        "parameters": [param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": STR}}},
                      "304": {"description": "not changed"}},
    },
    ("GET", "/healthz"): {"summary": "Liveness", "tags": ["operations"],
                          "responses": {"200": {"description": "alive"}}},
    ("GET", "/readyz"): {"summary": "Readiness (feed and storage)", "tags": ["operations"],
                         "responses": {"200": {"description": "ready"}, "503": problem("not ready")}},
    ("GET", "/metrics"): {"summary": "Prometheus metrics", "tags": ["operations"],
                          "responses": {"200": {"description": "text exposition format",
                                                "content": {"text/plain": {"schema": STR}}}}},
    ("GET", "/openapi.json"): {"summary": "This document", "tags": ["operations"],
                               "responses": {"200": {"description": "OpenAPI 3.1"}}},
    ("GET", "/asyncapi.json"): {"summary": "AsyncAPI document of the WebSocket /ws/quotes", "tags": ["operations"],
                                "responses": {"200": {"description": "AsyncAPI 3"}}},
}


def _operation(method: str, pattern: str, access: Access, name: str) -> S:
    op: S = dict(OPERATIONS.get((method, pattern), {"summary": name, "responses": {"200": {"description": "OK"}}}))
    op["operationId"] = f"{method.lower()}_{name}".replace("-", "_")
    declared = {p["name"] for p in op.get("parameters", [])}
    for segment in pattern.split("/"):
        if segment.startswith("{") and segment[1:-1] not in declared:
            op["parameters"] = [*op.get("parameters", []), param(segment[1:-1], "path", STR, "")]
    responses: S = {code: dict(resp) for code, resp in op["responses"].items()}
    limited = access is not Access.OPEN
    for code, resp in responses.items():
        if code.startswith("2"):
            resp["headers"] = {**COMMON_HEADERS, **(RATE_HEADERS if limited else {}), **resp.get("headers", {})}
    if access is Access.KEYED:
        op["security"] = [{"ServiceKey": []}]
        responses.setdefault("401", problem("missing, unknown or revoked X-SERVICE-Key"))
    if limited:
        responses["429"] = {**problem("rate limit exceeded"),
                            "headers": {"Retry-After": {"schema": INT, "description": "seconds, at least 1"},
                                        **RATE_HEADERS}}
    if method == "POST":
        responses.setdefault("400", problem("body is not a JSON object, or fields are invalid (errors[])"))
        responses["413"] = problem("body over 64 KiB")
        responses["415"] = problem("content type is not application/json")
    responses["405"] = problem("method not allowed (Allow lists the methods)")
    responses["500"] = problem("internal error (no details leaked; quote X-Request-ID)")
    op["responses"] = responses
    return op


def build_openapi(router: Router, settings: Settings) -> S:
    paths: S = {}
    for route in router.routes():
        if route.method == "HEAD":
            continue
        paths.setdefault(route.pattern, {})[route.method.lower()] = _operation(
            route.method, route.pattern, route.access, route.name
        )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Commodity market service",
            "version": "1.0.0",
            "description": "Keyed market data (/api/v1, header X-SERVICE-Key) and the public site's API (/api). "
            "Errors are RFC 9457 problem documents. Every response carries CORS headers and X-Request-ID. "
            "Live ticks: WebSocket /ws/quotes on the WebSocket port, described in /asyncapi.json.",
        },
        "servers": [{"url": f"http://{settings.host}:{settings.port}"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "ServiceKey": {"type": "apiKey", "in": "header", "name": "X-SERVICE-Key"},
                "Bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
    }
