"""The async repository protocols (server/store/sql/repositories.py) over PostgreSQL (SPEC 12), in its own dialect.

`PgStorage` owns two pools on one database URL:

- an `AsyncConnectionPool` (psycopg 3) for every call a request, the key refresh or the outbox
  worker makes: awaited on the loop, no thread involved;
- a small synchronous pool for the synchronous repositories of server/store/sql/pg_sync.py: start-up and
  shutdown (the demo key, the feed's candle history, the final candle flush) and the evidence log, whose
  Merkle walk reads tree nodes through synchronous callbacks; those evidence calls run on a worker thread
  (`asyncio.to_thread`), never on the loop.

Connections are autocommit; a multi-statement write is one `async with conn.transaction()`.
The outbox claims with `FOR UPDATE SKIP LOCKED`, so several hubs on one database deliver each job once.
A value PostgreSQL refuses (psycopg.DataError: a NUL in text) raises UnstorableValue on a write; a read by such
a value finds nothing, as it would on SQLite, where nothing stored can equal it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import date
from typing import Any, TypeVar, cast

import psycopg
from psycopg import AsyncConnection, Connection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from server.core.keys import ApiKey, key_from_row
from server.evidence import Block
from server.store.accounts.console_schema import OWNER_ENABLED  # issue 32
from server.store.accounts.users import DuplicateEmail, User, new_user, normalize_email, user_from_row
from server.store.history.candle_rows import CHUNK as CANDLE_CHUNK
from server.store.history.candle_rows import Candle, Settlement, between_params, between_sql, write_chunks
from server.store.outbox.jobs import CLAIMABLE, TRANSITIONS, IllegalTransition, JobState, Retry
from server.store.outbox.queue import (
    JOB_COLUMNS,
    MAX_ERROR_CHARS,
    Job,
    JobNotFound,
    job_from_row,
    job_rows,
    predecessors,
    states_in,
)
from server.store.site.content import CONTENT_COLUMNS, ContentKind, item_view
from server.store.site.receipts import PUBLIC_COLUMNS, public_view
from server.store.site.records import ChannelSpec, RecordsService, RecordWrite
from server.store.sources.schema import KEY_ROWS  # SPEC 20: each key with its account's ticks a second
from server.store.sql.errors import UnstorableValue
from server.store.sql.pg import APPLICATION_NAME, connect, migrate
from server.store.sql.pg_sync import UPSERT_CANDLE, UPSERT_SETTLEMENT, PgCandleRepo, PgEvidenceLog, PgKeyRepo, marks
from server.store.sql.repositories import Repositories
from server.store.sql.storage import StorageClosed

T = TypeVar("T")
POOL_SIZE = 10  # async connections per hub (--database-pool)
SYNC_POOL_SIZE = 2  # start-up/shutdown work and evidence (one anchoring task, a few proof lookups)
PING_TIMEOUT_S = 2.0
# a request waits at most this for a pooled connection, then answers 503 storage_unavailable (PostgreSQL away,
# or the pool busy for that long: either way the client should retry)
POOL_WAIT_S = 3.0
# A pool that lost PostgreSQL tries again at least this often, and never gives up. psycopg_pool doubles the delay
# between attempts without bound (1, 2, 4 ... s: a hub once took 53 s to notice that a 7 s outage was over).
# Through its public API: each round of attempts gives up after RECONNECT_MAX_S, and the pool's
# `reconnect_failed` callback starts the next round at once with `check()`, which grows an empty pool.
RECONNECT_MAX_S = 2.0
# A partition (PostgreSQL up, the link dead: no reset, no error) otherwise hangs a query, and the pool's check
# of a connection it lends, until TCP gives up (~15 min): writes on a hub cut off from PostgreSQL hung instead
# of answering 503 (tests/netsim/test_pg_partition.py). libpq's TCP settings bound it: data unacknowledged for
# 3 s, or an idle connection's keepalives unanswered, breaks the connection (psycopg OperationalError: 503).
LINK_TIMEOUTS = {"connect_timeout": 3, "tcp_user_timeout": 3000, "keepalives": 1, "keepalives_idle": 2,
                 "keepalives_interval": 1, "keepalives_count": 2}


def fits_text(value: str) -> bool:
    """False for text PostgreSQL cannot hold (a NUL character): no stored row can equal it."""
    return "\x00" not in value


async def _next_round(pool: AsyncConnectionPool[Any]) -> None:
    if not pool.closed:
        await pool.check()


def _next_round_sync(pool: ConnectionPool[Any]) -> None:
    if not pool.closed:
        pool.check()


def async_pool(url: str, size: int, name: str) -> AsyncConnectionPool[AsyncConnection[DictRow]]:
    """The hub's async pool, not yet open. A connection PostgreSQL dropped (restart, failover) is replaced when
    lent, not handed out; a caller waits at most POOL_WAIT_S for a free connection, then gets an error (a 503)."""
    return AsyncConnectionPool(
        url, min_size=1, max_size=size, open=False, name="market", connection_class=AsyncConnection[DictRow],
        kwargs={"autocommit": True, "row_factory": dict_row, "application_name": name, **LINK_TIMEOUTS},
        check=AsyncConnectionPool.check_connection, timeout=POOL_WAIT_S,
        reconnect_timeout=RECONNECT_MAX_S, reconnect_failed=_next_round,
    )


class PgStorage:
    """One PostgreSQL database for the hub: migrated in the constructor, async pool opened by `open()`."""

    def __init__(self, url: str, pool_size: int = POOL_SIZE, name: str = APPLICATION_NAME) -> None:
        self.url = url
        self.pool_size = pool_size
        self.name = name  # application_name of every connection; an outbox claim records it
        conn = connect(url)  # raises psycopg.OperationalError with the reason if the server is unreachable
        try:
            migrate(conn)  # start-up: before the server accepts anything; concurrent starters wait on a lock
        finally:
            conn.close()
        self.sync_pool: ConnectionPool[Connection[DictRow]] = ConnectionPool(
            url, min_size=1, max_size=SYNC_POOL_SIZE, open=True, name="market-sync", timeout=POOL_WAIT_S,
            connection_class=Connection[DictRow],
            reconnect_timeout=RECONNECT_MAX_S, reconnect_failed=_next_round_sync,
            kwargs={"autocommit": True, "row_factory": dict_row, "application_name": name, **LINK_TIMEOUTS},
            check=ConnectionPool.check_connection,
        )
        self._pool: AsyncConnectionPool[AsyncConnection[DictRow]] | None = None
        self._closed = False

    async def open(self) -> None:
        """Open the async pool on the running loop (the hub's start); waits for its first connection."""
        if self._pool is None:
            self._pool = async_pool(self.url, self.pool_size, self.name)
            await self._pool.open(wait=True, timeout=10.0)

    @property
    def pool(self) -> AsyncConnectionPool[AsyncConnection[DictRow]]:
        if self._closed:
            raise StorageClosed("storage is closed")
        if self._pool is None:
            raise RuntimeError("PgStorage.open() has not run (the hub's start opens the pool)")
        return self._pool

    async def ping(self) -> bool:
        try:
            async with asyncio.timeout(PING_TIMEOUT_S), self.pool.connection() as conn:
                await conn.execute("SELECT 1")
        except (psycopg.Error, StorageClosed, RuntimeError, TimeoutError):
            return False
        return True

    # the synchronous repositories (server/store/sql/pg_sync.py), on the sync pool (see the module docstring)

    def blocking(self, fn: Callable[[Connection[DictRow]], T]) -> T:
        if self._closed:
            raise StorageClosed("storage is closed")
        with self.sync_pool.connection() as conn:
            return fn(conn)

    async def in_thread(self, fn: Callable[[Connection[DictRow]], T]) -> T:
        return await asyncio.to_thread(self.blocking, fn)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection[DictRow]]:
        """A pooled connection for a write; psycopg.DataError (a value PostgreSQL refuses) as UnstorableValue."""
        try:
            async with self.pool.connection() as conn:
                yield conn
        except psycopg.DataError as exc:
            raise UnstorableValue(str(exc)) from None

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            await self._pool.close()
        await asyncio.to_thread(self.sync_pool.close)

    def close(self) -> None:
        """Synchronous close (tests, no loop running): the async pool must already be closed."""
        self._closed = True
        self.sync_pool.close()


