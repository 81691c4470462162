"""The example answers in /openapi.json (and so in /docs): this server's own, never made up.

Without examples Swagger UI invents them from the schemas, and the inventions mislead: `"type":
"path/index.html"` for a uri-reference, the first enum value (`"code": "bad_handshake"`) for a code,
UTC `Z` times where the service answers +08:00, and a daily date beside `interval: "1m"`. So:

- each sample request below (and, for each keyed GET without a 400 sample, the same path with a query
  parameter it does not define) is answered by its route's own handler when the document is built, on
  the market the hub holds then (no key check and no rate limit: those belong to the pipeline, and
  their answers are the shared ones below). A sample names itself (`GET /api/v1/kline/brent?days=3`),
  so a reader can send it and get the same shape.
- the errors every route shares (401, 405, 413, 415, 429, 500) are the problem documents the
  pipeline sends, with the details it writes.

tests/contract/test_docs_examples.py sends every sample to a real server and compares.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from server.api.core.pipeline import MAX_BODY
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import UDF_PREFIX, ApiError

S = dict[str, Any]

# GET targets whose answers become examples of their operation, under their status
SAMPLES: tuple[str, ...] = (
    "/api/v1/quotes?ids=brent,usdcny",
    "/api/v1/quotes?kind=metals",
    "/api/v1/quotes/brent",
    "/api/v1/quotes/nope",
    "/api/v1/kline/brent?days=3",
    "/api/v1/kline/brent?interval=1m&limit=3",
    "/api/v1/kline/brent?interval=2m",
    "/api/v1/kline/nope",
    "/api/v1/kline/brent?interval=1h&to=2100-01-01&limit=2",  # SPEC 14 range queries
    "/api/v1/kline/brent?from=2026-11-18&days=5",
    "/api/v1/udf/config",  # SPEC 14 UDF datafeed
    "/api/v1/udf/symbols?symbol=brent",
    "/api/v1/udf/symbols?symbol=nope",
    "/api/v1/udf/search?query=bren&limit=5",
    "/api/v1/udf/search?type=stock",
    "/api/v1/udf/history?symbol=brent&resolution=60&to=4102444800&countback=2",
    "/api/v1/udf/history?symbol=brent&resolution=2&to=1",
    "/api/v1/udf/timescale_marks?symbol=methanol&from=1790812800&to=1791417600&resolution=1D",
    "/api/v1/udf/timescale_marks?symbol=methanol&from=2&to=1",
    "/api/v1/instruments?product=urea",  # SPEC 19: a product's contracts, a symbol, a contract
    "/api/v1/instruments?symbol=MA605",
    "/api/v1/instruments?symbol=MA613",
    "/api/v1/instruments?product=nope",
    "/api/v1/instruments/pp-202605",
    "/api/v1/spreads",
    "/api/v1/status",  # SPEC 20
    "/api/v1/inventory",
    "/api/market/fx",
    "/api/market/nope",
)
# a path parameter's value in the shared examples' paths (the 405's detail names the path)
SAMPLE_PARAMS = {"id": "brent", "receiptNo": "WR-NB-000101", "code": "not_found", "file": "app.js"}
SAMPLE_PATHS = {"/api/market/{id}": "/api/market/fx"}


def problem(code: str, detail: str, **extra: Any) -> S:
    return ApiError(code, detail, extra=extra).problem()


def shared_problems(method: str, path: str) -> dict[str, tuple[str, S]]:
    """status -> (name, problem) of the answers the pipeline gives any route."""
    other = "DELETE" if method != "DELETE" else "PUT"
    return {
        "401": ("no X-SERVICE-Key header", problem("unauthorized", "Missing X-SERVICE-Key header.")),
        "405": (f"{other} {path}", problem("method_not_allowed", f"{other} is not allowed on {path}.")),
        "413": ("a body over 64 KiB", problem("payload_too_large", f"Request bodies are limited to {MAX_BODY} bytes.")),
        "415": ("Content-Type: text/plain", problem("unsupported_media_type", "Send the body as application/json.")),
        "429": ("the 61st request in a minute on a 60/min bucket", problem(
            "rate_limited", "Rate limit of 60 requests per minute exceeded; retry in 1 s.", retryAfter=1)),
        "500": ("a failure inside the server", problem(
            "internal_error", "An unexpected error occurred; quote the request id.")),
    }


def answer(router: Router, target: str) -> tuple[str, str, S] | None:
    """(pattern, status, body) of GET `target` as its handler answers it; None for an async handler or a path no
    route serves."""
    path, _, query = target.partition("?")
    found = router.match(path)
    route = found[0].methods.get("GET") if found else None
    if found is None or route is None or route.is_async:
        return None
    req = Request("GET", path, query, path_params=found[1])
    try:
        resp = route.handler(req)
    except ApiError as exc:
        return route.pattern, str(exc.status), exc.problem()
    if not isinstance(resp, Response):
        getattr(resp, "close", lambda: None)()  # an answer read from storage (a coroutine): not an example
        return None
    if resp.content_type != "application/json":
        return None  # e.g. UDF's `time` (plain text): Swagger UI shows its schema, there is nothing to invent
    try:
        return route.pattern, str(resp.status), orjson.loads(resp.body)
    except orjson.JSONDecodeError:  # a compressed or otherwise encoded body: no example rather than a wrong one
        return None


def add_examples(paths: S, router: Router) -> None:
    """Put the examples into `paths` (the document's, built from `router`)."""
    for target in (*SAMPLES, *_unknown_parameter_samples(router)):
        got = answer(router, target)
        if got is not None:
            pattern, status, body = got
            _put(paths.get(pattern, {}).get("get"), status, f"GET {target}", body)
    for route in router.routes():
        op = paths.get(route.pattern, {}).get(route.method.lower())
        path = _sample_path(route.pattern)
        for status, (name, body) in shared_problems(route.method, path).items():
            if status == "401" and route.access is not Access.KEYED:
                continue
            if route.pattern.startswith(UDF_PREFIX):  # the pipeline adds UDF's fields there (SPEC 14)
                body = {**body, "s": "error", "errmsg": body["detail"]}
            _put(op, status, name, body)


def _unknown_parameter_samples(router: Router) -> list[str]:
    """For each keyed GET route without a 400 sample: the answer to a query parameter it does not define."""
    with_400 = {target.partition("?")[0] for target in SAMPLES if "?" in target}
    out = []
    for route in router.routes():
        if route.method == "GET" and route.access is Access.KEYED:
            path = _sample_path(route.pattern)
            if path not in with_400:
                out.append(path + "?date=today")
    return out


def _sample_path(pattern: str) -> str:
    return SAMPLE_PATHS.get(pattern) or re.sub(r"\{(\w+)\}", lambda m: SAMPLE_PARAMS.get(m.group(1), m.group(1)),
                                                pattern)


def _put(op: S | None, status: str, name: str, value: S) -> None:
    """Add a named example to one response of `op` that has a JSON body (copies on the way down: the
    operations' response objects are shared with OPERATIONS, which must not change)."""
    responses = (op or {}).get("responses", {})
    content = responses.get(status, {}).get("content", {})
    for media in ("application/json", "application/problem+json"):
        if media in content and "schema" in content[media]:
            examples = {**content[media].get("examples", {}), name: {"summary": name, "value": value}}
            responses[status] = {**responses[status], "content": {**content, media: {**content[media],
                                                                                     "examples": examples}}}
            return
