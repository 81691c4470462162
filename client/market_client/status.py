"""The service's status, its incidents and maintenance, and the data quality per trading day (SPEC 20): typed
results and their calls, shared by `MarketClient` and `AsyncMarketClient` (`status()`, `incidents()`,
`quality()`). The status routes take no key: a status page built on them works while keys or storage do not.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from market_client._calls import Call, _day, _params
from market_client.models import Condition, Model

ComponentStatus = Literal["operational", "degraded_performance", "partial_outage", "major_outage"]


class StatusIndicator(Model):
    indicator: Literal["none", "minor", "major", "critical"]
    description: str


class StatusComponent(Model):
    id: str  # rest, stream, storage, notifications, redis, feed:{venue}
    name: str
    status: ComponentStatus
    updated_at: datetime


class IncidentUpdate(Model):
    id: str
    status: Literal["investigating", "identified", "monitoring", "resolved"]
    body: str
    created_at: datetime


class Incident(Model):
    id: str
    name: str
    status: Literal["investigating", "identified", "monitoring", "resolved"]
    impact: Literal["minor", "major", "critical"]
    components: list[str]
    automatic: bool  # opened by the service itself (a silent feed, storage out)
    created_at: datetime
    updated_at: datetime
    resolved_at: datetime | None
    updates: list[IncidentUpdate]  # newest first


class Maintenance(Model):
    id: str
    name: str
    status: Literal["scheduled", "in_progress", "completed"]
    scheduled_for: datetime
    scheduled_until: datetime
    created_at: datetime


class Status(Model):
    status: StatusIndicator
    components: list[StatusComponent]
    incidents: list[Incident]  # unresolved
    scheduled_maintenances: list[Maintenance]


class IncidentList(Model):
    incidents: list[Incident]  # the newest 50, resolved ones too
    scheduled_maintenances: list[Maintenance]
    as_of: datetime | None  # when the hub last read them from storage


class QualityGap(Model, rename={"start": "from", "end": "to"}):
    start: datetime  # the last tick before the silence (or the session's start)
    end: datetime  # the first tick after it (or the session's end)


class QualityDay(Model):
    date: date
    venue: str
    condition: Condition
    gaps: list[QualityGap]  # every in-session silence over --stale-after
    last_modified: datetime | None


class QualityList(Model):
    days: list[QualityDay]


def status() -> Call[Status]:
    return Call("GET", "/api/v1/status", Status)


def incidents() -> Call[IncidentList]:
    return Call("GET", "/api/v1/status/incidents", IncidentList)


def quality(venue: str | None = None, start: date | str | None = None,
            end: date | str | None = None) -> Call[QualityList]:
    """Per venue per trading day from `start` to `end` (both included; the server's defaults: the last 30 days)."""
    return Call("GET", "/api/v1/quality", QualityList, _params(venue=venue, **{"from": _day(start), "to": _day(end)}),
                auth="key")
