"""Incidents and maintenance as Statuspage shapes them: pure values, the allowed status changes, no I/O.

Invariants: `resolved` is terminal (an incident is never reopened: a new one is opened); every status change is an
update with a body, so `updates` is the incident's whole history; a maintenance's status is not stored but follows
from the clock (`scheduled` before `scheduledFor`, `in_progress` until `scheduledUntil`, then `completed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from server.core.transitions import Transitions
from server.market.timefmt import iso


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
