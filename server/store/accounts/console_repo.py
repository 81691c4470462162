"""The console's synchronous repository (SPEC 17) over a `Db` (server/store/accounts/console.py): the same SQL on
SQLite and PostgreSQL. The hub calls it off the loop (server/store/accounts/console_store.py), the CLI directly.

Invariants: an account's active keys carry the account's plan and (enterprise) rate, written in the transaction
that changes the plan, so every hub's key refresh (each second) applies a plan change; a rotated key is revoked and
replaced by a new key (a new id), so the revocation seam closes the old secret's sessions everywhere.
"""

from __future__ import annotations

from typing import Any

from server.core.keys import hash_key, new_key
from server.store.accounts.console import (
    KEY_CAPS,
    Account,
    CapReached,
    ConsoleKey,
    Db,
    Event,
    EventKind,
    Role,
    UsageCounts,
    UsageRow,
    account_from_row,
    event_from_row,
    key_from_row,
)
from server.store.accounts.console_plans import PlanRequests
from server.store.accounts.users import normalize_email
from server.store.outbox.queue import JOB_COLUMNS, job_rows
from server.store.site.records import new_record_id

ACCOUNT_COLUMNS = "id, email, name, company, plan, role, rate, created_at, disabled_at"
KEY_COLUMNS = "id, label, plan, rate, prefix, created_at, last_used_at, revoked_at, scope"
MAX_EVENTS = 500
PREFIX_CHARS = 8  # "mk_" and five characters of the secret: enough to tell keys apart, far too few to guess


