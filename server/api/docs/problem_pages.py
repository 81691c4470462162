"""`/problems/<code>`: the page each problem document's `type` points at (RFC 9457 section 3.1.1).

Every code in `ERROR_KINDS` has a page, built once at start: HTML for a browser, JSON when the
`Accept` header asks for `application/json` or `application/problem+json`. A code the server
cannot emit is a 404 problem. The `type` member is the relative reference `/problems/<code>`
(see `server/core/errors.py`): it resolves against the URL that answered, so it stays right behind
any host name, port or proxy, and nothing depends on a placeholder domain.
"""

from __future__ import annotations

import hashlib
import html

import orjson

from server.api.core.types import Request, Response
from server.core.errors import ERROR_KINDS, ApiError, problem_type

# what each code means for a client and what to do about it; a code added to ERROR_KINDS without
# an entry here still gets a page (its title and status)
DESCRIPTIONS: dict[str, str] = {
    "invalid_parameter": "A path or query parameter has a value the endpoint does not accept (see `detail`). "
                         "Fix the request; retrying it unchanged gives the same answer.",
    "unknown_parameter": "The query names a parameter the endpoint does not define (see `detail`): it is refused "
                         "rather than silently ignored. Remove it or check its spelling.",
    "invalid_body": "The request body is not a JSON object (or is not valid JSON). Send `application/json`.",
    "validation_failed": "The JSON body was read but some fields are invalid; `errors[]` lists each field and why.",
    "unauthorized": "The `X-SERVICE-Key` header (or the bearer token) is missing, unknown or revoked. "
                    "Keys are issued by the operator (`market-server keys create --plan professional`).",
    "forbidden": "The credentials are valid but their plan or account does not allow this request.",
    "plan_required": "The key's plan does not include this resource: `requiredPlan` names the plan that does; "
                     "ask for it in the service console (`consoleUrl`).",
    "not_found": "No such resource: an unknown instrument, category, receipt or path.",
    "method_not_allowed": "The path exists but not with this method; the `Allow` header lists the methods it has.",
    "bad_handshake": "The WebSocket upgrade request is malformed (missing or wrong Upgrade, Connection, "
                     "Sec-WebSocket-Key or Sec-WebSocket-Version headers).",
    "conflict": "The request conflicts with the current state, e.g. an e-mail address that is already registered.",
    "request_timeout": "The request (its headers or body) did not arrive in time; send it again.",
    "payload_too_large": "The request body is over the limit (64 KiB for JSON bodies, larger for uploads).",
    "range_not_satisfiable": "The `Range` header asks for bytes past the end of the file; `Content-Range: bytes "
                             "*/SIZE` gives the file's size. Ask again from a byte below it (or without Range).",
    "uri_too_long": "The request line is too long; send fewer ids per request.",
    "unsupported_media_type": "The body's `Content-Type` is not one the endpoint accepts (usually `application/json`).",
    "idempotency_key_reused": "The request's `Idempotency-Key` was sent in the last 24 hours with another body. A "
                              "key names one batch: send a lost batch again with its key and the same body, and a "
                              "new batch with a new key.",
    "upgrade_required": "This endpoint speaks WebSocket only: connect with an upgrade request.",
    "rate_limited": "The key's (or the address's) request budget is spent. Wait `Retry-After` seconds; "
                    "`RateLimit-Policy` and `X-RateLimit-*` headers show the plan's limit and what is left.",
    "too_many_connections": "The key already holds as many WebSocket connections as its plan allows; "
                            "close one or wait `Retry-After` seconds.",
    "too_many_uploads": "Too many uploads are in progress at once; wait `Retry-After` seconds and try again.",
    "internal_error": "The server failed unexpectedly; no details are leaked. Quote the `X-Request-ID` header "
                      "when reporting it.",
    "not_ready": "The service is starting or a dependency (database, Redis) is not reachable yet; retry shortly.",
    "shutting_down": "The service is stopping; retry against another instance or in a moment.",
    "storage_unavailable": "The database (PostgreSQL) cannot be reached right now. Nothing of this request was "
                           "stored; retry after `Retry-After` seconds. Market data and known keys keep working.",
}

JSON_TYPES = ("application/json", "application/problem+json")
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'"


def wants_json(accept: str | None) -> bool:
    """JSON when Accept names a JSON type before (or without) text/html; browsers send text/html first."""
    if not accept:
        return False
    ranges = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    for media in ranges:
        if media in JSON_TYPES or media.endswith("+json"):
            return True
        if media in ("text/html", "application/xhtml+xml"):
            return False
    return False


def describe(code: str) -> dict[str, object]:
    status, title = ERROR_KINDS[code]
    return {"type": problem_type(code), "code": code, "status": status, "title": title,
            "description": DESCRIPTIONS.get(code, title + ".")}


def _html(doc: dict[str, object]) -> bytes:
    e = {k: html.escape(str(v)) for k, v in doc.items()}
    others = "".join(
        f'<li><a href="{html.escape(problem_type(c))}">{html.escape(c)}</a> ({s})</li>'
        for c, (s, _) in sorted(ERROR_KINDS.items())
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e['title']} ({e['status']}): {e['code']}</title>"
        "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:44em;margin:2em auto;padding:0 1em;"
        "color:#dbe4ee;background:#0b1118}a{color:#6cb6ff}code{font-family:ui-monospace,monospace}</style>"
        "</head><body>"
        f"<h1>{e['title']} <small>(HTTP {e['status']})</small></h1>"
        f"<p>Problem code <code>{e['code']}</code>, type <code>{e['type']}</code>.</p>"
        f"<p>{e['description']}</p>"
        "<p>Error responses are RFC 9457 problem documents (<code>application/problem+json</code>) with "
        "<code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code> and <code>code</code>. "
        'API reference: <a href="/docs">/docs</a>.</p>'
        f"<h2>All problem codes</h2><ul>{others}</ul></body></html>"
    ).encode()


class ProblemPages:
    """Both renderings of every page, built once."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[bytes, bytes]] = {}
        for code in ERROR_KINDS:
            doc = describe(code)
            self.pages[code] = (orjson.dumps(doc), _html(doc))

    def answer(self, req: Request) -> Response:
        code = req.path_params["code"]
        page = self.pages.get(code)
        if page is None:
            raise ApiError("not_found", f"No problem code {code[:100]!r}; see /problems/not_found for the list.")
        as_json = wants_json(req.headers.get("accept"))
        body = page[0] if as_json else page[1]
        etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
        headers = [("cache-control", "public, max-age=3600"), ("vary", "accept"), ("etag", etag),
                   ("x-content-type-options", "nosniff")]
        if as_json:
            return Response(200, body, "application/json", headers)
        return Response(200, body, "text/html; charset=utf-8", [*headers, ("content-security-policy", PAGE_CSP)])
