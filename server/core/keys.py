"""API keys: stored only as SHA-256 hashes; the secret is shown once at creation.

Keys are 192-bit random tokens, so a fast hash is the right one here (a slow
KDF protects low-entropy passwords, not random keys) and lookup stays O(1).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

KEY_PREFIX = "mk_"


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    plan: str
    rate: int | None
    label: str | None
    created_at: float
    revoked_at: float | None
    owner: str | None = None  # the console account that made it (None: made by the CLI)
    scope: str = "read"  # read, or ingest: publishes to the account's dedicated data source, reads nothing (SPEC 20)
    # the account's ticks a second set by an operator (`users limits`), read with the key; None: the hub's
    # --ingest-rate (the enterprise plan's default, docs/ingest.md)
    ticks_per_second: int | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key(plan: str, rate: int | None, label: str | None, now: float) -> tuple[ApiKey, str]:
    """A new key and its secret (shown once; only its hash is stored)."""
    return ApiKey("key_" + secrets.token_hex(6), plan, rate, label, now, None), KEY_PREFIX + secrets.token_urlsafe(24)


def key_from_row(row: Any) -> ApiKey:
    names = row.keys()
    return ApiKey(row["id"], row["plan"], row["rate"], row["label"], row["created_at"], row["revoked_at"],
                  row["owner_id"] if "owner_id" in names else None, row["scope"] if "scope" in names else "read",
                  row["ticks_per_second"] if "ticks_per_second" in names else None)