class PgKeys:
    def __init__(self, storage: PgStorage) -> None:
        self.storage = storage

    async def active_by_hash(self) -> dict[str, ApiKey]:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(f"{KEY_ROWS} WHERE revoked_at IS NULL AND {OWNER_ENABLED}")
            return {r["key_hash"]: key_from_row(r) for r in await cur.fetchall()}

    async def by_hash(self, key_hash: str) -> ApiKey | None:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(f"{KEY_ROWS} WHERE key_hash = %s AND {OWNER_ENABLED}", (key_hash,))
            row = await cur.fetchone()
        return key_from_row(row) if row else None

    def create_demo_key_blocking(self) -> str | None:
        return self.storage.blocking(lambda c: PgKeyRepo(c).create_demo_key())


class PgUsers:
    def __init__(self, storage: PgStorage) -> None:
        self.storage = storage

    async def _one(self, sql: str, value: str) -> User | None:
        if not fits_text(value):
            return None
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(cast(Any, sql), (value,))
            row = await cur.fetchone()
        return user_from_row(row) if row else None

    async def by_email(self, email: str) -> User | None:
        return await self._one("SELECT * FROM users WHERE email = %s", normalize_email(email))

    async def by_id(self, user_id: str) -> User | None:
        return await self._one("SELECT * FROM users WHERE id = %s", user_id)

    async def create(self, email: str, password_hash: str, name: str | None, company: str | None) -> User:
        user = new_user(email, password_hash, name, company, time.time())
        try:
            async with self.storage.write() as conn:
                await conn.execute(
                    "INSERT INTO users (id, email, password_hash, name, company, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    (user.id, user.email, user.password_hash, user.name, user.company, user.created_at),
                )
        except psycopg.errors.UniqueViolation:
            raise DuplicateEmail(user.email) from None
        return user

    async def set_password_hash(self, user_id: str, password_hash: str) -> None:
        async with self.storage.write() as conn:
            await conn.execute("UPDATE users SET password_hash = %s WHERE id = %s", (password_hash, user_id))


