"""The OpenAPI description of the service's status and the data quality per trading day (SPEC 20, docs/status.md),
merged into server/api/docs/openapi.py's document."""

from __future__ import annotations

from server.api.market.quality import DEFAULT_DAYS, MAX_DAYS
from server.core.availability import UPTIME_DAYS
from server.market.freshness import Level
from server.market.quality import Condition
from server.market.venues.data import VENUES

S = dict  # a JSON schema fragment
STR: S = {"type": "string"}
TS: S = {"type": "string", "format": "date-time", "examples": ["2026-11-23T10:00:05.000+08:00"]}
DATE: S = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$", "examples": ["2026-11-23"]}


def _ref(name: str) -> S:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: S, **extra: object) -> S:
    return {"type": "object", "required": list(props), "properties": props, "additionalProperties": False, **extra}


COMPONENT = _obj({
    "id": {**STR, "description": "rest, stream, storage, notifications, redis (the Redis engine only) or "
                                 "feed:{venue} (GET /api/v1/venues)", "examples": ["feed:ice-eu"]},
    "name": STR,
    "status": {"type": "string", "enum": [lv.value for lv in Level]},
    "updatedAt": {**TS, "description": "when this hub saw the component take its status (or the hub's first "
                                       "answer)"},
})
GAP = _obj({"from": {**TS, "description": "the last tick before the silence (or the session's start)"},
            "to": {**TS, "description": "the first tick after it (or the session's end)"}})
DAY = _obj({
    "date": {**DATE, "description": "the venue's trading day"}, "venue": STR,
    "condition": {"type": "string", "enum": [c.value for c in Condition],
                  "description": "available; degraded: gaps lists every in-session silence over --stale-after; "
                                 "pending: the day has not closed; missing: no tick at all"},
    "gaps": {"type": "array", "items": _ref("QualityGap")},
    "lastModified": {"oneOf": [TS, {"type": "null"}],
                     "description": "the newest tick of a closed day (null: none, or the day is pending)"},
})
STATUS_SCHEMAS: dict[str, S] = {
    "StatusComponent": COMPONENT,
    "Status": _obj({
        "status": _obj({"indicator": {"type": "string", "enum": ["none", "minor", "major", "critical"]},
                        "description": STR}),
        "components": {"type": "array", "items": _ref("StatusComponent")},
        "incidents": {"type": "array", "items": _ref("Incident"),
                      "description": "the unresolved incidents, newest first (GET /api/v1/status/incidents: the "
                                     "resolved ones too)"},
        "scheduledMaintenances": {"type": "array", "items": _ref("Maintenance"),
                                  "description": "maintenance scheduled or in progress"},
    }),
    "UptimeDay": _obj({
        "date": {**DATE, "description": "an Asia/Shanghai day"},
        "availability": {"oneOf": [{"type": "number", "minimum": 0, "maximum": 100}, {"type": "null"}],
                         "description": "percent of the day's counted minutes up (three decimals); null when no "
                                        "minute counted (before the service's first start)"},
        "downMinutes": {"type": "integer", "minimum": 0},
    }),
    "UptimeComponent": _obj({
        "id": {**STR, "description": "rest, stream, storage or feed:{venue}", "examples": ["rest"]},
        "availability": {"oneOf": [{"type": "number", "minimum": 0, "maximum": 100}, {"type": "null"}],
                         "description": "over the days listed (null: no minute counted)"},
        "downMinutes": {"type": "integer", "minimum": 0, "description": "over the days listed"},
        "days": {"type": "array", "items": _ref("UptimeDay"), "description": "oldest first, ending today"},
    }),
    "Uptime": _obj({
        "asOf": {"oneOf": [TS, {"type": "null"}],
                 "description": "when the copy was computed (every 5 minutes; null before the first one)"},
        "timezone": {"type": "string", "enum": ["Asia/Shanghai"]},
        "days": {"type": "integer", "minimum": 1, "maximum": UPTIME_DAYS},
        "components": {"type": "array", "items": _ref("UptimeComponent")},
    }, examples=[{"asOf": "2026-11-23T10:05:00.000+08:00", "timezone": "Asia/Shanghai", "days": 2, "components": [
        {"id": "rest", "availability": 99.965, "downMinutes": 1, "days": [
            {"date": "2026-11-22", "availability": 99.931, "downMinutes": 1},
            {"date": "2026-11-23", "availability": 100.0, "downMinutes": 0}]}]}]),
    "QualityGap": GAP,
    "QualityDay": DAY,
    "QualityList": _obj({"days": {"type": "array", "items": _ref("QualityDay")}}, examples=[{"days": [
        {"date": "2026-11-23", "venue": "ice-eu", "condition": "degraded",
         "gaps": [{"from": "2026-11-23T10:00:02.000+08:00", "to": "2026-11-23T10:03:02.000+08:00"}],
         "lastModified": "2026-11-24T06:59:59.500+08:00"}]}]),
}


