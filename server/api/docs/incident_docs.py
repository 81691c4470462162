"""The OpenAPI description of incidents and maintenance (SPEC 20, docs/incidents.md): their schemas (also used by
`/api/v1/status`, status_docs.py), `GET /api/v1/status/incidents` and the console's routes, merged into
server/api/docs/openapi.py's document."""

from __future__ import annotations

from server.api.docs.console_docs import AUTH, _body, _ok, _problem
from server.api.docs.schema_parts import BOOL, NO_NUL, STR, S, obj, padded, ref, text
from server.store.incidents.model import (
    COMPONENT_IDS,
    ISO_TIME,
    MAX_BODY,
    MAX_COMPONENTS,
    MAX_TITLE,
    UPDATE_STATUSES,
    Impact,
    IncidentStatus,
    MaintenanceStatus,
)

TS: S = {"type": "string", "format": "date-time", "examples": ["2026-11-23T10:05:00.000+08:00"]}
NULLTS: S = {**TS, "type": ["string", "null"]}
TIME_IN: S = {"type": "string", "maxLength": 64, "pattern": padded(ISO_TIME),
              "description": "ISO 8601 (a time without an offset is Asia/Shanghai's)"}
COMPONENT_ID: S = {**STR, "description": "a component of /api/v1/status: rest, stream, storage, notifications, "
                                         "redis or feed:{venue}", "enum": list(COMPONENT_IDS)}


def _closed(required: list[str], **props: S) -> S:
    return {**obj(required, **props), "additionalProperties": False}


UPDATE = _closed(["id", "status", "body", "createdAt"], id=STR,
                 status={"type": "string", "enum": [s.value for s in IncidentStatus]}, body=STR, createdAt=TS)
INCIDENT = _closed(
    ["id", "name", "status", "impact", "components", "automatic", "createdAt", "updatedAt", "resolvedAt", "updates"],
    id=STR, name=STR, status={"type": "string", "enum": [s.value for s in IncidentStatus]},
    impact={"type": "string", "enum": [i.value for i in Impact]},
    components={"type": "array", "items": COMPONENT_ID},
    automatic={**BOOL, "description": "opened by the service itself (a feed silent in session over 5 minutes, "
                                      "storage unavailable over 1 minute)"},
    createdAt=TS, updatedAt=TS, resolvedAt=NULLTS,
    updates={"type": "array", "items": ref("IncidentUpdate"), "description": "newest first"})
MAINTENANCE = _closed(["id", "name", "status", "scheduledFor", "scheduledUntil", "createdAt"], id=STR, name=STR,
                      status={"type": "string", "enum": [s.value for s in MaintenanceStatus]},
                      scheduledFor=TS, scheduledUntil=TS, createdAt=TS)

INCIDENT_SCHEMAS: dict[str, S] = {
    "IncidentUpdate": UPDATE,
    "Incident": INCIDENT,
    "Maintenance": MAINTENANCE,
    "IncidentList": _closed(["incidents", "scheduledMaintenances", "asOf"],
                            incidents={"type": "array", "items": ref("Incident")},
                            scheduledMaintenances={"type": "array", "items": ref("Maintenance")},
                            asOf={**NULLTS, "description": "when this hub last read them from storage (it answers "
                                                           "from that copy while storage is down)"}),
    "ConsoleIncidents": _closed(["items"], items={"type": "array", "items": ref("Incident")}),
    "ConsoleMaintenances": _closed(["items"], items={"type": "array", "items": ref("Maintenance")}),
    "IncidentMail": _closed(["incidents", "default", "chosen"],
                            incidents={**BOOL, "description": "this account is e-mailed each incident update"},
                            default={**BOOL, "description": "the plan's default (enterprise: true)"},
                            chosen={**BOOL, "description": "the account made a choice"}),
    "IncidentOpen": _closed(["title", "impact"], title=text(MAX_TITLE),
                            impact={"type": "string", "enum": [i.value for i in Impact]},
                            components={"type": "array", "items": COMPONENT_ID, "maxItems": MAX_COMPONENTS,
                                        "examples": [["feed:ice-eu"]]},
                            message={"type": ["string", "null"], "maxLength": MAX_BODY, "pattern": NO_NUL,
                                     "description": "the first update (default: we are investigating)"}),
    "IncidentUpdateRequest": _closed(["status", "message"],
                                     status={"type": "string", "enum": [s.value for s in UPDATE_STATUSES]},
                                     message=text(MAX_BODY)),
    "IncidentResolve": _closed([], message={"type": ["string", "null"], "maxLength": MAX_BODY, "pattern": NO_NUL}),
    "MaintenanceAdd": _closed(["title", "from", "to"], title=text(MAX_TITLE),
                              to={**TIME_IN, "examples": ["2030-12-01T04:00:00+08:00"]},
                              **{"from": {**TIME_IN, "examples": ["2030-12-01T02:00:00+08:00"]}}),
    "IncidentMailChoice": _closed(["incidents"], incidents={**BOOL, "examples": [True]}),
}


OPERATOR = {"401": AUTH["401"], "403": _problem("not an operator, or account disabled")}
CHANGE = {"404": _problem("no such incident"), "409": _problem("the incident is resolved already")}


def _op(summary: str, responses: dict[str, S], auth: dict[str, S] = OPERATOR, **more: S) -> S:
    return {"summary": summary, "tags": ["console"], "security": [{"Bearer": []}],
            "responses": {**responses, **auth}, **more}


INCIDENT_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/status/incidents"): {
        "summary": "The newest 50 incidents with the resolved ones, and the maintenance not over yet (no key; "
                   "answered from this hub's copy, read every 2 s, so it answers while storage is down)",
        "tags": ["operations"], "responses": _ok("IncidentList")},
    ("GET", "/api/console/incidents"): _op("Operators: the newest 50 incidents and every unresolved one",
                                           _ok("ConsoleIncidents")),
    ("POST", "/api/console/incidents"): _op("Operators: open an incident (investigating)", _ok("Incident", "201"),
                                            requestBody=_body("IncidentOpen")),
    ("POST", "/api/console/incidents/{id}/updates"): _op(
        "Operators: post an update (identified or monitoring); accounts told of incidents are e-mailed",
        {**_ok("Incident"), **CHANGE}, requestBody=_body("IncidentUpdateRequest")),
    ("POST", "/api/console/incidents/{id}/resolve"): _op(
        "Operators: resolve an incident", {**_ok("Incident"), **CHANGE},
        requestBody=_body("IncidentResolve", required=False)),
    ("GET", "/api/console/maintenances"): _op("Operators: maintenance not over yet and the newest 50 others",
                                              _ok("ConsoleMaintenances")),
    ("POST", "/api/console/maintenances"): _op("Operators: schedule maintenance", _ok("Maintenance", "201"),
                                               requestBody=_body("MaintenanceAdd")),
    ("GET", "/api/console/notifications"): _op(
        "Whether this account is e-mailed each incident update (enterprise by default, others by opting in)",
        _ok("IncidentMail"), AUTH),
    ("POST", "/api/console/notifications"): _op("Choose whether this account is e-mailed each incident update",
                                                _ok("IncidentMail"), AUTH, requestBody=_body("IncidentMailChoice")),
}
