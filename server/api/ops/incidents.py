"""Incidents and maintenance as the status routes show them (SPEC 20, docs/incidents.md): `IncidentBoard`, the
copy in memory that `/api/v1/status` and `GET /api/v1/status/incidents` answer from, and that route.

The board reads storage every REFRESH_S (bounded by READ_TIMEOUT_S) and whenever a console write pokes it, so the
routes never wait on storage and keep answering from the last copy while it is down (the answer's `asOf` says when
that copy was read). An automatic incident that cannot be written (storage is what is out) is held here as `local`
until it can be. A hub with mail configured also writes each new update's e-mail jobs on its refresh (the repository
makes that once per update and account, whichever hub does it) and wakes the outbox worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import orjson

from server.api.core.query import known_query
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.background import cancel_and_wait, log_round_failure, storage_deadline
from server.market.timefmt import iso
from server.store.accounts.console_store import ConsoleStore
from server.store.incidents.model import Incident, Maintenance, MaintenanceStatus
from server.store.incidents.repo import RECENT, IncidentRepo

REFRESH_S = 2.0
READ_TIMEOUT_S = 2.0
NO_STORE = ("cache-control", "no-store")
log = logging.getLogger("market.incidents")


class IncidentBoard:
    def __init__(self, store: ConsoleStore, clock: Callable[[], float], mail: bool = False,
                 wake: Callable[[], None] = lambda: None) -> None:
        self.store, self.clock, self.mail, self.wake = store, clock, mail, wake
        self.stored: list[Incident] = []  # newest first, as last read
        self.maintenance: list[Maintenance] = []
        self.local: dict[str, Incident] = {}  # auto key -> an automatic incident storage could not take yet
        self.read_at: float | None = None
        self._event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- what the routes read ---------------------------------------------------------------------------------
    def incidents(self) -> list[Incident]:
        """The local ones, then the stored ones, newest first."""
        return sorted([*self.local.values(), *self.stored], key=lambda i: (i.created_at, i.id), reverse=True)

    def unresolved(self) -> list[Incident]:
        return [i for i in self.incidents() if not i.resolved]

    def open_auto(self, auto_key: str) -> Incident | None:
        return next((i for i in self.unresolved() if i.auto_key == auto_key), None)

    def current_maintenance(self, now: float) -> list[Maintenance]:
        """Scheduled or in progress (not over)."""
        return [m for m in self.maintenance if m.status(now) is not MaintenanceStatus.COMPLETED]

    def in_maintenance(self, now: float) -> bool:
        return any(m.status(now) is MaintenanceStatus.IN_PROGRESS for m in self.maintenance)

    # --- keeping the copy ---------------------------------------------------------------------------------------
    def poke(self) -> None:
        """Read again now (after a write of this hub)."""
        self._event.set()

    async def refresh(self) -> None:
        async with storage_deadline(READ_TIMEOUT_S):
            stored, maintenance = await self.store.read(
                lambda r: (IncidentRepo(r.db).recent(), IncidentRepo(r.db).maintenances()))
        self.stored, self.maintenance, self.read_at = stored, maintenance, self.clock()
        if self.mail:
            now = self.clock()
            async with storage_deadline(READ_TIMEOUT_S):  # a read first: no write transaction every 2 s for nothing
                waiting = await self.store.read(lambda r: IncidentRepo(r.db).has_unnotified())
                written = await self.store.write(lambda r: IncidentRepo(r.db).notify_pending(now)) if waiting else 0
            if written:
                self.wake()

    async def start(self) -> None:
        with contextlib.suppress(Exception):  # storage down at start: the routes answer empty lists until it is back
            await self.refresh()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="incident-board")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(REFRESH_S):
                    await self._event.wait()
            self._event.clear()
            try:
                await self.refresh()
            except Exception as exc:  # keep the last copy; the next round tries again
                log_round_failure(log, "incident board refresh", exc)


class IncidentsApi:
    """`GET /api/v1/status/incidents`: the newest RECENT incidents with the resolved ones, and the maintenance not
    over yet (no key, no rate limit, like /api/v1/status)."""

    def __init__(self, board: IncidentBoard, clock: Callable[[], float]) -> None:
        self.board, self.clock = board, clock

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/status/incidents", self.incidents, Access.OPEN, name="status_incidents")

    def incidents(self, req: Request) -> Response:
        known_query(req, frozenset())
        now, board = self.clock(), self.board
        body = {"incidents": [i.view() for i in board.incidents()[:RECENT]],
                "scheduledMaintenances": [m.view(now) for m in board.current_maintenance(now)],
                "asOf": None if board.read_at is None else iso(board.read_at)}
        return Response(200, orjson.dumps(body), headers=[NO_STORE])
