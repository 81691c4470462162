"""Incidents the service opens and resolves by itself (SPEC 20, docs/incidents.md): a feed silent in session for
`--feed-outage-s` (5 minutes; its component is major_outage) or storage unavailable for `--storage-outage-s` (1
minute).

One incident per outage, not one per hub or per check: only the feed lease holder acts (`leading`: one hub on the
Redis engine, the only hub on the memory engine), it acts only when the board has no unresolved incident of that
key, and storage refuses a second unresolved incident of one key (the schema's unique index) should two hubs both
believe they lead for a moment. A storage outage cannot be written while it lasts: every hub holds it on its board
(so its /api/v1/status lists it) and the leader writes it, opened and resolved, once storage answers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from server.api.ops.incidents import READ_TIMEOUT_S, IncidentBoard
from server.core.background import cancel_and_wait, log_round_failure, storage_deadline
from server.market.freshness import Level
from server.market.timefmt import iso
from server.store.accounts.console_store import ConsoleStore
from server.store.incidents.model import Impact, Incident, IncidentStatus, Update
from server.store.incidents.repo import IncidentRepo, new_id

CHECK_S = 1.0
STORAGE = "storage"
log = logging.getLogger("market.incidents")
Levels = Callable[[float], list[tuple[str, str, Level]]]


def feed_changes(levels: list[tuple[str, str, Level]], open_keys: set[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Which feed incidents to open (id, name) and which to resolve: a feed in major outage without an open
    incident gets one; an open one whose feed is operational again is resolved (degraded: not yet)."""
    feeds = [(cid, name, level) for cid, name, level in levels if cid.startswith("feed:")]
    to_open = [(cid, name) for cid, name, level in feeds if level is Level.MAJOR and cid not in open_keys]
    to_resolve = [cid for cid, _, level in feeds if level is Level.OPERATIONAL and cid in open_keys]
    return to_open, to_resolve


def storage_incident(down_since: float, now: float) -> Incident:
    body = f"Storage has not answered since {iso(down_since)}. We are investigating."
    first = Update(new_id("upd"), IncidentStatus.INVESTIGATING, body, now)
    return Incident(new_id("inc"), "Storage unavailable", IncidentStatus.INVESTIGATING, Impact.CRITICAL, (STORAGE,),
                    STORAGE, now, now, None, (first,))


class IncidentWatch:
    def __init__(self, board: IncidentBoard, store: ConsoleStore, levels: Levels, storage_ok: Callable[[], bool | None],
                 leading: Callable[[], bool], clock: Callable[[], float], feed_outage_s: float,
                 storage_outage_s: float) -> None:
        self.board, self.store, self.levels, self.storage_ok = board, store, levels, storage_ok
        self.leading, self.clock = leading, clock
        self.feed_outage_s, self.storage_outage_s = feed_outage_s, storage_outage_s
        self.down_since: float | None = None
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> None:
        now = self.clock()
        await self._storage(now)
        if self.leading() and self.storage_ok() is not False:
            await self._feeds(now)

    async def _feeds(self, now: float) -> None:
        open_keys = {i.auto_key for i in self.board.unresolved() if i.auto_key}
        to_open, to_resolve = feed_changes(self.levels(now), open_keys)
        minutes = self.feed_outage_s / 60
        for cid, name in to_open:
            body = f"{name}: no tick for {minutes:g} minutes of its session. We are investigating."
            await self._write(lambda r, cid=cid, name=name, body=body: IncidentRepo(r.db).open(
                f"{name} delayed", Impact.MAJOR, [cid], body, now, auto_key=cid))
        for cid in to_resolve:
            await self._write(lambda r, cid=cid: IncidentRepo(r.db).resolve_auto(
                cid, "Ticks are arriving again (or the venue closed): the feed is operational.", now))
        if to_open or to_resolve:
            await self.board.refresh()

    async def _storage(self, now: float) -> None:
        ok = self.storage_ok()
        held = self.board.local.get(STORAGE)
        if ok is False:
            self.down_since = self.down_since if self.down_since is not None else now
            if held is None and now - self.down_since >= self.storage_outage_s:
                self.board.local[STORAGE] = storage_incident(self.down_since, now)
            return
        self.down_since = None
        if held is None or ok is None:
            return
        if self.leading():
            first = held.updates[-1]
            await self._write(lambda r: IncidentRepo(r.db).record_past(
                held.title, held.impact, held.components, STORAGE, (held.created_at, first.body),
                (now, "Storage answers again.")))
        self.board.local.pop(STORAGE, None)
        await self.board.refresh()

    async def _write(self, fn: Callable[..., object]) -> None:
        async with storage_deadline(READ_TIMEOUT_S):
            await self.store.write(fn)

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="incident-watch")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(CHECK_S)
            try:
                await self.check()
            except Exception as exc:  # storage refused a write: the next check tries again
                log_round_failure(log, "incident watch", exc)
