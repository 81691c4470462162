"""Closed daily candles of a live (non-demo) feed, persisted so a restart keeps history."""

from __future__ import annotations

from datetime import date

Candle = tuple[str, date, float, float, float, float, float]
CHUNK = 1000  # rows per write transaction: a bulk import never holds the write lock for long
