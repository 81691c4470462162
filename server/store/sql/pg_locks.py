"""PostgreSQL advisory locks, one per purpose and schema (parallel test runs use schemas of their own)."""

from __future__ import annotations

EVIDENCE_LOCK = "market-evidence:"  # leaf indexes gap-free; one anchoring batch at a time
MIGRATE_LOCK = "market-migrate:"  # one migrating (and seeding) process at a time
DEMO_KEY_LOCK = "market-demo-key:"  # two hubs starting together make one demo key


def lock_sql(name: str) -> str:
    """A transaction-scoped advisory lock on `name` in the current schema."""
    return f"SELECT pg_advisory_xact_lock(hashtext('{name}' || current_schema()))"
RECEIPTS_LOCK = "market-receipts:"  # a receipt chunk's check-then-write, serialised between processes
