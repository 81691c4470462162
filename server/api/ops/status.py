"""`GET /api/v1/status` (SPEC 20): the service's status in Statuspage's summary.json shape, no key.

It is what people read in an outage, so answering it never waits on storage, Redis or the feed: every component's
status is a flag the hub already keeps (the stream's listener, the outbox worker's task, the tick bus's health,
the feeds' freshness from market/freshness.py) or, for storage, the last answer of `StorageProbe`, a task that
pings it every PROBE_EVERY_S with a bound of PROBE_TIMEOUT_S. docs/status.md defines each component's status.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import orjson

from server.api.core.query import known_query
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.ops.incidents import IncidentBoard
from server.core.background import cancel_and_wait
from server.market.freshness import Freshness, Level
from server.market.timefmt import iso
from server.market.venues.clock import MarketStatus, VenueClock
from server.store.incidents.model import Impact, worst_impact
from server.store.sql.repositories import Storage

PROBE_EVERY_S = 5.0
PROBE_TIMEOUT_S = 1.0
NO_STORE = ("cache-control", "no-store")
# Statuspage's page indicator and its description, by the worst component status
INDICATOR = {Level.OPERATIONAL: ("none", "All Systems Operational"),
             Level.DEGRADED: ("minor", "Minor Service Outage"),
             Level.PARTIAL: ("major", "Partial System Outage"),
             Level.MAJOR: ("major", "Partial System Outage")}
CRITICAL = ("critical", "Major Service Outage")  # rest, stream or storage out: nothing can be served
CORE = frozenset({"rest", "stream", "storage"})
INDICATORS = ["none", "minor", "major", "critical"]
INCIDENT_DESCRIPTION = {Impact.MINOR: "Minor Service Outage", Impact.MAJOR: "Partial System Outage",
                        Impact.CRITICAL: "Major Service Outage"}
MAINTENANCE = "Service Under Maintenance"
_ORDER = list(Level)


class StorageProbe:
    """Storage's health as last seen: a ping every PROBE_EVERY_S, bounded; None before the first answer."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.ok: bool | None = None
        self._task: asyncio.Task[None] | None = None

    def level(self) -> Level:
        return Level.MAJOR if self.ok is False else Level.OPERATIONAL

    async def probe(self) -> None:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                self.ok = await self.storage.ping()
        except (TimeoutError, OSError):
            self.ok = False

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="storage-probe")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a probe that fails is a storage that is down, said above
                await self.probe()
            await asyncio.sleep(PROBE_EVERY_S)


@dataclass(frozen=True, slots=True)
class Component:
    id: str
    name: str
    level: Callable[[], Level]


def up_down(flag: Callable[[], bool]) -> Callable[[], Level]:
    """A component that is either up (operational) or out (major_outage)."""
    return lambda: Level.OPERATIONAL if flag() else Level.MAJOR


class StatusApi:
    def __init__(self, components: list[Component], freshness: Freshness, venues: Mapping[str, tuple[str, VenueClock]],
                 clock: Callable[[], float], board: IncidentBoard | None = None) -> None:
        """`components`: the hub's own (rest, stream, storage, notifications, redis); `venues`: each venue's
        English name and clock, one `feed:{venue}` component each; `board`: the incidents and maintenance."""
        self.components, self.board = components, board
        self.freshness, self.venues, self.clock = freshness, dict(venues), clock
        self._since: dict[str, tuple[Level, float]] = {}  # component -> (its status, when it took it)

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/status", self.status, Access.OPEN, name="status")

    def levels(self, now: float) -> list[tuple[str, str, Level]]:
        ms = int(now * 1000)
        out = [(c.id, c.name, c.level()) for c in self.components]
        for vid, (name, clock) in self.venues.items():
            level = self.freshness.level(vid, ms, clock.status(ms) is MarketStatus.OPEN)
            out.append((f"feed:{vid}", f"Feed: {name}", level))
        return out

    def summary(self, now: float) -> dict[str, object]:
        components, levels = [], self.levels(now)
        for cid, name, level in levels:
            held = self._since.get(cid)
            if held is None or held[0] is not level:
                held = self._since[cid] = (level, now)
            components.append({"id": cid, "name": name, "status": level.value, "updatedAt": iso(held[1])})
        worst = max((level for _, _, level in levels), key=_ORDER.index)
        core_out = any(level is Level.MAJOR for cid, _, level in levels if cid in CORE)
        indicator, description = CRITICAL if core_out else INDICATOR[worst]
        board = self.board
        if board is None:
            return {"status": {"indicator": indicator, "description": description}, "components": components,
                    "incidents": [], "scheduledMaintenances": []}
        unresolved = board.unresolved()
        impact = worst_impact(unresolved)  # an open incident's impact raises the indicator to its own
        if impact is not None and INDICATORS.index(impact.value) > INDICATORS.index(indicator):
            indicator, description = impact.value, INCIDENT_DESCRIPTION[impact]
        if indicator == "none" and board.in_maintenance(now):
            description = MAINTENANCE
        return {"status": {"indicator": indicator, "description": description}, "components": components,
                "incidents": [i.view() for i in unresolved],
                "scheduledMaintenances": [m.view(now) for m in board.current_maintenance(now)]}

    def status(self, req: Request) -> Response:
        known_query(req, frozenset())  # /api/v1 refuses parameters it does not define (SPEC 6)
        return Response(200, orjson.dumps(self.summary(self.clock())), headers=[NO_STORE])
