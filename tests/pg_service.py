"""Real PostgreSQL for the storage tests: the machine's service, a fresh schema per test, dropped afterwards.

PostgreSQL at MARKET_TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test, trust auth).
Each test gets its own schema `t_<random>` and a URL whose `options=-csearch_path=...` puts every table
there, so parallel runs on one database never see each other's rows (or advisory locks: those are keyed
by schema). When PostgreSQL cannot be reached these tests are skipped with a message saying how to run
them (`./scripts/test` on a machine with only Python), unless MARKET_REQUIRE_SERVICES=1 (`.ci/run`, on a
machine that has the services), which turns that into a failure: the same policy as tests/redis_service.py.

`MARKET_TEST_STORAGE=postgresql` runs the other tests' servers and CLI runs on PostgreSQL too: each data
dir a test uses gets a schema of its own (`database_for`, tests/conftest.py `database_flags`).
"""

from __future__ import annotations

import atexit
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

PG_URL = os.environ.get("MARKET_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _admin() -> psycopg.Connection:
    try:
        return psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        message = (f"PostgreSQL not reachable at {PG_URL} ({str(exc).strip().splitlines()[0]}): start it (or set "
                   "MARKET_TEST_DATABASE_URL) to run the PostgreSQL storage tests")
        if os.environ.get("MARKET_REQUIRE_SERVICES") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def schema_url(schema: str) -> str:
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"


_BY_DATA_DIR: dict[str, str] = {}


def database_for(data_dir: Path) -> str:
    """The schema URL standing in for a data dir's database (MARKET_TEST_STORAGE=postgresql), made on first
    use; every one is dropped when the test process exits."""
    key = str(data_dir.resolve())
    if key not in _BY_DATA_DIR:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with _admin() as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        if not _BY_DATA_DIR:
            atexit.register(_drop_all)
        _BY_DATA_DIR[key] = schema
    return schema_url(_BY_DATA_DIR[key])


def _drop_all() -> None:
    with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as admin:
        for schema in _BY_DATA_DIR.values():
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@contextmanager
def pg_schema() -> Iterator[str]:
    """A database URL whose tables live in a new, empty schema; the schema is dropped at the end."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with _admin() as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema_url(schema)
    finally:
        with _admin() as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
