"""Inquiry and cooperation records.

`AFTER_INSERT` hooks run INSIDE the SQLite transaction that inserts a record,
called as `hook(conn, kind, record_id, payload)` with kind "inquiry" or
"cooperation" and payload the record's fields (including id and createdAt).
The outbox worker registers one while it runs, so the record and its
notification jobs commit (or roll back) together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

AFTER_INSERT: list[Callable[[sqlite3.Connection, str, str, dict], None]] = []  # type: ignore[type-arg]
