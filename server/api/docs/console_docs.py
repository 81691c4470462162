"""The OpenAPI description of the service console's routes (SPEC 17): operations and schemas, merged into
server/api/docs/openapi.py's document."""

from __future__ import annotations

from server.api.console.account import MAX_MESSAGE
from server.api.console.keys import MAX_LABEL
from server.api.docs.schema_parts import DAY_PARAM, INT, STR, TEXT_PARAM, S, obj, ref
from server.core.limits import MAX_RATE

NULLSTR: S = {"type": ["string", "null"]}
NULLTS: S = {"type": ["string", "null"], "description": "ISO 8601, +08:00; null if never"}
TS: S = {"type": "string", "description": "ISO 8601, +08:00"}
PLAN: S = {"type": "string", "enum": ["free", "professional", "enterprise"]}
LABEL: S = {"type": ["string", "null"], "maxLength": MAX_LABEL, "pattern": "^[^\x00]*$"}
DATE: S = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$", "examples": ["2026-01-05"]}
KEY_PROPS: dict[str, S] = {
    "id": STR, "label": NULLSTR, "plan": PLAN, "rate": {**INT, "description": "requests per minute"},
    "prefix": {**NULLSTR, "description": "the secret's first characters, to tell keys apart"},
    "createdAt": TS, "lastUsedAt": NULLTS, "revokedAt": NULLTS,
    "scope": {"type": "string", "enum": ["read", "ingest"],
              "description": "read, or ingest: publishes to the account's own instruments and reads nothing (SPEC 20)"},
}
SUB_PROPS: dict[str, S] = {
    "id": STR, "userId": STR, "email": NULLSTR, "plan": PLAN, "message": NULLSTR,
    "status": {"type": "string", "enum": ["pending", "approved", "rejected"]},
    "rate": {"type": ["integer", "null"]}, "createdAt": TS, "decidedAt": NULLTS,
}
PCT: S = {"type": "number", "minimum": 0, "maximum": 100}
NULLPCT: S = {"type": ["number", "null"], "minimum": 0, "maximum": 100,
             "description": "percent; null: no minute counts"}
NULLMS: S = {"type": ["number", "null"], "description": "milliseconds: the upper bound of the histogram bucket "
                                                       "holding the percentile; null without observations"}
USAGE_PROPS: dict[str, S] = {"requests": INT, "refused": INT, "clientErrors": INT, "wsConnections": INT,
                             "wsMessages": INT}

