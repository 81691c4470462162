"""The OpenAPI 3.1 document: operations described here, merged with the live route table.

Bodies are described by the shared schemas of server/api/docs/schemas.py (the AsyncAPI
document uses the same ones); parameters state the rules the handlers enforce, from
the handlers' own constants.

Every route the router knows appears; each gets the errors that its access
class implies (401/429 for keyed, 429 for public, 405 and 413 everywhere), the
rate-limit response headers, and X-Request-ID. A route missing from OPERATIONS
still appears (with a generic description), so the document never hides one.
"""

from __future__ import annotations

from server.api.core.query import INSTANT_PATTERN, LAST_S
from server.api.core.router import Access, Router
from server.api.docs.console_docs import CONSOLE_OPERATIONS, CONSOLE_SCHEMAS
from server.api.docs.contract_docs import CONTRACT_OPERATIONS, CONTRACT_SCHEMAS
from server.api.docs.examples import add_examples
from server.api.docs.flatfile_docs import FLATFILE_OPERATIONS, FLATFILE_SCHEMAS
from server.api.docs.incident_docs import INCIDENT_OPERATIONS, INCIDENT_SCHEMAS
from server.api.docs.ingest_docs import INGEST_OPERATIONS, INGEST_SCHEMAS
from server.api.docs.schema_parts import DAY_PARAM, INT, STR, TEXT_PARAM, S, anchored, ref
from server.api.docs.schemas import REQUESTS, RESPONSES, closure
from server.api.docs.status_docs import STATUS_OPERATIONS, STATUS_SCHEMAS
from server.api.docs.tags_docs import TAGS
from server.api.docs.ticket_docs import TICKET_OPERATIONS, TICKET_SCHEMAS
from server.api.market.keyed import DEFAULT_LIMIT as KLINE_DEFAULT_LIMIT
from server.api.market.keyed import KLINE_INTERVALS, MAX_DAYS, MAX_IDS
from server.api.market.keyed import MAX_LIMIT as KLINE_MAX_LIMIT
from server.api.site.content import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET
from server.config import HttpSettings
from server.core.errors import ERROR_KINDS
from server.market.catalogue import KINDS, default_catalogue
from server.market.contracts.specs import PRODUCTS
from server.market.venues.data import VENUES
from server.store.site.receipts import RECEIPT_NO_PATTERN

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


ID = param("id", "path", STR, "instrument id, e.g. brent, methanol, usdcny; a futures contract (methanol-202701) or a "
           "continuous id (methanol.c.0: the nearest expiry, methanol.n.0: the largest open interest at the previous "
           "close; SPEC 19)")
INSTRUMENT_IDS = [inst.id for inst in default_catalogue().instruments]  # the catalogue the hub serves
FUTURES_IDS = [pid for pid in INSTRUMENT_IDS if pid in PRODUCTS]
# an instrument id, or a futures contract's (`methanol-202605`, SPEC 19)
ID_ALTERNATIVES = "|".join(INSTRUMENT_IDS) + "|(" + "|".join(FUTURES_IDS) + ")-[0-9]{4}(0[1-9]|1[0-2])"
IDS = {**param("ids", "query", {"type": "array", "items": {"type": "string", "pattern": f"^({ID_ALTERNATIVES})$"},
                                "minItems": 1, "maxItems": MAX_IDS},
               f"comma-separated instrument or contract ids (at most {MAX_IDS}); an unknown id is a 400 naming it"),
       "style": "form", "explode": False}
