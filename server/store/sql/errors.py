"""Database errors either backend raises, for `except` clauses that do not care which one runs."""

from __future__ import annotations

import sqlite3
import sys


def storage_errors(*more: type[Exception]) -> tuple[type[Exception], ...]:
    """What either database raises (plus `more`), for `except storage_errors():` (evaluated when an exception
    is matched). psycopg's errors join once psycopg is loaded: it is imported only for a PostgreSQL URL, so a
    SQLite run never pays its ~0.2 s import (half of a CLI command's start-up)."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.Error, *((pg.Error,) if pg is not None else ()), *more)


def integrity_errors() -> tuple[type[Exception], ...]:
    """A constraint violation (unique, check) from either database."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.IntegrityError, *((pg.IntegrityError,) if pg is not None else ()))


class UnstorableValue(ValueError):
    """A value the database refuses (PostgreSQL: a NUL character in text, psycopg.DataError). Input validation
    rejects such values with a 400 before they reach storage (server/api/site/fields.py); this names the gap
    instead of letting a driver error pass as an internal one. SQLite stores them, so only PostgreSQL raises it."""
