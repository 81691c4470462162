"""Dedicated data sources' repository (SPEC 20, docs/ingest.md) over the console's `Db` seam: the same SQL on SQLite
and PostgreSQL, run off the loop by the hub (ConsoleStore) or directly by the CLI.

Invariants: a namespace belongs to one account (a unique index), only to an enterprise account or an operator; an
instrument id is `{namespace}.{name}`; each declared instrument holds one reserved market-state row (`slot`, unique,
never reused: a deleted instrument keeps it), so every hub binds the same instrument to the same row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from server.store.accounts.console import Account, Db, Role, account_from_row
from server.store.accounts.console_repo import ACCOUNT_COLUMNS
from server.store.accounts.users import normalize_email

NAMESPACE = re.compile(r"[a-z][a-z0-9-]{1,31}")
# declared (not deleted) instruments per account, the enterprise plan's default; an operator sets an account's own
# (`users limits EMAIL --instruments N`); the hub's reserved rows bound the total
MAX_PER_ACCOUNT = 100
MAX_INSTRUMENT_CAP = 10_000  # as --custom-instruments
MAX_TICKS_PER_SECOND = 1_000_000  # as --ingest-rate
LIMIT_COLUMNS = {"instruments": "instrument_cap", "ticks_per_second": "ticks_per_second"}
COLUMNS = ("id, owner_id, slot, name_zh, name_en, unit_zh, unit_en, currency, decimals, venue, session, created_at, "
           "deleted_at")


class NotEntitled(Exception):
    """The account is neither on the enterprise plan nor an operator."""


class TakenNamespace(Exception):
    """Another account holds the namespace."""


class Refused(Exception):
    """A declaration the account may not make (`code`: duplicate, account_cap, no_rows)."""

    def __init__(self, code: str, detail: str, limit: int | None = None) -> None:
        super().__init__(detail)
        self.code, self.limit = code, limit


@dataclass(frozen=True, slots=True)
class Limits:
    """An account's limits as an operator set them (`users limits`); None: the enterprise plan's default."""

    instruments: int | None = None
    ticks_per_second: int | None = None

    @property
    def instrument_cap(self) -> int:
        return MAX_PER_ACCOUNT if self.instruments is None else self.instruments


@dataclass(frozen=True, slots=True)
class Declared:
    id: str
    owner_id: str
    slot: int
    name: dict[str, str]
    unit: dict[str, str]
    currency: str
    decimals: int
    venue: str
    session: str
    created_at: float
    deleted_at: float | None


def declared_from_row(r: dict[str, Any]) -> Declared:
    return Declared(r["id"], r["owner_id"], int(r["slot"]), {"zh": r["name_zh"], "en": r["name_en"]},
                    {"zh": r["unit_zh"], "en": r["unit_en"]}, r["currency"], int(r["decimals"]), r["venue"],
                    r["session"], r["created_at"], r["deleted_at"])


class SourcesRepo:
    def __init__(self, db: Db) -> None:
        self.db = db

    # --- namespaces ---------------------------------------------------------------------------------------------
    def grant_namespace(self, email: str, namespace: str) -> Account | None:
        """An operator's grant (`users namespace EMAIL NS`); None: no such account. NotEntitled, TakenNamespace."""
        with self.db.transaction():
            rows = self.db.rows(f"SELECT {ACCOUNT_COLUMNS} FROM users WHERE email = ?", (normalize_email(email),))
            if not rows:
                return None
            account = account_from_row(rows[0])
            if account.plan != "enterprise" and account.role is not Role.OPERATOR:
                raise NotEntitled(account.email)
            holder = self.db.rows("SELECT id FROM users WHERE namespace = ?", (namespace,))
            if holder and holder[0]["id"] != account.id:
                raise TakenNamespace(namespace)
            self.db.run("UPDATE users SET namespace = ? WHERE id = ?", (namespace, account.id))
        return account

    # --- limits -------------------------------------------------------------------------------------------------
    def limits_of(self, user_id: str) -> Limits:
        rows = self.db.rows("SELECT instrument_cap, ticks_per_second FROM users WHERE id = ?", (user_id,))
        return Limits(rows[0]["instrument_cap"], rows[0]["ticks_per_second"]) if rows else Limits()

    def set_limits(self, email: str, changes: dict[str, int | None]) -> Account | None:
        """An operator's limits for the account (`changes`: `instruments`, `ticks_per_second`; None: back to the
        plan's default); None: no such account. Lowering the instrument cap below the count keeps every instrument
        (only new declarations are refused)."""
        sets = ", ".join(f"{LIMIT_COLUMNS[name]} = ?" for name in changes)
        with self.db.transaction():
            rows = self.db.rows(f"SELECT {ACCOUNT_COLUMNS} FROM users WHERE email = ?", (normalize_email(email),))
            if not rows:
                return None
            if sets:
                self.db.run(f"UPDATE users SET {sets} WHERE id = ?", (*changes.values(), rows[0]["id"]))
        return account_from_row(rows[0])

    def count_of(self, user_id: str) -> int:
        """The account's declared instruments, deleted ones not counted."""
        return int(self.db.rows("SELECT COUNT(*) AS n FROM custom_instruments WHERE owner_id = ? AND "
                                "deleted_at IS NULL", (user_id,))[0]["n"])

    def namespace_of(self, user_id: str) -> str | None:
        rows = self.db.rows("SELECT namespace FROM users WHERE id = ?", (user_id,))
        return rows[0]["namespace"] if rows else None

    # --- instruments --------------------------------------------------------------------------------------------
    def declare(self, account: Account, fields: dict[str, Any], now: float, rows: int) -> Declared:
        """A new instrument of the account on the lowest free reserved row (`rows` of them on every hub)."""
        with self.db.transaction():
            self.db.run("UPDATE users SET plan = plan WHERE id = ?", (account.id,))  # serialise this account's calls
            if self.db.rows("SELECT 1 AS x FROM custom_instruments WHERE id = ?", (fields["id"],)):
                raise Refused("duplicate", f"An instrument {fields['id']} was declared already (ids are not reused).")
            cap, held = self.limits_of(account.id).instrument_cap, self.count_of(account.id)
            if held >= cap:
                raise Refused("account_cap", f"This account may hold {cap} declared instrument"
                              f"{'' if cap == 1 else 's'} (its limit) and holds {held}: delete "
                              "one, or ask the service's operator to raise the limit (a support ticket in the "
                              "console).", cap)
            taken = {r["slot"] for r in self.db.rows("SELECT slot FROM custom_instruments")}
            slot = next((s for s in range(rows) if s not in taken), None)
            if slot is None:
                raise Refused("no_rows", f"Every one of the service's {rows} rows for declared instruments is taken; "
                                         "ask the operator for more (--custom-instruments).", rows)
            values = (fields["id"], account.id, slot, fields["name"]["zh"], fields["name"]["en"], fields["unit"]["zh"],
                      fields["unit"]["en"], fields["currency"], fields["decimals"], fields["venue"],
                      fields.get("session") or "", now, None)
            self.db.run(f"INSERT INTO custom_instruments ({COLUMNS}) VALUES ({', '.join('?' * 13)})", values)
        return declared_from_row(dict(zip([c.strip() for c in COLUMNS.split(",")], values, strict=True)))

    def instruments_of(self, user_id: str) -> list[Declared]:
        rows = self.db.rows(f"SELECT {COLUMNS} FROM custom_instruments WHERE owner_id = ? AND deleted_at IS NULL "
                            "ORDER BY created_at, id", (user_id,))
        return [declared_from_row(r) for r in rows]

    def delete(self, user_id: str, inst_id: str, now: float) -> bool:
        return self.db.run("UPDATE custom_instruments SET deleted_at = ? WHERE owner_id = ? AND id = ? AND "
                           "deleted_at IS NULL", (now, user_id, inst_id)) > 0

    def bound(self) -> list[Declared]:
        """Every instrument a hub binds (not deleted; their owners' disabled accounts included: their keys stop)."""
        rows = self.db.rows(f"SELECT {COLUMNS} FROM custom_instruments WHERE deleted_at IS NULL ORDER BY slot")
        return [declared_from_row(r) for r in rows]
