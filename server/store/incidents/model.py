"""Incidents and maintenance as Statuspage shapes them: pure values, the allowed status changes, no I/O.

Invariants: `resolved` is terminal (an incident is never reopened: a new one is opened); every status change is an
update with a body, so `updates` is the incident's whole history; a maintenance's status is not stored but follows
from the clock (`scheduled` before `scheduledFor`, `in_progress` until `scheduledUntil`, then `completed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from server.core.transitions import Transitions
from server.market.timefmt import iso
from server.market.venues.data import VENUES


class IncidentStatus(StrEnum):
    INVESTIGATING = "investigating"
    IDENTIFIED = "identified"
    MONITORING = "monitoring"
    RESOLVED = "resolved"


class Impact(StrEnum):
    MINOR = "minor"
    MAJOR = "major"
    CRITICAL = "critical"


class MaintenanceStatus(StrEnum):
    SCHEDULED = "scheduled"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


S = IncidentStatus
UNRESOLVED = (S.INVESTIGATING, S.IDENTIFIED, S.MONITORING)
# an open incident takes any open status again (another update with the same status is a new message) or resolves
TRANSITIONS = Transitions("incident", IncidentStatus, {
    **{s: {S.IDENTIFIED, S.MONITORING, S.RESOLVED} for s in UNRESOLVED},
    S.RESOLVED: set(),
})
UPDATE_STATUSES = (S.IDENTIFIED, S.MONITORING)  # what `incidents update` takes (resolve has its own command)
IMPACT_ORDER = list(Impact)
MAX_TITLE = 200
MAX_BODY = 4000


@dataclass(frozen=True, slots=True)
class Update:
    id: str
    status: IncidentStatus
    body: str
    created_at: float

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status.value, "body": self.body, "createdAt": iso(self.created_at)}


@dataclass(frozen=True, slots=True)
class Incident:
    id: str
    title: str
    status: IncidentStatus
    impact: Impact
    components: tuple[str, ...]
    auto_key: str | None  # set on an incident the service opened by itself (e.g. `feed:ice-eu`, `storage`)
    created_at: float
    updated_at: float
    resolved_at: float | None
    updates: tuple[Update, ...] = ()  # newest first, as Statuspage lists them

    @property
    def resolved(self) -> bool:
        return self.status is IncidentStatus.RESOLVED

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.title, "status": self.status.value, "impact": self.impact.value,
                "components": list(self.components), "automatic": self.auto_key is not None,
                "createdAt": iso(self.created_at), "updatedAt": iso(self.updated_at),
                "resolvedAt": None if self.resolved_at is None else iso(self.resolved_at),
                "updates": [u.view() for u in self.updates]}


@dataclass(frozen=True, slots=True)
class Maintenance:
    id: str
    title: str
    scheduled_for: float
    scheduled_until: float
    created_at: float

    def status(self, now: float) -> MaintenanceStatus:
        if now < self.scheduled_for:
            return MaintenanceStatus.SCHEDULED
        return MaintenanceStatus.IN_PROGRESS if now < self.scheduled_until else MaintenanceStatus.COMPLETED

    def view(self, now: float) -> dict[str, Any]:
        return {"id": self.id, "name": self.title, "status": self.status(now).value,
                "scheduledFor": iso(self.scheduled_for), "scheduledUntil": iso(self.scheduled_until),
                "createdAt": iso(self.created_at)}


def worst_impact(incidents: list[Incident]) -> Impact | None:
    """The most severe impact among unresolved incidents (None: there is none)."""
    open_ = [i.impact for i in incidents if not i.resolved]
    return max(open_, key=IMPACT_ORDER.index) if open_ else None


class NoSuchIncident(LookupError):
    pass


# the components /api/v1/status lists (redis only on the Redis engine; one feed per venue)
FIXED_COMPONENTS = ("rest", "stream", "storage", "notifications", "redis")
COMPONENT_IDS = (*FIXED_COMPONENTS, *(f"feed:{v}" for v in sorted(VENUES)))
MAX_COMPONENTS = 20
SHANGHAI = ZoneInfo("Asia/Shanghai")


def component_error(cid: str) -> str | None:
    """Why `cid` names no status component (None: it does)."""
    if cid in FIXED_COMPONENTS or (cid.startswith("feed:") and cid[5:] in VENUES):
        return None
    return f"{cid[:64]!r} is not a component: {', '.join(FIXED_COMPONENTS)} or feed:VENUE (GET /api/v1/venues)"


def title_error(title: str) -> str | None:
    if "\x00" in title:
        return "must not contain the NUL character (U+0000)"
    if not title.strip():
        return "must not be empty"
    return f"must be at most {MAX_TITLE} characters" if len(title) > MAX_TITLE else None


def body_error(body: str) -> str | None:
    if "\x00" in body:
        return "must not contain the NUL character (U+0000)"
    if not body.strip():
        return "must not be empty"
    return f"must be at most {MAX_BODY} characters" if len(body) > MAX_BODY else None


# the forms `parse_time` takes (the OpenAPI pattern of a maintenance window's ends)
ISO_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?(?:Z|[+-][0-9]{2}:[0-9]{2})?"
_ISO_TIME = re.compile(ISO_TIME)


def parse_time(text: str) -> float:
    """An ISO 8601 time (a time without an offset is Asia/Shanghai's) as epoch seconds; ValueError naming the
    form expected."""
    try:
        if not _ISO_TIME.fullmatch(text):
            raise ValueError(text)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not an ISO 8601 time such as 2026-12-01T02:00:00+08:00") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=SHANGHAI)).timestamp()


def window_error(start: float, until: float) -> str | None:
    return None if until > start else "the end must be after the start"