CONSOLE_SCHEMAS: dict[str, S] = {
    "ConsoleKey": obj(list(KEY_PROPS), **KEY_PROPS),
    "ConsoleKeyCreated": obj([*KEY_PROPS, "key"], **KEY_PROPS, key={**STR, "description": "the secret, shown once"},
                             replaces={**STR, "description": "on rotation: the key it replaced (now revoked)"}),
    "ConsoleKeys": obj(["items"], items={"type": "array", "items": ref("ConsoleKey")}),
    "Subscription": obj(list(SUB_PROPS), **SUB_PROPS),
    "Subscriptions": obj(["items"], items={"type": "array", "items": ref("Subscription")}),
    "ConsoleMe": obj(
        ["account", "plan", "role", "limits", "subscription"],
        account=obj(["id", "email", "name", "company", "createdAt"], id=STR, email=STR, name=NULLSTR,
                    company=NULLSTR, createdAt=TS),
        plan=PLAN, role={"type": "string", "enum": ["customer", "operator"]},
        limits=obj(["rate", "keys", "wsConnections"], rate=INT, keys=INT, wsConnections=INT),
        subscription={"oneOf": [ref("Subscription"), {"type": "null"}],
                      "description": "the latest subscription request, if any"}),
    "Usage": obj(["from", "to", "key", "items", "totals"], to=DATE, key=NULLSTR,
                 items={"type": "array", "items": obj(["date", "keyId", *USAGE_PROPS], date=DATE, keyId=STR,
                                                      **USAGE_PROPS)},
                 totals=obj(list(USAGE_PROPS), **USAGE_PROPS), **{"from": DATE}),
    "ConsoleEvents": obj(["items"], items={"type": "array", "items": obj(
        ["id", "at", "kind", "keyId", "detail", "ip"], id=STR, at=TS,
        kind={"type": "string", "enum": ["created", "rotated", "revoked", "relabelled", "plan_requested",
                                         "plan_changed", "plan_rejected", "limits_changed"]},
        keyId=NULLSTR, detail=NULLSTR, ip=NULLSTR)}),
    "KeyLabel": obj([], label=LABEL, scope={"type": ["string", "null"], "enum": ["read", "ingest", None],
                                            "description": "read (absent or null), or ingest: the enterprise plan's "
                                                           "dedicated data source (SPEC 20)"}),
    "KeyRelabel": obj(["label"], label={**LABEL, "type": "string", "minLength": 1}),
    "SubscriptionRequest": obj(["plan"], plan={"type": "string", "enum": ["professional", "enterprise"]},
                               message={"type": ["string", "null"], "maxLength": MAX_MESSAGE,
                                        "pattern": "^[^\x00]*$"}),
    "Approval": obj([], rate={"type": ["integer", "null"], "minimum": 1, "maximum": MAX_RATE,
                              "examples": [3000],
                              "description": "requests per minute: required for enterprise, refused otherwise"}),
    "SlaReport": obj(
        ["month", "timezone", "from", "to", "minutes", "target", "components", "latency", "stream", "days",
         "supportResponse"],
        month={**STR, "examples": ["2026-03"]}, timezone={**STR, "enum": ["Asia/Shanghai"]},
        to={**NULLTS, "description": "end of the counted minutes (the minute in progress, or the month's end); "
                                     "null when none count"},
        minutes={**INT, "description": "minutes counted: from the data dir's first start to the minute in progress"},
        target={**PCT, "description": "the plan's availability target, percent (enterprise 99.9)"},
        components={"type": "array", "items": obj(
            ["id", "availability", "target", "met", "downMinutes", "downRanges"],
            id={**STR, "description": "rest, stream, storage or feed:{venue}"}, availability=NULLPCT, target=PCT,
            met={"type": ["boolean", "null"]}, downMinutes=INT,
            downRanges={"type": "array", "items": obj(["from", "to"], to={**TS, "description": "the first minute "
                                                                           "up again"}, **{"from": TS})})},
        latency=obj(["requests", "errors", "p50Ms", "p95Ms", "p99Ms"], requests=INT,
                    errors={**INT, "description": "answered 5xx"}, p50Ms=NULLMS, p95Ms=NULLMS, p99Ms=NULLMS),
        stream=obj(["frames", "feedToFrameP99Ms"], frames=INT, feedToFrameP99Ms=NULLMS),
        days={"type": "array", "items": obj(["date", "minutes", "availability"], date=DATE, minutes=INT,
                                            availability={"type": "object", "additionalProperties": NULLPCT})},
        supportResponse={"type": "array", "items": {"type": "object"},
                         "description": "the month's enterprise tickets: {id, userId, severity, createdAt, "
                                        "firstResponseDue, firstResponseAt, firstResponseMet (null: pending), "
                                        "responseSeconds}; the account's own, every account's for an operator"},
        **{"from": {**NULLTS, "description": "first counted minute; null when none count"}}),
}
CONSOLE_REQUESTS = ("KeyLabel", "KeyRelabel", "SubscriptionRequest", "Approval")
for _name in CONSOLE_REQUESTS:  # these bodies refuse a field they do not define (400)
    CONSOLE_SCHEMAS[_name]["additionalProperties"] = False


def _ok(schema: str, status: str = "200") -> dict[str, S]:
    return {status: {"description": "OK" if status == "200" else "created",
                     "content": {"application/json": {"schema": ref(schema)}}}}


def _problem(description: str) -> S:
    return {"description": description, "content": {"application/problem+json": {"schema": ref("Problem")}}}


def _body(schema: str, required: bool = True) -> S:
    return {"required": required, "content": {"application/json": {"schema": ref(schema)}}}


