"""Incidents and maintenance in storage (issue 42 item 5), on real SQLite and real PostgreSQL: open, update,
resolve, the automatic incident's one-open-per-key rule, a past outage recorded once, and each update's e-mail
jobs written once per account told (enterprise by default, others by their choice, a disabled account never)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.core.transitions import IllegalTransition
from server.store.accounts.console import PgDb, SqliteDb
from server.store.incidents.model import Impact, IncidentStatus, MaintenanceStatus, NoSuchIncident, worst_impact
from server.store.incidents.repo import IncidentRepo
from server.store.sql.db import open_db
from tests.pg_service import pg_schema

NOW = 1_790_000_000.0
Repo = Callable[[], IncidentRepo]


@pytest.fixture(params=("sqlite", "postgresql"))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IncidentRepo]:
    if request.param == "sqlite":
        conn = open_db(tmp_path / "data")
        try:
            yield IncidentRepo(SqliteDb(conn))
        finally:
            conn.close()
        return
    from server.store.sql.pg import connect, migrate

    with pg_schema() as url, connect(url) as pg:
        migrate(pg)
        yield IncidentRepo(PgDb(pg))


def _user(repo: IncidentRepo, uid: str, plan: str, disabled: bool = False) -> None:
    repo.db.run("INSERT INTO users (id, email, password_hash, created_at, plan, disabled_at) VALUES (?, ?, ?, ?, ?, ?)",
                (uid, f"{uid}@example.com", "h", NOW, plan, NOW if disabled else None))


def _jobs(repo: IncidentRepo) -> list[dict[str, Any]]:
    return repo.db.rows("SELECT record_id, target, idempotency_id FROM outbox_jobs WHERE record_kind = 'incident' "
                        "ORDER BY target, idempotency_id")


def test_open_update_resolve(repo: IncidentRepo) -> None:
    inc = repo.open("Delayed quotes", Impact.MAJOR, ["feed:ice-eu"], "We are looking into it.", NOW)
    assert inc is not None and inc.status is IncidentStatus.INVESTIGATING and inc.components == ("feed:ice-eu",)
    assert [u.body for u in inc.updates] == ["We are looking into it."]
    inc = repo.update(inc.id, IncidentStatus.IDENTIFIED, "A gateway is down.", NOW + 1)
    inc = repo.update(inc.id, IncidentStatus.RESOLVED, "Fixed.", NOW + 2)
    assert inc.resolved and inc.resolved_at == NOW + 2 and inc.updated_at == NOW + 2
    assert [u.status.value for u in inc.updates] == ["resolved", "identified", "investigating"]  # newest first
    with pytest.raises(IllegalTransition):  # resolved is terminal
        repo.update(inc.id, IncidentStatus.MONITORING, "again", NOW + 3)
    with pytest.raises(NoSuchIncident):
        repo.update("inc_nope", IncidentStatus.MONITORING, "x", NOW)
    other = repo.open("Slow stream", Impact.MINOR, [], "Looking.", NOW + 5)
    assert other is not None
    listed = repo.recent()
    assert [i.id for i in listed] == [other.id, inc.id] and worst_impact(listed) is Impact.MINOR


def test_recent_keeps_every_unresolved_one(repo: IncidentRepo) -> None:
    first = repo.open("old but open", Impact.CRITICAL, [], "x", NOW)
    assert first is not None
    for i in range(3):
        made = repo.open(f"n{i}", Impact.MINOR, [], "x", NOW + 10 + i)
        assert made is not None
        repo.update(made.id, IncidentStatus.RESOLVED, "done", NOW + 20 + i)
    assert [i.title for i in repo.recent(limit=2)] == ["n2", "n1", "old but open"]


def test_one_automatic_incident_per_key(repo: IncidentRepo) -> None:
    a = repo.open("Feed stale", Impact.MAJOR, ["feed:ice-eu"], "silent", NOW, auto_key="feed:ice-eu")
    assert a is not None
    assert repo.open("Feed stale", Impact.MAJOR, ["feed:ice-eu"], "silent", NOW + 1, auto_key="feed:ice-eu") is None
    resolved = repo.resolve_auto("feed:ice-eu", "ticks are back", NOW + 2)
    assert resolved is not None and resolved.id == a.id and resolved.resolved
    assert repo.resolve_auto("feed:ice-eu", "again", NOW + 3) is None  # nothing open: a second hub does nothing
    again = repo.open("Feed stale", Impact.MAJOR, ["feed:ice-eu"], "silent", NOW + 4, auto_key="feed:ice-eu")
    assert again is not None and again.id != a.id  # a new outage: a new incident


def test_a_past_outage_is_recorded_once(repo: IncidentRepo) -> None:
    args = ("Storage unavailable", Impact.CRITICAL, ["storage"], "storage")
    inc = repo.record_past(*args, (NOW, "down"), (NOW + 90, "back"))
    assert inc is not None and inc.resolved and inc.created_at == NOW and inc.resolved_at == NOW + 90
    assert repo.record_past(*args, (NOW + 3, "down"), (NOW + 91, "back")) is None  # another hub saw the same one


def test_maintenance_status_follows_the_clock(repo: IncidentRepo) -> None:
    m = repo.add_maintenance("Database upgrade", NOW + 100, NOW + 200, NOW)
    assert [x.id for x in repo.maintenances()] == [m.id]
    assert [m.status(t) for t in (NOW, NOW + 150, NOW + 200)] == [
        MaintenanceStatus.SCHEDULED, MaintenanceStatus.IN_PROGRESS, MaintenanceStatus.COMPLETED]


def test_each_update_is_mailed_once_to_each_account_told(repo: IncidentRepo) -> None:
    _user(repo, "usr_ent", "enterprise")
    _user(repo, "usr_out", "enterprise")  # opted out
    _user(repo, "usr_pro", "professional")  # opted in
    _user(repo, "usr_free", "free")
    _user(repo, "usr_gone", "enterprise", disabled=True)
    repo.set_mail("usr_out", False, NOW)
    repo.set_mail("usr_pro", True, NOW)
    assert (repo.mail_choice("usr_out"), repo.mail_choice("usr_pro"), repo.mail_choice("usr_free")) == (False, True,
                                                                                                          None)
    inc = repo.open("Delayed quotes", Impact.MINOR, [], "Looking.", NOW)
    assert inc is not None
    assert repo.notify_pending(NOW + 1) == 2
    assert repo.notify_pending(NOW + 2) == 0  # nothing new: nothing written
    repo.update(inc.id, IncidentStatus.RESOLVED, "Fixed.", NOW + 3)
    assert repo.notify_pending(NOW + 4) == 2
    jobs = _jobs(repo)
    assert [j["target"] for j in jobs] == ["usr_ent@example.com"] * 2 + ["usr_pro@example.com"] * 2
    assert len({j["idempotency_id"] for j in jobs}) == 4 and {j["record_id"] for j in jobs} == {inc.id}
    # a second writer racing on the same update (its mark not yet seen) adds nothing: the ids are the same
    repo.db.run("UPDATE incident_updates SET notified_at = NULL")
    repo.notify_pending(NOW + 5)
    assert len(_jobs(repo)) == 4
    # an update older than the window (a data dir that ran without mail) is marked, not mailed
    late = repo.open("Old news", Impact.MINOR, [], "x", NOW + 6)
    assert late is not None and repo.notify_pending(NOW + 6 + 7200) == 0 and len(_jobs(repo)) == 4
