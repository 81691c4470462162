"""The OpenAPI description of dedicated data sources (SPEC 20, docs/ingest.md): the console's declared instruments
(`/api/console/instruments`) and the ingest route (`POST /api/v1/ingest`), merged into server/api/docs/openapi.py's
document beside the console's. WS /ws/ingest is the `ingest` channel of /asyncapi.json (server/api/docs/asyncapi.py:
its frames are this route's bodies and answers)."""

from __future__ import annotations

from server.api.console.instruments import MAX_DECIMALS, NAME
from server.api.docs.console_docs import AUTH, NULLSTR, TS, _body, _ok, _op, _problem
from server.api.docs.schema_parts import INT, STR, S, obj, ref, text
from server.api.market.ingest import MAX_REJECTED, MEDIA_TYPES
from server.market.venues.data import SESSIONS, VENUES
from server.store.sources.repo import NAMESPACE

ID_PATTERN = f"^{NAMESPACE.pattern}\\.{NAME.pattern}$"
LOCALISED = {"zh": text(100), "en": text(100)}
UNIT = {"zh": text(40), "en": text(40)}
INSTRUMENT_PROPS: dict[str, S] = {
    "id": {"type": "string", "pattern": ID_PATTERN, "maxLength": 80, "examples": ["acme.crude-blend"],
           "description": "{namespace}.{name}: the namespace the operator granted the account"},
    "name": {**obj(["zh", "en"], **LOCALISED), "additionalProperties": False,
             "examples": [{"zh": "定制原油", "en": "Custom crude blend"}]},
    "unit": {**obj(["zh", "en"], **UNIT), "additionalProperties": False,
             "examples": [{"zh": "美元/桶", "en": "USD/bbl"}]},
    "currency": {"type": "string", "pattern": "^[A-Z]{3}$", "examples": ["USD"]},
    "decimals": {"type": "integer", "minimum": 0, "maximum": MAX_DECIMALS, "examples": [2]},
    "venue": {"type": "string", "enum": list(VENUES), "examples": ["ice-eu"],
              "description": "whose trading days and sessions it follows"},
    "session": {"type": ["string", "null"], "enum": [*SESSIONS, None],
                "description": "a session template of its own (absent or null: the venue's)"},
}
VIEW_PROPS: dict[str, S] = {**INSTRUMENT_PROPS, "session": NULLSTR, "createdAt": TS}

INGEST_SCHEMAS: dict[str, S] = {
    "InstrumentDeclaration": {**obj(["id", "name", "unit", "currency", "decimals", "venue"], **INSTRUMENT_PROPS),
                              "additionalProperties": False},
    "DeclaredInstrument": obj(list(VIEW_PROPS), **VIEW_PROPS),
    "DeclaredInstruments": obj(["namespace", "items", "limits", "used", "defaults", "venues"], namespace=NULLSTR,
                               items={"type": "array", "items": ref("DeclaredInstrument")},
                               limits=ref("SourceLimits"),  # in force: an operator's (users limits), else defaults
                               used=obj(["instruments"], instruments={**INT, "description": "declared, not deleted "
                                        "(may exceed a lowered limit: existing instruments are kept)"}),
                               defaults=ref("SourceLimits"),  # the enterprise plan's
                               venues={"type": "array", "items": {"type": "string", "enum": list(VENUES)},
                                       "description": "the venues a declaration may name (`venue`)"}),
    "SourceLimits": obj(["instruments", "ticksPerSecond"],  # an account's limits: an operator's, else the plan's
                        instruments={**INT, "description": "declared instruments the account may hold"},
                        ticksPerSecond={**INT, "minimum": 1, "description": "ticks a second it may publish "
                                        "(over it: 429 with Retry-After on POST /api/v1/ingest and /ws/ingest)"}),
    "IngestAnswer": obj(
        ["accepted", "rejected", "rejectedCount"], accepted={**INT, "description": "ticks kept and published"},
        rejected={"type": "array", "maxItems": MAX_REJECTED, "description": "the bad lines, by number (from 1)",
                  "items": obj(["line", "error"], line={**INT, "minimum": 1}, error=STR)},
        rejectedCount={**INT, "description": "every bad line, also past the ones named"}),
}

BASE = "/api/console/instruments"
LINES = ('JSON lines as the JSONL feed takes them: {"id", "price" (> 0, at most 1e12), "ts"? (epoch seconds, or '
         'ISO 8601 YYYY-MM-DD[Thh:mm[:ss[.f]]][Z|+hh:mm]; default now), "volume"? (0 to 1e9)}; at most 1 MiB; each '
         'instrument\'s lines in time order (a line that would count toward a bar already published, or a closed '
         'trading day, is rejected as a late tick)')


def _forbidden(op: S, description: str) -> S:
    op["responses"] = {**op["responses"], "403": _problem(description)}
    return op


INGEST_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", BASE): _forbidden(_op("The account's declared instruments, its namespace, its limits (instruments, ticks "
                                  "a second) and what it uses (SPEC 20)",
                                  _ok("DeclaredInstruments")),
                              "not an enterprise account nor an operator, or account disabled"),
    ("POST", BASE): _forbidden(_op(
        "Declare an instrument of the account's dedicated data source: its ingest keys publish it, its read keys see "
        "it (every other key: 404)",
        {**_ok("DeclaredInstrument", "201"),
         "409": _problem("the id was declared already (ids are not reused), the account holds its limit of "
                         "instruments (`limit`: 100 unless an operator set another), or every reserved row is taken")},
        requestBody=_body("InstrumentDeclaration")),
        "not an enterprise account nor an operator, no namespace, an id outside the namespace, or account disabled"),
    ("DELETE", BASE + "/{id}"): _forbidden(_op(
        "Delete a declared instrument: 404 for every key from now on; its id is not reused",
        {"204": {"description": "deleted"}, "404": _problem("this account has no such instrument"),
         "413": _problem("a body over 64 KiB")}),
        "not an enterprise account nor an operator, or account disabled"),
    ("POST", "/api/v1/ingest"): {
        "summary": "Publish ticks of the account's own instruments (an ingest key): the good lines are kept, each "
                   "bad one named by its number", "tags": ["market data"],
        "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                        "description": "a key of this batch (a UUID, say): a batch sent again with its key and the "
                                       "same body within 24 hours is answered as the first time (header "
                                       "`Idempotent-Replayed: true`) and kept once (docs/ingest.md)",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}}],
        "requestBody": {"required": True, "content": {media: {"schema": {"type": "string", "description": LINES}}
                                                      for media in MEDIA_TYPES}},
        "responses": {**_ok("IngestAnswer"),
                      "400": _problem("a query parameter (none is defined; bad lines are named in the answer), or an "
                                      "Idempotency-Key that is not 1-255 visible ASCII characters"),
                      "422": _problem("the Idempotency-Key was sent with another body in the last 24 hours "
                                      "(idempotency_key_reused): nothing kept"),
                      "403": _problem("not an ingest key (a read key publishes nothing), or the key's account is no "
                                      "longer on the enterprise plan (plan_required)"),
                      "413": _problem("a body over 1 MiB"),
                      "415": _problem("the content type is not application/x-ndjson"),
                      "503": {**_problem("the shared store (Redis) did not answer, nothing kept: retry"),
                              "headers": {"Retry-After": {"schema": INT}}}},
    },
}
_ = AUTH  # the console's 401/403 come with _op
