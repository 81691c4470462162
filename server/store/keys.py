"""API keys: stored only as SHA-256 hashes; the secret is shown once at creation.

Keys are 192-bit random tokens, so a fast hash is the right one here (a slow
KDF protects low-entropy passwords, not random keys) and lookup stays O(1).
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from server.store.sqlite_tx import transaction

KEY_PREFIX = "mk_"


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    plan: str
    rate: int | None
    label: str | None
    created_at: float
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key(plan: str, rate: int | None, label: str | None, now: float) -> tuple[ApiKey, str]:
    """A new key and its secret (shown once; only its hash is stored)."""
    return ApiKey("key_" + secrets.token_hex(6), plan, rate, label, now, None), KEY_PREFIX + secrets.token_urlsafe(24)


def key_from_row(row: Any) -> ApiKey:
    return ApiKey(row["id"], row["plan"], row["rate"], row["label"], row["created_at"], row["revoked_at"])


class KeyRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def create(self, plan: str, rate: int | None = None, label: str | None = None) -> tuple[ApiKey, str]:
        key, secret = new_key(plan, rate, label, time.time())
        self.conn.execute(
            "INSERT INTO api_keys (id, key_hash, plan, rate, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key.id, hash_key(secret), plan, rate, label, key.created_at),
        )
        return key, secret

    def create_demo_key(self) -> str | None:
        """On a new database, one professional demo key and its meta marker in one transaction; its secret, or
        None if this database already had its demo key."""
        with transaction(self.conn):
            if self.conn.execute("SELECT 1 FROM meta WHERE key = 'demo_key'").fetchone():
                return None
            key, secret = self.create("professional", label="demo")
            self.conn.execute("INSERT INTO meta (key, value) VALUES ('demo_key', ?)", (key.id,))
        return secret

    def list(self) -> list[ApiKey]:
        return [key_from_row(r) for r in self.conn.execute("SELECT * FROM api_keys ORDER BY created_at")]

    def revoke(self, key_id: str) -> bool:
        cur = self.conn.execute(
            "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id)
        )
        return cur.rowcount == 1

    def by_hash(self, key_hash: str) -> ApiKey | None:
        row = self.conn.execute("SELECT * FROM api_keys WHERE key_hash = ?", (key_hash,)).fetchone()
        return key_from_row(row) if row else None

    def active_by_hash(self) -> dict[str, ApiKey]:
        rows = self.conn.execute("SELECT * FROM api_keys WHERE revoked_at IS NULL")
        return {r["key_hash"]: key_from_row(r) for r in rows}

    def revoked_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT id FROM api_keys WHERE revoked_at IS NOT NULL")}
