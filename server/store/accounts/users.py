"""Site accounts: e-mail (stored lower-case, unique), an Argon2id password hash, a disabled flag.

The repositories never see a password, only its hash (server/api/auth/passwords.py makes it).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any


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
