"""The incidents' synchronous repository over a `Db` (server/store/accounts/console.py): the same SQL on SQLite and
PostgreSQL. The hub calls it off the loop through the console's store (`store.write(lambda r:
IncidentRepo(r.db).open(...))`), the CLI directly.

Invariants: an incident and each of its updates are written in one transaction; a status change is one UPDATE
guarded by the status it was read with, so two writers cannot both move an incident along one edge (the second gets
IllegalTransition); an automatic incident's `auto_key` is unique among unresolved incidents (the schema's partial
index), so two hubs that both see a feed go silent open one incident; each update's e-mail jobs are written once
(`notify_pending`: idempotency ids per update and account, and the update marked in the same transaction).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import orjson

from server.core.transitions import IllegalTransition
from server.market.timefmt import iso
from server.store.accounts.console import Db
from server.store.incidents.model import (
    TRANSITIONS,
    Impact,
    Incident,
    IncidentStatus,
    Maintenance,
    NoSuchIncident,
    Update,
)
from server.store.outbox.jobs import JobState
from server.store.outbox.queue import JOB_COLUMNS, new_job_id
from server.store.sql.errors import integrity_errors

INCIDENT_COLUMNS = "id, title, status, impact, components, auto_key, created_at, updated_at, resolved_at"
MAINTENANCE_COLUMNS = "id, title, scheduled_for, scheduled_until, created_at"
RECENT = 50  # GET /api/v1/status/incidents: the newest this many, resolved or not
NOTIFY_WINDOW_S = 3600.0  # an update older than this when first seen by a hub with mail is marked, not mailed
RECORD_KIND = "incident"
# an account is told when it chose so, or (no choice stored) when it is on the enterprise plan
RECIPIENTS = ("SELECT u.id AS id, u.email AS email FROM users u LEFT JOIN incident_mail m ON m.user_id = u.id "
              "WHERE u.disabled_at IS NULL AND COALESCE(m.enabled, CASE WHEN u.plan = 'enterprise' THEN 1 ELSE 0 "
              "END) = 1 ORDER BY u.id")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(6)}"


class IncidentRepo:
    def __init__(self, db: Db) -> None:
        self.db = db

    # --- incidents ------------------------------------------------------------------------------------------------
    def open(self, title: str, impact: Impact, components: Sequence[str], body: str, now: float,
             auto_key: str | None = None) -> Incident | None:
        """A new incident (investigating) with its first update; None when `auto_key` names one still open."""
        inc_id = new_id("inc")
        try:
            with self.db.transaction():
                self.db.run(f"INSERT INTO incidents ({INCIDENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (inc_id, title, IncidentStatus.INVESTIGATING.value, impact.value,
                             orjson.dumps(list(components)).decode(), auto_key, now, now, None))
                self._add_update(inc_id, IncidentStatus.INVESTIGATING, body, now)
        except integrity_errors():
            if auto_key is None:
                raise
            return None
        return self.get(inc_id)

    def update(self, inc_id: str, status: IncidentStatus, body: str, now: float) -> Incident:
        """An update (NoSuchIncident; IllegalTransition for a resolved incident or a concurrent change)."""
        with self.db.transaction():
            current = self._status(inc_id)
            TRANSITIONS.check(current, status, inc_id)
            resolved_at = now if status is IncidentStatus.RESOLVED else None
            changed = self.db.run("UPDATE incidents SET status = ?, updated_at = ?, resolved_at = ? "
                                  "WHERE id = ? AND status = ?", (status.value, now, resolved_at, inc_id,
                                                                  current.value))
            if changed == 0:
                raise IllegalTransition("incident", current, status, inc_id)
            self._add_update(inc_id, status, body, now)
        found = self.get(inc_id)
        assert found is not None
        return found

    def resolve_auto(self, auto_key: str, body: str, now: float) -> Incident | None:
        """Resolve the open automatic incident of `auto_key`; None when there is none (or another hub won)."""
        rows = self.db.rows("SELECT id FROM incidents WHERE auto_key = ? AND resolved_at IS NULL", (auto_key,))
        if not rows:
            return None
        try:
            return self.update(rows[0]["id"], IncidentStatus.RESOLVED, body, now)
        except (IllegalTransition, NoSuchIncident):
            return None

    def record_past(self, title: str, impact: Impact, components: Sequence[str], auto_key: str,
                    opened: tuple[float, str], resolved: tuple[float, str]) -> Incident | None:
        """An automatic incident that could not be written while it lasted (storage was out): opened and resolved
        at their own times, in one transaction; None when one of `auto_key` was opened since `opened` (another hub
        recorded the same outage)."""
        (opened_at, open_body), (resolved_at, resolved_body) = opened, resolved
        with self.db.transaction():
            if self.db.rows("SELECT 1 FROM incidents WHERE auto_key = ? AND created_at >= ? LIMIT 1",
                            (auto_key, opened_at - 60.0)):
                return None
            inc = self.open(title, impact, components, open_body, opened_at, auto_key)
            if inc is None:
                return None
            return self.update(inc.id, IncidentStatus.RESOLVED, resolved_body, resolved_at)

    def get(self, inc_id: str) -> Incident | None:
        rows = self.db.rows(f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?", (inc_id,))
        return self._with_updates(rows)[0] if rows else None

    def recent(self, limit: int = RECENT) -> list[Incident]:
        """The newest `limit` incidents and every unresolved one, newest first, each with its updates."""
        rows = self.db.rows(f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE resolved_at IS NULL OR id IN "
                            "(SELECT id FROM incidents ORDER BY created_at DESC, id DESC LIMIT ?) "
                            "ORDER BY created_at DESC, id DESC", (limit,))
        return self._with_updates(rows)

    # --- maintenance ----------------------------------------------------------------------------------------------
    def add_maintenance(self, title: str, start: float, until: float, now: float) -> Maintenance:
        m = Maintenance(new_id("mnt"), title, start, until, now)
        self.db.run(f"INSERT INTO maintenances ({MAINTENANCE_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                    (m.id, m.title, m.scheduled_for, m.scheduled_until, m.created_at))
        return m

    def maintenances(self, limit: int = RECENT) -> list[Maintenance]:
        """Every maintenance not yet over and the newest `limit` others, by start."""
        rows = self.db.rows(f"SELECT {MAINTENANCE_COLUMNS} FROM maintenances ORDER BY scheduled_until DESC, id DESC "
                            "LIMIT ?", (limit,))
        return sorted((Maintenance(r["id"], r["title"], r["scheduled_for"], r["scheduled_until"], r["created_at"])
                       for r in rows), key=lambda m: (m.scheduled_for, m.id))

    # --- who is told ----------------------------------------------------------------------------------------------
    def mail_choice(self, user_id: str) -> bool | None:
        rows = self.db.rows("SELECT enabled FROM incident_mail WHERE user_id = ?", (user_id,))
        return bool(rows[0]["enabled"]) if rows else None

    def set_mail(self, user_id: str, enabled: bool, now: float) -> None:
        self.db.run("INSERT INTO incident_mail (user_id, enabled, updated_at) VALUES (?, ?, ?) ON CONFLICT (user_id) "
                    "DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at",
                    (user_id, int(enabled), now))

    def has_unnotified(self) -> bool:
        """An update waits for its e-mail jobs (a read: the hubs ask each board refresh, and write only then)."""
        return bool(self.db.rows("SELECT 1 FROM incident_updates WHERE notified_at IS NULL LIMIT 1"))

    def notify_pending(self, now: float, window_s: float = NOTIFY_WINDOW_S) -> int:
        """One e-mail job per update not yet notified and per account told of incidents, in one transaction with
        the update's mark; returns the jobs written. A job's idempotency id is `incident:{update}:{account}`, so a
        second hub doing the same at once writes nothing more (ON CONFLICT DO NOTHING)."""
        written = 0
        with self.db.transaction():
            pending = self.db.rows("SELECT u.id AS id, u.incident_id AS incident_id, u.status AS status, u.body AS "
                                   "body, u.created_at AS created_at FROM incident_updates u "
                                   "WHERE u.notified_at IS NULL ORDER BY u.created_at, u.id")
            if not pending:
                return 0
            recipients = self.db.rows(RECIPIENTS)
            for upd in pending:
                inc = self.get(upd["incident_id"])
                if inc is not None and upd["created_at"] >= now - window_s and recipients:
                    rows = [self._job(inc, upd, r["id"], r["email"], now) for r in recipients]
                    self.db.many(f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 11)}) "
                                 "ON CONFLICT (idempotency_id) DO NOTHING", rows)
                    written += len(rows)
                self.db.run("UPDATE incident_updates SET notified_at = ? WHERE id = ?", (now, upd["id"]))
        return written

    # --- helpers --------------------------------------------------------------------------------------------------
    def _status(self, inc_id: str) -> IncidentStatus:
        rows = self.db.rows("SELECT status FROM incidents WHERE id = ?", (inc_id,))
        if not rows:
            raise NoSuchIncident(inc_id)
        return IncidentStatus(rows[0]["status"])

    def _add_update(self, inc_id: str, status: IncidentStatus, body: str, now: float) -> None:
        self.db.run("INSERT INTO incident_updates (id, incident_id, status, body, created_at) VALUES (?, ?, ?, ?, ?)",
                    (new_id("upd"), inc_id, status.value, body, now))

    def _with_updates(self, rows: list[dict[str, Any]]) -> list[Incident]:
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        found: dict[str, list[Update]] = {i: [] for i in ids}
        for u in self.db.rows("SELECT id, incident_id, status, body, created_at FROM incident_updates WHERE "
                              f"incident_id IN ({', '.join('?' * len(ids))}) ORDER BY created_at DESC, id DESC", ids):
            found[u["incident_id"]].append(Update(u["id"], IncidentStatus(u["status"]), u["body"], u["created_at"]))
        return [Incident(r["id"], r["title"], IncidentStatus(r["status"]), Impact(r["impact"]),
                         tuple(orjson.loads(r["components"])), r["auto_key"], r["created_at"], r["updated_at"],
                         r["resolved_at"], tuple(found[r["id"]])) for r in rows]

    @staticmethod
    def _job(inc: Incident, upd: dict[str, Any], user_id: str, email: str, now: float) -> tuple[Any, ...]:
        payload = {"title": inc.title, "status": upd["status"], "impact": inc.impact.value,
                   "components": ", ".join(inc.components) or None, "message": upd["body"],
                   "createdAt": iso(upd["created_at"]), "update": upd["id"]}
        return (new_job_id(), RECORD_KIND, inc.id, "email", email, orjson.dumps(payload).decode(),
                JobState.PENDING.value, now, f"incident:{upd['id']}:{user_id}", now, now)
