"""Closed daily candles of a live (non-demo) feed, persisted so a restart keeps history."""

from __future__ import annotations

import sqlite3
from datetime import date

from server.store.sqlite_tx import transaction

Candle = tuple[str, date, float, float, float, float, float]
CHUNK = 1000  # rows per write transaction: a bulk import never holds the write lock for long


class CandleRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def upsert(self, candles: list[Candle], chunk: int = CHUNK) -> None:
        """Insert or replace candles, `chunk` rows per transaction (an upsert is idempotent, so a
        failure part-way leaves nothing a re-run would not fix)."""
        rows = [(i, d.isoformat(), o, h, lo, c, v) for i, d, o, h, lo, c, v in candles]
        for start in range(0, len(rows), chunk):
            with transaction(self.conn):
                self.conn.executemany(
                    "INSERT INTO candles (instrument, day, o, h, l, c, v) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (instrument, day) DO UPDATE SET o=excluded.o, h=excluded.h, l=excluded.l, "
                    "c=excluded.c, v=excluded.v",
                    rows[start:start + chunk],
                )

    def since(self, first_day: date) -> list[Candle]:
        rows = self.conn.execute(
            "SELECT instrument, day, o, h, l, c, v FROM candles WHERE day >= ? ORDER BY day",
            (first_day.isoformat(),),
        )
        return [(r[0], date.fromisoformat(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]
