"""Writing notification jobs in the record's own transaction (the outbox pattern).

The public-site handlers call every `server.store.records.AFTER_INSERT` hook
inside the transaction that inserts an inquiry or cooperation record; while
the hub runs, one of those hooks is an `OutboxHook` bound to the configured
channels, so the record and its jobs commit together or not at all.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from server.notify.channels import Channel
from server.store.outbox import OutboxRepo


def enqueue_jobs(conn: sqlite3.Connection, kind: str, record_id: str, payload: Mapping[str, Any],
                 channels: Sequence[Channel] = (), now: float | None = None) -> int:
    """Insert one pending job per channel on `conn` (in the caller's transaction); returns how many."""
    if not channels:
        return 0
    when = time.time() if now is None else now
    return OutboxRepo(conn).add(kind, record_id, dict(payload), [(c.kind, c.target) for c in channels], when)


class OutboxHook:
    """An AFTER_INSERT hook bound to the hub's channels; `wake` tells the worker (any thread may call it)."""

    def __init__(self, channels: Sequence[Channel], clock: Callable[[], float], wake: Callable[[], None]) -> None:
        self.channels = tuple(channels)
        self.clock = clock
        self.wake = wake

    def __call__(self, conn: sqlite3.Connection, kind: str, record_id: str, payload: dict) -> None:  # type: ignore[type-arg]
        if enqueue_jobs(conn, kind, record_id, payload, self.channels, self.clock()):
            self.wake()