PAGING = [param("limit", "query", {**INT, "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                "items per page"),
          param("offset", "query", {**INT, "minimum": 0, "maximum": MAX_OFFSET, "default": 0}, "items to skip")]


def ok(schema: str, description: str = "OK", status: str = "200") -> dict[str, S]:
    return {status: {"description": description, "content": {"application/json": {"schema": ref(schema)}}}}


def problem(description: str) -> S:
    return {"description": description, "content": {"application/problem+json": {"schema": ref("Problem")}}}


def body(schema: str) -> S:
    return {"required": True, "content": {"application/json": {"schema": ref(schema)}}}


INSTANT: S = {"type": "string", "examples": ["2026-11-18T10:30:00+08:00", "2026-11-18", "1763433000000"],
              "pattern": INSTANT_PATTERN}
SYMBOL: S = {"type": "string", "examples": ["brent"],
             "pattern": "^\\s*([^:]*:)?(" + ID_ALTERNATIVES + ")\\s*$"}
UDF_TAGS = ["TradingView UDF"]
UDF_ERROR = ("a problem document with UDF's fields added: {type, title, status, detail, code, errors?, s: \"error\", "
             "errmsg}")


def udf_problem(description: str) -> S:
    return {"description": f"{description}: {UDF_ERROR}",
            "content": {"application/problem+json": {"schema": ref("UdfError")}}}


SECONDS: S = {"type": "integer", "minimum": 0, "maximum": LAST_S - 1,  # query.py parse_epoch_seconds
              "description": "epoch seconds", "examples": [1763433000]}
UDF_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/udf/config"): {
        "summary": "UDF datafeed configuration: resolutions 1, 5, 15, 60, 1D; search and time supported",
        "tags": UDF_TAGS, "responses": {**ok("UdfConfig"), "400": udf_problem("a query parameter (none is defined)")},
    },
    ("GET", "/api/v1/udf/symbols"): {
        "summary": "UDF symbol info of one instrument", "tags": UDF_TAGS,
        "parameters": [param("symbol", "query", SYMBOL, "instrument id (an EXCHANGE: prefix is ignored)", True)],
        "responses": {**ok("UdfSymbol"), "400": udf_problem("symbol missing or unknown")},
    },
    ("GET", "/api/v1/udf/search"): {
        "summary": "UDF symbol search (id, English or Chinese name contain the query)", "tags": UDF_TAGS,
        "parameters": [param("query", "query", TEXT_PARAM, "text to look for (empty: every instrument)"),
                       param("type", "query", {"type": "string", "enum": ["", "commodity", "forex"]}, "symbol type"),
                       param("exchange", "query", TEXT_PARAM, "source name (empty: any)"),
                       param("limit", "query", {**INT, "minimum": 1, "maximum": 100}, "at most this many (default 30)"),
                       ],
        "responses": {"200": {"description": "matches in catalogue order",
                              "content": {"application/json": {"schema": {"type": "array",
                                                                          "items": ref("UdfSearchResult")}}}},
                      "400": udf_problem("bad type or limit")},
    },
    ("GET", "/api/v1/udf/history"): {
        "summary": "UDF bars: from <= t <= to (both counted in), or the latest countback bars with t <= to; the same "
                   "candles as /api/v1/kline", "tags": UDF_TAGS,
        "parameters": [param("symbol", "query", SYMBOL, "instrument id", True),
                       param("resolution", "query", {"type": "string", "enum": ["1", "5", "15", "60", "1D"]},
                             "1, 5, 15, 60 minutes or 1D (D is accepted too)", True),
                       param("from", "query", SECONDS, "epoch seconds (default: the earliest bar held)"),
                       param("to", "query", SECONDS, "epoch seconds, counted in", True),
                       param("countback", "query", {**INT, "minimum": 1, "maximum": 5000},
                             "the latest N bars with t <= to; wins over from"),
                       param("adjust", "query", {"type": "string", "enum": ["diff", "ratio"]},
                             "a futures product's bars back-adjusted at its rolls, as /api/v1/kline's adjust (the "
                             "stored history's bars too); any other symbol: as traded")],
        "responses": {**ok("UdfHistory", "s ok (bars: t is the bucket start in epoch seconds, a daily bar's its "
                                         "date at 00:00 UTC; a trading day has bars from its first tick), or no_data "
                                         "(with nextTime when older bars exist)"),
                      "400": udf_problem("a parameter missing or invalid (adjust not diff or ratio), unknown symbol, "
                                         "from > to")},
    },
    ("GET", "/api/v1/udf/timescale_marks"): {
        "summary": "UDF time-scale marks: the venue's holiday closures (H) and a product's main-contract rolls (R) "
                   "with from <= time <= to (time: the date at 00:00 UTC)", "tags": UDF_TAGS,
        "parameters": [param("symbol", "query", SYMBOL, "instrument id", True),
                       param("from", "query", SECONDS, "epoch seconds, counted in", True),
                       param("to", "query", SECONDS, "epoch seconds, counted in", True),
                       param("resolution", "query", {"type": "string", "enum": ["1", "5", "15", "60", "1D", "D"]},
                             "the chart's resolution (the marks do not depend on it)")],
        "responses": {"200": {"description": "marks in date order", "content": {"application/json": {
                          "schema": {"type": "array", "items": ref("UdfTimescaleMark")}}}},
                      "400": udf_problem("a parameter missing or invalid, unknown symbol, from > to")},
    },
    ("GET", "/api/v1/udf/time"): {
        "summary": "The server's time in epoch seconds, as plain text", "tags": UDF_TAGS,
        "responses": {"200": {"description": "epoch seconds", "content": {"text/plain": {
                          "schema": STR, "examples": {"now": {"summary": "epoch seconds", "value": "1763433000"}}}}},
                      "400": udf_problem("a query parameter (none is defined)")},
    },
}

OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/quotes"): {
        "summary": "All quotes, in catalogue order (the products, not their contracts); with product, a futures "
                   "product's contracts by expiry (SPEC 19)", "tags": ["market data"],
        "parameters": [param("kind", "query", {"type": "string", "enum": list(KINDS)}, "filter by kind"), IDS,
                       param("product", "query", {"type": "string", "pattern": "^(" + "|".join(FUTURES_IDS) + ")$",
                                                  "examples": ["methanol"]},
                             "a futures product: its contracts' quotes in expiry order, every contract shown since "
                             "the server started (with kind or ids: those of them of that kind, or named)")],
        "responses": {**ok("QuoteList"), "400": problem("unknown kind, unknown/too many ids, or a product that is "
                                                        "not a futures product")},
    },
    ("GET", "/api/v1/quotes/{id}"): {
        "summary": "One quote with today's open/high/low, previous close, volume and seq, and whether its venue is "
                   "open now (marketStatus, nextOpen, nextClose)", "tags": ["market data"],
        "parameters": [ID], "responses": {**ok("QuoteExtended"), "404": problem("unknown instrument")},
    },
    ("GET", "/api/v1/kline/{id}"): {
        "summary": "Candles: daily (90 trading days at most; the last is the live trading day's once it has "
                   "traded, else the previous trading day's) or intraday buckets "
                   "(1m, 5m, 15m, 1h; 1,000 at most; only buckets that had a tick)", "tags": ["market data"],
        "parameters": [
            ID,
            param("interval", "query", {"type": "string", "enum": list(KLINE_INTERVALS), "default": "1d"},
                  "candle length; 1d: one candle per trading day (t YYYY-MM-DD); intraday: t is the bucket start "
                  "(ISO 8601, +08:00)"),
            # no "default" keyword on days and limit: each applies to some intervals only, and generated clients
            # (openapi-python-client) send every default, so a default here made each of their calls a 400
            param("days", "query", {**INT, "minimum": 1, "maximum": MAX_DAYS},
                  f"the candles of the most recent N trading days (the live trading day counts once it has "
                  f"traded; default "
                  f"{MAX_DAYS} for 1d, all held for the intraday intervals); with limit too, both apply. Not in a "
                  "range query (with from/to: 400)"),
            param("limit", "query", {**INT, "minimum": 1, "maximum": KLINE_MAX_LIMIT},
                  f"the most recent N candles (intraday: buckets that had a tick; default {KLINE_DEFAULT_LIMIT} "
                  f"intraday, {MAX_DAYS} daily, of which at most {MAX_DAYS} are held). In a range query: with from "
                  "the earliest N candles of the range (then next), without from the latest N before to"),
            param("from", "query", INSTANT,
                  "range query (every interval): candles whose bucket start is >= from. An ISO 8601 timestamp with "
                  "offset (2026-11-18T10:30:00+08:00 or ...Z; an unencoded + read as a space is understood), a date "
                  "YYYY-MM-DD (00:00 Asia/Shanghai) or integer epoch milliseconds. Default: the earliest held. With "
                  "from the answer holds the earliest limit candles and next"),
            param("to", "query", INSTANT,
                  "range query: candles whose bucket start is < to (half-open), same formats as from. Default: after "
                  "the live candle. A daily candle's bucket start is its day at 00:00 Asia/Shanghai"),
            param("adjust", "query", {"type": "string", "enum": ["diff", "ratio"]},
                  "a futures product's continuous series (SPEC 19) back-adjusted at its rolls: every bar before a roll "
                  "shifted by (diff) or scaled by (ratio) the gap between the new and the old main's closes on the "
                  "day before it (GET /api/v1/instruments/{id}/rolls); the newest bars stay the traded prices. Any "
                  "other instrument: as traded. Range queries reaching the stored history adjust its bars alike. "
                  "Answers carry adjust"),
        ],
        "responses": {**ok("CandleSeries"),
                      "400": problem("interval not one of 1m, 5m, 15m, 1h, 1d; days not an integer 1..90; limit not "
                                     "an integer 1..1000; days with from/to, from or to unparseable or without offset, "
                                     "from >= to, adjust not diff or ratio (invalid_parameter, errors[].field "
                                     "names it); a query parameter "
                                     "not listed here (unknown_parameter)"),
                      "404": problem("unknown instrument")},
    },
    **UDF_OPERATIONS,
    ("GET", "/api/v1/venues"): {
        "summary": "Every venue: its status now, trading day, next open and close, calendar horizon, instruments",
        "tags": ["reference data"], "responses": ok("VenueList"),
    },
    ("GET", "/api/v1/venues/{id}/calendar"): {
        "summary": "A venue's trading days with their session windows, and the weekdays it is shut",
        "tags": ["reference data"],
        "parameters": [param("id", "path", {"type": "string", "enum": list(VENUES), "examples": ["zce"]},
                             "venue id (GET /api/v1/venues)"),
                       param("from", "query", {**DAY_PARAM, "examples": ["2026-09-28"]},
                             "first date (YYYY-MM-DD), included", required=True),
                       param("to", "query", {**DAY_PARAM, "examples": ["2026-10-09"]},
                             "last date (YYYY-MM-DD), included; at most 366 days after from", required=True)],
        "responses": {**ok("VenueCalendar"),
                      "400": problem("from or to missing or not a date, to before from, more than 366 days "
                                     "(invalid_parameter, errors[].field names it)"),
                      "404": problem("unknown venue")},
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
        "responses": {"200": {**ok("CategorySnapshot")["200"], "headers": {"ETag": {"schema": STR},
                                                                           "Cache-Control": {"schema": STR}}},
                      "304": {"description": "not changed"}, "404": problem("unknown category")},
    },
    ("GET", "/api/news"): {
        "summary": "Latest news first", "tags": ["public site"],
        "parameters": PAGING, "responses": {**ok("NewsPage", "a page of news"), "400": problem("bad limit or offset")},
    },
    ("GET", "/api/research"): {
        "summary": "Latest research reports first", "tags": ["public site"],
        "parameters": PAGING,
        "responses": {**ok("ResearchPage", "a page of research"), "400": problem("bad limit or offset")},
    },
    ("POST", "/api/auth/register"): {
        "summary": "Create a site account", "tags": ["accounts"], "requestBody": body("Register"),
        "responses": {**ok("Registered", "created", "201"), "409": problem("the e-mail is already registered")},
    },
    ("POST", "/api/auth/login"): {
        "summary": "Get a Bearer JWT (10/min per client IP)", "tags": ["accounts"], "requestBody": body("Login"),
        "responses": {"200": {**ok("Token")["200"], "headers": {"Cache-Control": {
                          "schema": {"const": "no-store"}, "description": "a token is kept by no cache"}}},
                      "401": problem("wrong e-mail or password (same answer for both)")},
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
        "parameters": [param("receiptNo", "path", {"type": "string", "pattern": anchored(RECEIPT_NO_PATTERN),
                                                   "examples": ["WR-NB-000101"]}, "receipt number")],
        "responses": {**ok("Receipt"), "400": problem("malformed receipt number"), "404": problem("unknown receipt")},
    },
    ("GET", "/api/verify-anchor"): {
        "summary": "Verify on-chain evidence by SHA-256: status and RFC 9162 inclusion proof", "tags": ["receipts"],
        "parameters": [param("hash", "query", {"type": "string", "pattern": "^[0-9a-fA-F]{64}$", "examples": [
                                 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]},
                             "SHA-256 (hex, either case)", required=True)],
        "responses": {**ok("Verification"), "400": problem("not 64 hex characters"), "404": problem("unknown hash")},
    },
    ("GET", "/api/config"): {
        "summary": "What the web dashboard needs to know: the WebSocket port and path", "tags": ["dashboard"],
        "responses": ok("ClientConfig", "client configuration"),
    },
    ("GET", "/"): {
        "summary": "The web dashboard (HTML, not JSON)", "tags": ["dashboard"],
        "parameters": [param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": STR}}},
                      "304": {"description": "not changed"}},
    },
    ("GET", "/console"): {
        "summary": "The service console (HTML, not JSON): keys, usage, plan requests", "tags": ["dashboard"],
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
    ("GET", "/favicon.ico"): {
        "summary": "The site icon (the SVG icon, served as image/svg+xml)", "tags": ["dashboard"],
        "parameters": [param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the icon (image/svg+xml)"},
                      "304": {"description": "not changed"}},
    },
    ("GET", "/problems/{code}"): {
        "summary": "What a problem `type` points at: the page for one problem code", "tags": ["operations"],
        "parameters": [param("code", "path", {"type": "string", "enum": sorted(ERROR_KINDS)}, "a problem `code`")],
        "responses": {"200": {"description": "HTML for browsers; JSON when Accept asks for application/json or "
                                             "application/problem+json",
                              "content": {"text/html": {"schema": STR},
                                          "application/json": {"schema": ref("ProblemPage")}}},
                      "404": problem("no such problem code")},
    },
    ("GET", "/docs"): {
        "summary": "This document in Swagger UI 5 (HTML, not JSON)", "tags": ["operations"],
        "parameters": [param("If-None-Match", "header", STR, "ETag of a copy already held")],
        "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": STR}}},
                      "304": {"description": "not changed"}},
    },
    ("GET", "/healthz"): {"summary": "Liveness", "tags": ["operations"], "responses": ok("Health", "alive")},
    ("GET", "/readyz"): {"summary": "Readiness (feed and storage)", "tags": ["operations"],
                         "responses": {**ok("Ready", "ready"), "503": problem("not ready")}},
    ("GET", "/metrics"): {"summary": "Prometheus metrics", "tags": ["operations"],
                          "responses": {"200": {"description": "text exposition format",
                                                "content": {"text/plain": {"schema": STR}}}}},
    ("GET", "/openapi.json"): {"summary": "This document", "tags": ["operations"],
                               "responses": {"200": {"description": "OpenAPI 3.1"}}},
    ("GET", "/asyncapi.json"): {"summary": "AsyncAPI document of the WebSocket /ws/quotes", "tags": ["operations"],
                                "responses": {"200": {"description": "AsyncAPI 3"}}},
}
OPERATIONS.update(CONSOLE_OPERATIONS)  # issue 32: the service console (server/api/docs/console_docs.py)
OPERATIONS.update(FLATFILE_OPERATIONS)  # SPEC 18's flat files (server/api/docs/flatfile_docs.py)
OPERATIONS.update(CONTRACT_OPERATIONS)  # SPEC 16's instruments with SPEC 19's contracts (contract_docs.py)
OPERATIONS.update(STATUS_OPERATIONS)  # SPEC 20's status and data quality (status_docs.py)
OPERATIONS.update(TICKET_OPERATIONS)  # SPEC 20's support tickets (ticket_docs.py)
OPERATIONS.update(INCIDENT_OPERATIONS)  # SPEC 20's incidents and maintenance (incident_docs.py)
OPERATIONS.update(INGEST_OPERATIONS)  # SPEC 20's dedicated data sources (ingest_docs.py)


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
    if pattern.startswith("/api/v1/"):
        unknown = "a query parameter the endpoint does not define (unknown_parameter, naming it)"
        if "400" in responses:
            if "unknown_parameter" not in responses["400"]["description"]:
                responses["400"] = {**responses["400"], "description": responses["400"]["description"] + "; " + unknown}
        else:
            responses["400"] = problem(unknown)
    udf = pattern.startswith("/api/v1/udf/")
    if access is Access.KEYED:
        op["security"] = [{"ServiceKey": []}]
        responses.setdefault("401", (udf_problem if udf else problem)("missing, unknown or revoked X-SERVICE-Key"))
    problem_ = udf_problem if udf else problem  # the UDF datafeed's every error carries s/errmsg too
    if limited:
        responses["429"] = {**problem_("rate limit exceeded"),
                            "headers": {"Retry-After": {"schema": INT, "description": "seconds, at least 1"},
                                        **RATE_HEADERS}}
    if method in ("POST", "PATCH"):  # PATCH: issue 32's console
        responses.setdefault("400", problem("body is not a JSON object, or fields are invalid (errors[])"))
        responses.setdefault("413", problem("body over 64 KiB"))  # the ingest route's: 1 MiB
        responses.setdefault("415", problem("content type is not application/json"))
    responses["405"] = problem_("method not allowed (Allow lists the methods)")
    responses["500"] = problem_("internal error (no details leaked; quote X-Request-ID)")
    op["responses"] = responses
    return op