def _param(name: str, schema: S, description: str) -> S:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _problem(description: str) -> S:
    return {"description": description, "content": {"application/problem+json": {"schema": _ref("Problem")}}}


STATUS_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/status"): {
        "summary": "The service's status (no key; Statuspage's summary.json shape): one component per part and "
                   "one feed:{venue} per venue, the unresolved incidents and current maintenance, answered from "
                   "what the hub already knows, so it answers while storage, Redis or the feed is down; an open "
                   "incident's impact raises the indicator to it", "tags": ["operations"],
        "responses": {"200": {"description": "the page indicator and every component's status",
                              "content": {"application/json": {"schema": _ref("Status")}}}},
    },
    ("GET", "/api/v1/status/uptime"): {
        "summary": "Daily uptime per component over the last days (no key): the SLA report's availability and down "
                   "minutes per Asia/Shanghai day (docs/sla.md defines down), computed every 5 minutes from the "
                   "per-minute records, answered from the last copy so it answers while storage is down",
        "tags": ["operations"],
        "parameters": [_param("days", {"type": "integer", "minimum": 1, "maximum": UPTIME_DAYS,
                                       "default": UPTIME_DAYS}, "how many days, ending today")],
        "responses": {
            "200": {"description": "each component's days, oldest first",
                    "content": {"application/json": {"schema": _ref("Uptime")}}},
            "400": _problem(f"days not an integer from 1 to {UPTIME_DAYS}, or an unknown parameter "
                            "(invalid_parameter, errors[].field names it)"),
        },
    },
    ("GET", "/status"): {
        "summary": "The status page (HTML, not JSON): /api/v1/status in English or Chinese", "tags": ["dashboard"],
        "parameters": [{"name": "If-None-Match", "in": "header", "required": False, "schema": STR,
                        "description": "ETag of a copy already held"}],
        "responses": {"200": {"description": "the page", "content": {"text/html": {"schema": STR}}},
                      "304": {"description": "not changed"}},
    },
    ("GET", "/api/v1/quality"): {
        "summary": "Data quality per venue per trading day (Databento's conditions, every in-session gap over "
                   "--stale-after), from the stored tick archive", "tags": ["reference data"],
        "parameters": [
            _param("venue", {"type": "string", "enum": sorted(VENUES), "examples": ["ice-eu"]},
                   "a venue id (GET /api/v1/venues); left out: all"),
            _param("from", DATE, f"first day, included (default: {DEFAULT_DAYS} days before to)"),
            _param("to", DATE, f"last day, included (default: today; at most {MAX_DAYS} days after from)"),
        ],
        "responses": {
            "200": {"description": "the venue's trading days in the range that have begun, by date then venue "
                                   "(none on a hub without a durable history: the demo feed)",
                    "content": {"application/json": {"schema": _ref("QualityList")}}},
            "400": _problem("venue unknown, from or to not a canonical YYYY-MM-DD date, to before from, or more "
                            f"than {MAX_DAYS} days (invalid_parameter, errors[].field names it)"),
        },
    },
}
