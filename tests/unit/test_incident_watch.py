"""The incidents the service opens by itself (server/api/ops/incident_watch.py) on a real SQLite store, with the
hub's inputs pushed in (the clock, the storage probe's last answer, the components' levels, the feed lease):
a feed in major outage opens one incident and its return resolves it; storage out for the threshold shows an
incident on the board at once and is written, opened and resolved, when storage answers again, by the lease
holder only."""

from __future__ import annotations

import asyncio
from pathlib import Path

from server.api.ops.incident_watch import IncidentWatch, feed_changes
from server.api.ops.incidents import IncidentBoard
from server.market.freshness import Level
from server.store.accounts.console_store import ConsoleStore
from server.store.incidents.model import IncidentStatus
from server.store.sql.storage import SqliteStorage

T0 = 1_790_000_000.0
OK, DEGRADED, MAJOR = Level.OPERATIONAL, Level.DEGRADED, Level.MAJOR


class Inputs:
    """What the hub hands the watch, set by the test."""

    def __init__(self) -> None:
        self.now = T0
        self.storage_ok: bool | None = True
        self.feed = OK
        self.leading = True

    def levels(self, now: float) -> list[tuple[str, str, Level]]:
        return [("rest", "REST API", OK), ("feed:ice-eu", "Feed: ICE Futures Europe", self.feed)]


def _watch(tmp_path: Path, inputs: Inputs) -> tuple[IncidentWatch, IncidentBoard, SqliteStorage]:
    storage = SqliteStorage(tmp_path / "data")
    store = ConsoleStore(storage)
    board = IncidentBoard(store, lambda: inputs.now)
    watch = IncidentWatch(board, store, inputs.levels, lambda: inputs.storage_ok, lambda: inputs.leading,
                          lambda: inputs.now, 300.0, 60.0)
    return watch, board, storage


def test_feed_changes_rule() -> None:
    levels = [("rest", "REST", MAJOR), ("feed:a", "A", MAJOR), ("feed:b", "B", DEGRADED), ("feed:c", "C", OK)]
    assert feed_changes(levels, set()) == ([("feed:a", "A")], [])
    assert feed_changes(levels, {"feed:a", "feed:b", "feed:c"}) == ([], ["feed:c"])  # degraded: not yet healthy


def test_a_feed_outage_opens_one_incident_and_its_return_resolves_it(tmp_path: Path) -> None:
    inputs = Inputs()
    watch, board, storage = _watch(tmp_path, inputs)

    async def scenario() -> None:
        await watch.check()
        assert board.incidents() == []
        inputs.feed, inputs.leading = MAJOR, False
        await watch.check()
        assert board.incidents() == []  # not the lease holder: another hub acts
        inputs.leading = True
        for _ in range(3):
            inputs.now += 1
            await watch.check()
        opened, = board.unresolved()
        assert opened.auto_key == "feed:ice-eu" and opened.components == ("feed:ice-eu",)
        assert "5 minutes" in opened.updates[0].body
        inputs.feed = DEGRADED  # ticks have not come back: still open
        await watch.check()
        assert board.unresolved() == [opened]
        inputs.feed = OK
        inputs.now += 60
        await watch.check()
        done, = board.incidents()
        assert done.id == opened.id and done.status is IncidentStatus.RESOLVED and done.resolved_at == inputs.now
        assert [u.status for u in done.updates] == [IncidentStatus.RESOLVED, IncidentStatus.INVESTIGATING]

    try:
        asyncio.run(scenario())
    finally:
        storage.close()


def test_a_storage_outage_is_shown_at_once_and_written_when_storage_returns(tmp_path: Path) -> None:
    inputs = Inputs()
    watch, board, storage = _watch(tmp_path, inputs)

    async def scenario() -> None:
        inputs.storage_ok = False
        await watch.check()
        inputs.now += 59
        await watch.check()
        assert board.unresolved() == []  # under a minute: nothing yet
        inputs.now += 1
        await watch.check()
        held, = board.unresolved()  # on the board (and so /api/v1/status) while storage cannot take it
        assert held.auto_key == "storage" and held.created_at == T0 + 60
        inputs.now += 1
        await watch.check()
        assert board.unresolved() == [held]  # one, not one per check
        inputs.storage_ok, inputs.now = True, T0 + 90
        await watch.check()
        written, = board.incidents()
        assert written.resolved and (written.created_at, written.resolved_at) == (T0 + 60, T0 + 90)
        assert board.local == {}
        assert "since 2026-" in written.updates[-1].body  # when storage stopped answering (T0 in Shanghai time)

    try:
        asyncio.run(scenario())
    finally:
        storage.close()


def test_only_the_lease_holder_writes_a_storage_outage(tmp_path: Path) -> None:
    inputs = Inputs()
    inputs.leading = False
    watch, board, storage = _watch(tmp_path, inputs)

    async def scenario() -> None:
        inputs.storage_ok = False
        await watch.check()
        inputs.now += 61
        await watch.check()
        assert len(board.unresolved()) == 1  # every hub shows it
        inputs.storage_ok = True
        await watch.check()
        assert board.incidents() == []  # the lease holder writes it; this hub only forgets its copy

    try:
        asyncio.run(scenario())
    finally:
        storage.close()


def test_the_status_routes_answer_from_the_board_s_copy_while_storage_is_gone(tmp_path: Path) -> None:
    """The board read once, then storage closed (every call refused): a refresh fails, and both routes still answer
    from the copy, /api/v1/status/incidents saying when it was read."""
    import orjson
    import pytest

    from server.api.core.types import Request
    from server.api.ops.incidents import IncidentsApi
    from server.api.ops.status import Component, StatusApi, up_down
    from server.market.freshness import Freshness
    from server.store.incidents.model import Impact
    from server.store.incidents.repo import IncidentRepo
    from server.store.sql.storage import StorageClosed

    inputs = Inputs()
    _, board, storage = _watch(tmp_path, inputs)

    async def scenario() -> None:
        await board.store.write(lambda r: IncidentRepo(r.db).open("Delayed quotes", Impact.CRITICAL, [], "x", T0))
        await board.refresh()
        storage.close()
        inputs.now += 30
        with pytest.raises(StorageClosed):
            await board.refresh()

    asyncio.run(scenario())
    listed = orjson.loads(IncidentsApi(board, lambda: inputs.now).incidents(
        Request("GET", "/api/v1/status/incidents", "")).body)
    assert [i["name"] for i in listed["incidents"]] == ["Delayed quotes"] and listed["asOf"].startswith("2026-")
    rest = Component("rest", "REST API", up_down(lambda: True))
    status = StatusApi([rest], Freshness([], {}, 60, 0), {}, lambda: inputs.now, board)
    summary = orjson.loads(status.status(Request("GET", "/api/v1/status", "")).body)
    assert summary["status"]["indicator"] == "critical" and summary["incidents"][0]["impact"] == "critical"