def build_openapi(router: Router, settings: HttpSettings) -> S:
    paths: S = {}
    for route in router.routes():
        if route.method == "HEAD":
            continue
        paths.setdefault(route.pattern, {})[route.method.lower()] = _operation(
            route.method, route.pattern, route.access, route.name
        )
    add_examples(paths, router)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Commodity market service",
            "version": "1.0.0",
            "description": "Keyed market data (/api/v1, header X-SERVICE-Key) and the public site's API (/api). "
            "Errors are RFC 9457 problem documents. Every response carries CORS headers and X-Request-ID. "
            "Live ticks: WebSocket /ws/quotes on the WebSocket port, described in /asyncapi.json.",
        },
        # relative first: /docs' "Try it out" then calls the origin the page came from (its CSP allows no other),
        # whatever name the client used (localhost, a proxy's host); the bind address is only a hint
        "servers": [{"url": "/", "description": "the origin that served this document"},
                    {"url": f"http://{settings.host}:{settings.port}", "description": "--host and --port"}],
        "tags": TAGS,
        "paths": dict(sorted(paths.items(), key=lambda item: (not item[0].startswith("/api/v1/"), item[0]))),
        "components": {
            "schemas": {**closure(*RESPONSES, *REQUESTS), **CONSOLE_SCHEMAS, **FLATFILE_SCHEMAS,
                        **CONTRACT_SCHEMAS, **STATUS_SCHEMAS, **TICKET_SCHEMAS, **INCIDENT_SCHEMAS,
                        **INGEST_SCHEMAS},
            "securitySchemes": {
                "ServiceKey": {"type": "apiKey", "in": "header", "name": "X-SERVICE-Key"},
                "Bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
    }
