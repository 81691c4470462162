"""Site accounts: e-mail (stored lower-case, unique), an Argon2id password hash, a disabled flag.

The repository never sees a password, only its hash (server/api/auth/passwords.py makes it).
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from server.store.errors import integrity_errors


class DuplicateEmail(Exception):
    """An account with this e-mail address already exists."""


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    password_hash: str
    name: str | None
    company: str | None
    created_at: float
    disabled_at: float | None

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


def normalize_email(email: str) -> str:
    return email.strip().lower()


def new_user(email: str, password_hash: str, name: str | None, company: str | None, now: float) -> User:
    return User("usr_" + secrets.token_hex(8), normalize_email(email), password_hash, name, company, now, None)


def user_from_row(row: Any) -> User:
    return User(row["id"], row["email"], row["password_hash"], row["name"], row["company"],
                row["created_at"], row["disabled_at"])


class UserRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def create(
        self, email: str, password_hash: str, name: str | None = None, company: str | None = None,
        now: float | None = None,
    ) -> User:
        user = new_user(email, password_hash, name, company, time.time() if now is None else now)
        try:
            self.conn.execute(
                "INSERT INTO users (id, email, password_hash, name, company, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (user.id, user.email, user.password_hash, user.name, user.company, user.created_at),
            )
        except integrity_errors():
            raise DuplicateEmail(user.email) from None
        return user

    def by_email(self, email: str) -> User | None:
        row = self.conn.execute("SELECT * FROM users WHERE email = ?", (normalize_email(email),)).fetchone()
        return user_from_row(row) if row else None

    def by_id(self, user_id: str) -> User | None:
        row = self.conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
        return user_from_row(row) if row else None

    def disable(self, email: str, now: float | None = None) -> bool:
        cur = self.conn.execute(
            "UPDATE users SET disabled_at = ? WHERE email = ? AND disabled_at IS NULL",
            (time.time() if now is None else now, normalize_email(email)),
        )
        return cur.rowcount == 1

    def set_password_hash(self, user_id: str, password_hash: str) -> None:
        self.conn.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))
