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

from server.store.db import register_schema

SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL CHECK (plan IN ('free', 'professional', 'enterprise')),
    rate INTEGER,
    label TEXT,
    created_at REAL NOT NULL,
    revoked_at REAL
);
"""
register_schema(SCHEMA)

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


def _row(row: Any) -> ApiKey:
    return ApiKey(row["id"], row["plan"], row["rate"], row["label"], row["created_at"], row["revoked_at"])


class KeyRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def create(self, plan: str, rate: int | None = None, label: str | None = None) -> tuple[ApiKey, str]:
        key_id = "key_" + secrets.token_hex(6)
        secret = KEY_PREFIX + secrets.token_urlsafe(24)
        now = time.time()
        self.conn.execute(
            "INSERT INTO api_keys (id, key_hash, plan, rate, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (key_id, hash_key(secret), plan, rate, label, now),
        )
        return ApiKey(key_id, plan, rate, label, now, None), secret

    def list(self) -> list[ApiKey]:
        return [_row(r) for r in self.conn.execute("SELECT * FROM api_keys ORDER BY created_at")]

    def revoke(self, key_id: str) -> bool:
        cur = self.conn.execute(
            "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id)
        )
        return cur.rowcount == 1

    def by_hash(self, key_hash: str) -> ApiKey | None:
        row = self.conn.execute("SELECT * FROM api_keys WHERE key_hash = ?", (key_hash,)).fetchone()
        return _row(row) if row else None

    def active_by_hash(self) -> dict[str, ApiKey]:
        rows = self.conn.execute("SELECT * FROM api_keys WHERE revoked_at IS NULL")
        return {r["key_hash"]: _row(r) for r in rows}

    def revoked_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT id FROM api_keys WHERE revoked_at IS NOT NULL")}
