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
from typing import Any
from urllib.parse import quote

import psycopg

from tests.required import unavailable

PG_URL = os.environ.get("MARKET_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _admin() -> psycopg.Connection:
    try:
        return psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        message = (f"PostgreSQL not reachable at {PG_URL} ({str(exc).strip().splitlines()[0]}): start it (or set "
                   "MARKET_TEST_DATABASE_URL) to run the PostgreSQL storage tests")
        unavailable(message)


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


class Row(tuple[Any, ...]):
    """A row readable like sqlite3.Row: row[0], row["column"], dict(row)."""

    names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> tuple[str, ...]:
        return self.names


def _rows(cursor: Any) -> Any:
    cls = type("Row", (Row,), {"names": tuple(c.name for c in cursor.description or ())})
    return lambda values: cls(values)


class QmarkConnection:
    """Tests only: a check the API cannot make, written once in sqlite3's style (`?` placeholders, rows by index
    and by name, `with conn:` commits) and run on a test server's PostgreSQL schema. The server never does this:
    its repositories speak PostgreSQL's dialect (server/store/sql/pg_sync.py, pg_repos.py)."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True, connect_timeout=10)

    def execute(self, sql: str, params: Any = ()) -> Any:
        cur = self.conn.cursor(row_factory=_rows)
        return cur.execute(sql.replace("%", "%%").replace("?", "%s"), params or None)  # type: ignore[arg-type]

    def __enter__(self) -> QmarkConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        pass  # autocommit: each statement is already committed

    def close(self) -> None:
        self.conn.close()