class PgContent:
    def __init__(self, storage: PgStorage) -> None:
        self.storage = storage

    async def page(self, kind: ContentKind, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(
                cast(Any, f"SELECT {CONTENT_COLUMNS}, COUNT(*) OVER () AS total FROM content_items "
                          "WHERE kind = %s ORDER BY published_at DESC, id DESC LIMIT %s OFFSET %s"),
                (kind.value, limit, offset),
            )
            rows = await cur.fetchall()
            if rows:
                total = int(rows[0]["total"])
            else:  # a page past the end still reports the total
                cur = await conn.execute("SELECT COUNT(*) AS n FROM content_items WHERE kind = %s", (kind.value,))
                found = await cur.fetchone()
                total = int(found["n"]) if found else 0
        return [item_view(r) for r in rows], total

    async def version(self) -> int:
        """The content's version: items are only inserted (never updated or deleted), so their count."""
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute("SELECT COUNT(*) AS n FROM content_items")
            found = await cur.fetchone()
        return int(found["n"]) if found else 0


class PgRecords(RecordsService):
    """Record + jobs in one transaction on a pooled connection."""

    def __init__(self, storage: PgStorage, channels: Sequence[ChannelSpec],
                 clock: Callable[[], float] = time.time, wake: Callable[[], None] = lambda: None) -> None:
        super().__init__(channels, clock, wake)
        self.storage = storage

    async def _commit(self, w: RecordWrite) -> None:
        async with self.storage.write() as conn, conn.transaction():
            await conn.execute(cast(Any, f"INSERT INTO {w.table} ({w.columns}) VALUES ({marks(len(w.params))})"),
                               w.params)
            if self.channels:
                async with conn.cursor() as cur:
                    await cur.executemany(cast(Any, f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES ({marks(11)})"),
                                          job_rows(w.kind, w.payload["id"], w.payload, self.channels, w.now))


class PgOutbox:
    """The worker's view; `claim_due` skips rows another hub holds, so each job is claimed once."""

    def __init__(self, storage: PgStorage) -> None:
        self.storage = storage

    async def _rowcount(self, sql: str, params: Sequence[Any]) -> int:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(cast(Any, sql), params)
            return cur.rowcount

    async def recover(self, now: float) -> int:
        """Jobs left in sending by a hub that is gone go back to pending (at-least-once). A job another live hub
        is sending stays its own: its claimer still has connections (pg_stat_activity), unlike SQLite's one
        process, where everything in sending at start is an orphan."""
        return await self._rowcount(
            "UPDATE outbox_jobs SET state = 'pending', next_attempt_at = %s, updated_at = %s, claimed_by = NULL, "
            "last_error = COALESCE(last_error, 'interrupted by a restart') WHERE state = 'sending' "
            "AND (claimed_by IS NULL OR claimed_by NOT IN "
            "(SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'market-server/%%'))",
            (now, now))

    async def claim_due(self, now: float, limit: int) -> list[Job]:
        """Also takes back the jobs of a hub that died meanwhile (recover), so they are not stuck until a
        restart; then claims with SKIP LOCKED, recording this hub as the claimer."""
        await self.recover(now)
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(
                cast(Any, "UPDATE outbox_jobs SET state = 'sending', attempts = attempts + 1, updated_at = %s, "
                          "claimed_by = %s "
                          f"WHERE id IN (SELECT id FROM outbox_jobs WHERE state IN {states_in(CLAIMABLE)} "
                          "AND next_attempt_at <= %s ORDER BY next_attempt_at LIMIT %s FOR UPDATE SKIP LOCKED) "
                          f"AND state IN {states_in(CLAIMABLE)} RETURNING *"),
                (now, self.storage.name, now, limit),
            )
            rows = await cur.fetchall()
        return sorted((job_from_row(r) for r in rows), key=lambda j: j.next_attempt_at)

    async def _move(self, job_id: str, target: JobState, sets: str, params: tuple[Any, ...], now: float) -> None:
        sql = (f"UPDATE outbox_jobs SET state = %s, updated_at = %s, {sets} "
               f"WHERE id = %s AND state IN {states_in(predecessors(target))}")
        if await self._rowcount(sql, (target.value, now, *params, job_id)) == 0:
            async with self.storage.pool.connection() as conn:
                cur = await conn.execute("SELECT state FROM outbox_jobs WHERE id = %s", (job_id,))
                row = await cur.fetchone()
            if row is None:
                raise JobNotFound(job_id)
            raise IllegalTransition(TRANSITIONS.machine, JobState(row["state"]), target)

    async def mark_delivered(self, job_id: str, now: float) -> None:
        await self._move(job_id, JobState.DELIVERED, "last_error = NULL, delivered_at = %s", (now,), now)

    async def mark_failed(self, job_id: str, retry: Retry, error: str, now: float) -> None:
        at = retry.at if retry.at is not None else now
        await self._move(job_id, retry.state, "last_error = %s, next_attempt_at = %s",
                         (error[:MAX_ERROR_CHARS], at), now)

    async def release(self, job_ids: list[str], now: float) -> int:
        if not job_ids:
            return 0
        return await self._rowcount(
            "UPDATE outbox_jobs SET state = 'pending', next_attempt_at = %s, updated_at = %s, claimed_by = NULL "
            "WHERE state = 'sending' AND id = ANY(%s)", (now, now, list(job_ids)))

    async def counts(self) -> dict[JobState, int]:
        out = dict.fromkeys(JobState, 0)
        states = [s for s in JobState if s is not JobState.DELIVERED]
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(cast(Any, "SELECT state, COUNT(*) AS n FROM outbox_jobs "
                                               f"WHERE state IN {states_in(states)} GROUP BY state"))
            for row in await cur.fetchall():
                out[JobState(row["state"])] = int(row["n"])
        return out

    async def next_due(self) -> float | None:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(cast(Any, "SELECT MIN(next_attempt_at) AS due FROM outbox_jobs "
                                               f"WHERE state IN {states_in(CLAIMABLE)}"))
            row = await cur.fetchone()
        return None if row is None or row["due"] is None else float(row["due"])

    async def list_jobs(self, state: JobState | None = None, limit: int = 1000) -> list[Job]:
        async with self.storage.pool.connection() as conn:
            if state is None:
                cur = await conn.execute("SELECT * FROM outbox_jobs ORDER BY created_at, id LIMIT %s", (limit,))
            else:
                cur = await conn.execute("SELECT * FROM outbox_jobs WHERE state = %s ORDER BY created_at, id "
                                         "LIMIT %s", (state.value, limit))
            return [job_from_row(r) for r in await cur.fetchall()]


class PgReceipts:
    def __init__(self, storage: PgStorage) -> None:
        self.storage = storage

    async def public(self, receipt_no: str) -> dict[str, Any] | None:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(cast(Any, f"SELECT {PUBLIC_COLUMNS} FROM receipts WHERE receipt_no = %s"),
                                     (receipt_no,))
            row = await cur.fetchone()
        return None if row is None else public_view(row)


class PgEvidence:
    """The evidence log (server/store/sql/pg_sync.py) on a worker thread over the sync pool (its Merkle walk reads
    synchronously)."""

    def __init__(self, storage: PgStorage, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self.clock = clock

    async def lookup(self, hash_hex: str) -> dict[str, Any] | None:
        return await self.storage.in_thread(lambda c: PgEvidenceLog(c, clock=self.clock).lookup(hash_hex))

    async def anchor_batch(self, max_leaves: int) -> Block | None:
        return await self.storage.in_thread(lambda c: PgEvidenceLog(c, clock=self.clock).anchor_pending(max_leaves))


class PgCandles:
    def __init__(self, storage: PgStorage) -> None:
        self.storage = storage

    async def since(self, first_day: date) -> list[Candle]:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute("SELECT instrument, day, o, h, l, c, v FROM candles WHERE day >= %s "
                                     "ORDER BY day", (first_day.isoformat(),))
            rows = await cur.fetchall()
        return [(r["instrument"], date.fromisoformat(r["day"]), r["o"], r["h"], r["l"], r["c"], r["v"])
                for r in rows]

    async def between(self, first: date, last: date, inst: str | None = None, limit: int | None = None,
                      newest: bool = False) -> list[Candle]:
        async with self.storage.pool.connection() as conn:
            cur = await conn.execute(between_sql(inst, limit, newest, "%s"), between_params(first, last, inst, limit))
            rows = await cur.fetchall()
        out = [(r["instrument"], date.fromisoformat(r["day"]), r["o"], r["h"], r["l"], r["c"], r["v"]) for r in rows]
        return out[::-1] if newest else out

    async def upsert(self, candles: list[Candle], settlements: Sequence[Settlement] = ()) -> None:
        for rows, settled in write_chunks(candles, settlements, CANDLE_CHUNK):
            async with self.storage.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                await cur.executemany(UPSERT_CANDLE, rows)
                await cur.executemany(UPSERT_SETTLEMENT, settled)

    def since_blocking(self, first_day: date) -> list[Candle]:
        """At start-up, before the server accepts anything (the feed's history is built from it)."""
        return self.storage.blocking(lambda c: PgCandleRepo(c).since(first_day))

    def settlements_since_blocking(self, first_day: date) -> list[Settlement]:
        return self.storage.blocking(lambda c: PgCandleRepo(c).settlements_since(first_day))

    def upsert_blocking(self, candles: list[Candle], settlements: Sequence[Settlement] = ()) -> None:
        """At shutdown, after the loop's work stopped (the final flush)."""
        self.storage.blocking(lambda c: PgCandleRepo(c).upsert(candles, settlements=settlements))


def pg_repositories(storage: PgStorage, channels: Sequence[ChannelSpec], clock: Callable[[], float],
                    wake: Callable[[], None]) -> Repositories:
    return Repositories(
        storage, PgKeys(storage), PgUsers(storage), PgContent(storage),
        PgRecords(storage, channels, clock, wake), PgOutbox(storage), PgReceipts(storage),
        PgEvidence(storage, clock), PgCandles(storage),
    )