class ConsoleRepo:
    def __init__(self, db: Db) -> None:
        self.db = db

    # --- accounts -----------------------------------------------------------------------------------------------
    def account(self, user_id: str) -> Account | None:
        rows = self.db.rows(f"SELECT {ACCOUNT_COLUMNS} FROM users WHERE id = ?", (user_id,))
        return account_from_row(rows[0]) if rows else None

    def account_by_email(self, email: str) -> Account | None:
        rows = self.db.rows(f"SELECT {ACCOUNT_COLUMNS} FROM users WHERE email = ?", (normalize_email(email),))
        return account_from_row(rows[0]) if rows else None

    def set_role(self, email: str, role: Role) -> bool:
        return self.db.run("UPDATE users SET role = ? WHERE email = ?", (role.value, normalize_email(email))) > 0

    def set_plan(self, user_id: str, plan: str, rate: int | None) -> None:
        """The account's plan, and every active key of it (in the caller's transaction, or one of its own)."""
        key_rate = rate if plan == "enterprise" else None
        with self.db.transaction():
            self.db.run("UPDATE users SET plan = ?, rate = ? WHERE id = ?", (plan, key_rate, user_id))
            self.db.run("UPDATE api_keys SET plan = ?, rate = ? WHERE owner_id = ? AND revoked_at IS NULL",
                        (plan, key_rate, user_id))

    def change_plan(self, email: str, plan: str, rate: int | None, now: float) -> Account | None:
        """An operator's plan change (up or down, SPEC 17), with its audit event; None: no such account."""
        with self.db.transaction():
            account = self.account_by_email(email)
            if account is None:
                return None
            self.set_plan(account.id, plan, rate)
            self.add_event(account.id, EventKind.PLAN_CHANGED, None, plan + (f" ({rate}/min)" if rate else ""),
                           None, now)
        return account

    # --- keys ---------------------------------------------------------------------------------------------------
    def keys_of(self, user_id: str) -> list[ConsoleKey]:
        rows = self.db.rows(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE owner_id = ? ORDER BY created_at, id",
                            (user_id,))
        return [key_from_row(r) for r in rows]

    def key_of(self, user_id: str, key_id: str) -> ConsoleKey | None:
        rows = self.db.rows(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE owner_id = ? AND id = ?", (user_id, key_id))
        return key_from_row(rows[0]) if rows else None

    def create_key(self, account: Account, label: str | None, now: float, ip: str | None,
                   scope: str = "read") -> tuple[ConsoleKey, str]:
        """A new key of the account, within its plan's cap (CapReached); its secret, shown once. `scope`: read, or
        ingest (SPEC 20: publishes to the account's own instruments, reads nothing)."""
        with self.db.transaction():
            fresh = self._lock_account(account.id)
            cap = KEY_CAPS.get(fresh.plan, 1)
            active = self.db.rows("SELECT COUNT(*) AS n FROM api_keys WHERE owner_id = ? AND revoked_at IS NULL",
                                  (fresh.id,))[0]["n"]
            if active >= cap:
                raise CapReached(fresh.plan, cap)
            key, secret = self._insert_key(fresh, label, now, scope)
            self.add_event(fresh.id, EventKind.CREATED, key.id, label, ip, now)
        return key, secret

    def rotate_key(self, user_id: str, key_id: str, now: float, ip: str | None) -> tuple[ConsoleKey, str] | None:
        """Revoke an active key and make its successor (same label, a new id and secret); None if not found."""
        with self.db.transaction():
            account = self._lock_account(user_id)
            if self._revoke(user_id, key_id, now) == 0:
                return None
            old = self.key_of(user_id, key_id)
            key, secret = self._insert_key(account, old.label if old else None, now, old.scope if old else "read")
            self.add_event(user_id, EventKind.ROTATED, key.id, f"replaces {key_id}", ip, now)
        return key, secret

    def revoke_key(self, user_id: str, key_id: str, now: float, ip: str | None) -> bool:
        with self.db.transaction():
            if self._revoke(user_id, key_id, now) == 0:
                return False
            self.add_event(user_id, EventKind.REVOKED, key_id, None, ip, now)
        return True

    def relabel_key(self, user_id: str, key_id: str, label: str | None, now: float, ip: str | None) -> bool:
        with self.db.transaction():
            sql = "UPDATE api_keys SET label = ? WHERE owner_id = ? AND id = ?"
            if self.db.run(sql, (label, user_id, key_id)) == 0:
                return False
            self.add_event(user_id, EventKind.RELABELLED, key_id, label, ip, now)
        return True

    def _revoke(self, user_id: str, key_id: str, now: float) -> int:
        return self.db.run("UPDATE api_keys SET revoked_at = ? WHERE owner_id = ? AND id = ? AND revoked_at IS NULL",
                           (now, user_id, key_id))

    def _insert_key(self, account: Account, label: str | None, now: float,
                    scope: str = "read") -> tuple[ConsoleKey, str]:
        rate = account.rate if account.plan == "enterprise" else None
        key, secret = new_key(account.plan, rate, label, now)
        prefix = secret[:PREFIX_CHARS]
        self.db.run("INSERT INTO api_keys (id, key_hash, plan, rate, label, created_at, owner_id, prefix, scope) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key.id, hash_key(secret), account.plan, rate, label, now, account.id, prefix, scope))
        return ConsoleKey(key.id, label, account.plan, rate, prefix, now, None, None, scope), secret

    def _lock_account(self, user_id: str) -> Account:
        """Inside a transaction: hold the account's row (PostgreSQL: a row lock; SQLite: the write lock)."""
        self.db.run("UPDATE users SET plan = plan WHERE id = ?", (user_id,))
        account = self.account(user_id)
        if account is None:
            raise LookupError(user_id)
        return account

    # --- events -------------------------------------------------------------------------------------------------
    def add_event(self, user_id: str, kind: EventKind, key_id: str | None, detail: str | None, ip: str | None,
                  now: float) -> None:
        self.db.run("INSERT INTO console_events (id, user_id, at, kind, key_id, detail, ip) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (new_record_id("evt", now), user_id, now, kind.value, key_id, detail, ip))

    def events(self, user_id: str, limit: int = MAX_EVENTS) -> list[Event]:
        rows = self.db.rows("SELECT id, at, kind, key_id, detail, ip FROM console_events WHERE user_id = ? "
                            "ORDER BY at DESC, id DESC LIMIT ?", (user_id, limit))
        return [event_from_row(r) for r in rows]

    # --- usage --------------------------------------------------------------------------------------------------
    def add_usage(self, counts: UsageCounts, last_used: dict[str, float]) -> None:
        """Add a hub's counts (several hubs add to the same rows) and note when each key was last used."""
        rows = [(key_id, day, *values) for (key_id, day), values in counts.items()]
        with self.db.transaction():
            self.db.many(
                "INSERT INTO console_usage (key_id, day, requests, refused, client_errors, ws_connections, "
                "ws_messages) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key_id, day) DO UPDATE SET "
                "requests = console_usage.requests + excluded.requests, "
                "refused = console_usage.refused + excluded.refused, "
                "client_errors = console_usage.client_errors + excluded.client_errors, "
                "ws_connections = console_usage.ws_connections + excluded.ws_connections, "
                "ws_messages = console_usage.ws_messages + excluded.ws_messages", rows)
            self.db.many("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND "
                         "(last_used_at IS NULL OR last_used_at < ?)",
                         [(at, key_id, at) for key_id, at in last_used.items()])

    def usage(self, user_id: str, first: str, last: str, key_id: str | None) -> list[UsageRow]:
        sql = ("SELECT u.key_id, u.day, u.requests, u.refused, u.client_errors, u.ws_connections, u.ws_messages "
               "FROM console_usage u JOIN api_keys k ON k.id = u.key_id "
               "WHERE k.owner_id = ? AND u.day >= ? AND u.day <= ?")
        params: list[Any] = [user_id, first, last]
        if key_id is not None:
            sql += " AND u.key_id = ?"
            params.append(key_id)
        rows = self.db.rows(sql + " ORDER BY u.day, u.key_id", params)
        return [UsageRow(r["key_id"], r["day"], r["requests"], r["refused"], r["client_errors"],
                         r["ws_connections"], r["ws_messages"]) for r in rows]

    @property
    def plans(self) -> PlanRequests:
        """Subscription requests and their decisions (server/store/accounts/console_plans.py)."""
        return PlanRequests(self)


def mail_owner(repo: ConsoleRepo, kind: str, user_id: str, email: str, payload: dict[str, Any], now: float) -> None:
    """One outbox job e-mailing the account's own address (a lockout, issue 45): the worker delivers it."""
    repo.db.many(f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 11)})",
                 job_rows(kind, user_id, payload, [("email", email)], now))