AUTH = {"401": _problem("missing, invalid or expired Bearer token"), "403": _problem("account disabled")}
NO_KEY = {"404": _problem("this account has no such key (another account's key id is 404 too)")}
TAG = ["console"]
BEARER: list[S] = [{"Bearer": []}]
USAGE_PARAMS = [
    {"name": "from", "in": "query", "required": False, "schema": DAY_PARAM, "description": "first day (default: 29 "
     "days before `to`)"},
    {"name": "to", "in": "query", "required": False, "schema": DAY_PARAM, "description": "last day (default: today, "
     "Asia/Shanghai)"},
    {"name": "key", "in": "query", "required": False, "schema": TEXT_PARAM, "description": "one key's id"},
]


def _op(summary: str, responses: dict[str, S], **more: S | list[S]) -> S:
    return {"summary": summary, "tags": TAG, "security": BEARER, "responses": {**responses, **AUTH}, **more}


CONSOLE_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/console/keys"): _op("The account's keys (never their secrets)", _ok("ConsoleKeys")),
    ("POST", "/api/console/keys"): _op(
        "Create a key: the secret is shown once (free 1 active key, professional 10, enterprise 100)",
        {**_ok("ConsoleKeyCreated", "201"), "409": _problem("the plan's number of active keys is reached")},
        requestBody=_body("KeyLabel")),
    ("PATCH", "/api/console/keys/{id}"): _op("Rename a key", {**_ok("ConsoleKey"), **NO_KEY},
                                             requestBody=_body("KeyRelabel")),
    ("DELETE", "/api/console/keys/{id}"): _op("Revoke a key (its WebSocket sessions close with 4001)",
                                              {**_ok("ConsoleKey"), **NO_KEY,
                                               "413": _problem("a body over 64 KiB")}),
    ("POST", "/api/console/keys/{id}/rotate"): _op(
        "A new secret for the key (a new id); the old one ends at once, its sessions closed with 4001",
        {**_ok("ConsoleKeyCreated", "201"), **NO_KEY}),
    ("GET", "/api/console/me"): _op("The account, its plan, role, limits and subscription request",
                                    _ok("ConsoleMe")),
    ("GET", "/api/console/usage"): _op(
        "Usage per key per day (Asia/Shanghai): requests, 429s, other 4xx, WebSocket connections and messages",
        {**_ok("Usage"), "400": _problem("a bad date or range (errors[])"), **NO_KEY}, parameters=USAGE_PARAMS),
    ("GET", "/api/console/sla"): _op(
        "The month's availability per component against the plan's target, every down range, latency "
        "percentiles (enterprise accounts; operators)",
        {**_ok("SlaReport"), "400": _problem("a bad month (errors[] names month) or an unknown parameter"),
         "403": _problem("not an enterprise account nor an operator, or account disabled")},
        parameters=[{"name": "month", "in": "query", "required": False,
                     "schema": {"type": "string", "pattern": r"^\d{4}-\d{2}$", "examples": ["2026-03"]},
                     "description": "calendar month in Asia/Shanghai, YYYY-MM (default: this month)"}]),
    ("GET", "/api/console/events"): _op("The account's audit list: key and plan events, time and client IP",
                                        _ok("ConsoleEvents")),
    ("POST", "/api/console/subscription"): _op(
        "Ask for a plan (one open request at a time); notifies the operators",
        {**_ok("Subscription", "201"), "409": _problem("a request is open already, or the plan is current")},
        requestBody=_body("SubscriptionRequest")),
    ("GET", "/api/console/admin/subscriptions"): _op(
        "Operators: subscription requests", {**_ok("Subscriptions"), "400": _problem("unknown status"),
                                             "403": _problem("not an operator, or account disabled")},
        parameters=[{"name": "status", "in": "query", "required": False,
                     "schema": {"type": "string", "enum": ["pending", "approved", "rejected"]},
                     "description": "only requests in this state"}]),
    ("POST", "/api/console/admin/subscriptions/{id}/approve"): _op(
        "Operators: approve (enterprise: with rate); the account's keys follow within 1 s",
        {**_ok("Subscription"), "403": _problem("not an operator, or account disabled"),
         "404": _problem("no such request"), "409": _problem("decided already")},
        requestBody=_body("Approval", required=False)),
    ("POST", "/api/console/admin/subscriptions/{id}/reject"): _op(
        "Operators: reject", {**_ok("Subscription"), "403": _problem("not an operator, or account disabled"),
                              "404": _problem("no such request"), "409": _problem("decided already")}),
}
