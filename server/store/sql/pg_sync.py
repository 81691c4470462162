"""PostgreSQL through a synchronous psycopg connection, in PostgreSQL's own dialect.

Used where the work is synchronous: the CLI commands (their own process), `migrate`'s seed steps, the hub's
start-up and shutdown work (the demo key, the feed's candle history, the final flush) and the evidence log,
whose Merkle walk reads tree nodes through synchronous callbacks (on a worker thread, server/store/sql/pg_repos.py).
The hub's request paths use the async repositories of server/store/sql/pg_repos.py.

Connections are autocommit with `dict_row` rows; a multi-statement write is one `conn.transaction()` (nested:
a savepoint in the caller's). SQLite's single writer serialises its check-then-write transactions; here an
advisory lock per purpose does (server/store/sql/pg_locks.py), so two processes never interleave them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import date
from typing import Any

import psycopg
from psycopg.rows import DictRow

from server.core.keys import ApiKey, hash_key, key_from_row, new_key
from server.evidence.ledger import Block, BlockRow, HashChain, block_values
from server.evidence.log import MerkleLog
from server.store.accounts.users import DuplicateEmail, User, new_user, normalize_email, user_from_row
from server.store.history.candle_rows import CHUNK as CANDLE_CHUNK
from server.store.history.candle_rows import Candle, Settlement, settlement_of, write_chunks
from server.store.outbox.jobs import RETRYABLE, TRANSITIONS, IllegalTransition, JobState
from server.store.outbox.queue import Job, JobNotFound, job_from_row, predecessors, states_in
from server.store.site.content import CONTENT_COLUMNS, IMPORT_CHUNK, ContentItem, content_values
from server.store.site.receipts import (
    INSERT_COLUMNS,
    PUBLIC_COLUMNS,
    ReceiptBook,
    ReceiptData,
    ReceiptStatus,
    public_view,
    receipt_from_row,
)
from server.store.sql.errors import UnstorableValue
from server.store.sql.pg_locks import DEMO_KEY_LOCK, EVIDENCE_LOCK, RECEIPTS_LOCK, lock_sql

Conn = psycopg.Connection[DictRow]

UPSERT_CANDLE = ("INSERT INTO candles (instrument, day, o, h, l, c, v) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                 "ON CONFLICT (instrument, day) DO UPDATE SET o = excluded.o, h = excluded.h, l = excluded.l, "
                 "c = excluded.c, v = excluded.v")
UPSERT_SETTLEMENT = ("INSERT INTO settlements_1d (instrument, day, oi, s) VALUES (%s, %s, %s, %s) "
                     "ON CONFLICT (instrument, day) DO UPDATE SET oi = COALESCE(excluded.oi, settlements_1d.oi), "
                     "s = COALESCE(excluded.s, settlements_1d.s)")
SETTLEMENTS_SINCE = "SELECT instrument, day, oi, s FROM settlements_1d WHERE day >= %s ORDER BY day"


def marks(n: int) -> str:
    """`%s, %s, ...`: n psycopg placeholders."""
    return ", ".join(["%s"] * n)


@contextmanager
def locked(conn: Conn, lock: str) -> Iterator[None]:
    """A transaction (a savepoint inside the caller's) holding the advisory lock `lock` until it ends."""
    with conn.transaction():
        conn.execute(lock_sql(lock))
        yield


@contextmanager
def storable() -> Iterator[None]:
    """psycopg.DataError (a NUL in text, a number out of range) as UnstorableValue (server/store/sql/errors.py)."""
    try:
        yield
    except psycopg.DataError as exc:
        raise UnstorableValue(str(exc)) from None


class PgKeyRepo:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def create(self, plan: str, rate: int | None = None, label: str | None = None) -> tuple[ApiKey, str]:
        key, secret = new_key(plan, rate, label, time.time())
        with storable():
            self.conn.execute(
                "INSERT INTO api_keys (id, key_hash, plan, rate, label, created_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (key.id, hash_key(secret), plan, rate, label, key.created_at))
        return key, secret

    def create_demo_key(self) -> str | None:
        """As on SQLite (server/store/sql/sqlite_sync.py); the lock makes two hubs starting together create one key."""
        with locked(self.conn, DEMO_KEY_LOCK):
            if self.conn.execute("SELECT 1 FROM meta WHERE key = 'demo_key'").fetchone():
                return None
            key, secret = self.create("professional", label="demo")
            self.conn.execute("INSERT INTO meta (key, value) VALUES ('demo_key', %s)", (key.id,))
        return secret

    def list(self) -> list[ApiKey]:
        return [key_from_row(r) for r in self.conn.execute("SELECT * FROM api_keys ORDER BY created_at")]

    def revoke(self, key_id: str) -> bool:
        cur = self.conn.execute("UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                                (time.time(), key_id))
        return cur.rowcount == 1

    def by_hash(self, key_hash: str) -> ApiKey | None:
        row = self.conn.execute("SELECT * FROM api_keys WHERE key_hash = %s", (key_hash,)).fetchone()
        return key_from_row(row) if row else None


class PgUserRepo:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def create(self, email: str, password_hash: str, name: str | None = None, company: str | None = None,
               now: float | None = None) -> User:
        user = new_user(email, password_hash, name, company, time.time() if now is None else now)
        try:
            with storable():
                self.conn.execute(
                    "INSERT INTO users (id, email, password_hash, name, company, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    (user.id, user.email, user.password_hash, user.name, user.company, user.created_at))
        except psycopg.errors.UniqueViolation:
            raise DuplicateEmail(user.email) from None
        return user

    def by_email(self, email: str) -> User | None:
        row = self.conn.execute("SELECT * FROM users WHERE email = %s", (normalize_email(email),)).fetchone()
        return user_from_row(row) if row else None

    def disable(self, email: str, now: float | None = None) -> bool:
        cur = self.conn.execute("UPDATE users SET disabled_at = %s WHERE email = %s AND disabled_at IS NULL",
                                (time.time() if now is None else now, normalize_email(email)))
        return cur.rowcount == 1


class PgContentRepo:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def add_many(self, items: Iterable[ContentItem], now: float | None = None) -> int:
        """Insert the items not yet present (same id); how many were new. Runs in the caller's transaction."""
        now = time.time() if now is None else now
        added = 0
        with storable():
            for item in items:
                cur = self.conn.execute(f"INSERT INTO content_items ({CONTENT_COLUMNS}) VALUES ({marks(12)}) "
                                        "ON CONFLICT (id) DO NOTHING", content_values(item, now))
                added += cur.rowcount
        return added

    def import_items(self, items: list[ContentItem], chunk: int = IMPORT_CHUNK) -> int:
        added = 0
        for start in range(0, len(items), chunk):
            with self.conn.transaction():
                added += self.add_many(items[start:start + chunk])
        return added


class PgCandleRepo:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def upsert(self, candles: list[Candle], chunk: int = CANDLE_CHUNK, settlements: Sequence[Settlement] = ()) -> None:
        for rows, settled in write_chunks(candles, settlements, chunk):
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.executemany(UPSERT_CANDLE, rows)
                cur.executemany(UPSERT_SETTLEMENT, settled)

    def settlements_since(self, first_day: date) -> list[Settlement]:
        rows = self.conn.execute(SETTLEMENTS_SINCE, (first_day.isoformat(),))
        return [settlement_of((r["instrument"], r["day"], r["oi"], r["s"])) for r in rows]

    def since(self, first_day: date) -> list[Candle]:
        rows = self.conn.execute("SELECT instrument, day, o, h, l, c, v FROM candles WHERE day >= %s ORDER BY day",
                                 (first_day.isoformat(),))
        return [(r["instrument"], date.fromisoformat(r["day"]), r["o"], r["h"], r["l"], r["c"], r["v"]) for r in rows]


class PgOutboxRepo:
    """The operator's view of the jobs (`outbox list`, `outbox retry`); the hub's worker uses pg_repos.PgOutbox."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def get(self, job_id: str) -> Job:
        row = self.conn.execute("SELECT * FROM outbox_jobs WHERE id = %s", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(job_id)
        return job_from_row(row)

    def list_jobs(self, state: JobState | None = None, limit: int = 1000) -> list[Job]:
        if state is None:
            rows = self.conn.execute("SELECT * FROM outbox_jobs ORDER BY created_at, id LIMIT %s", (limit,))
        else:
            rows = self.conn.execute("SELECT * FROM outbox_jobs WHERE state = %s ORDER BY created_at, id LIMIT %s",
                                     (state.value, limit))
        return [job_from_row(r) for r in rows]

    def for_record(self, kind: str, record_id: str) -> list[Job]:
        rows = self.conn.execute("SELECT * FROM outbox_jobs WHERE record_kind = %s AND record_id = %s ORDER BY id",
                                 (kind, record_id))
        return [job_from_row(r) for r in rows]

    def retry(self, job_id: str, now: float) -> Job:
        """A failed or dead job back to pending with its attempts reset (the guard: its state, in the UPDATE)."""
        sources = [s for s in predecessors(JobState.PENDING) if JobState(s) in RETRYABLE]
        cur = self.conn.execute(
            "UPDATE outbox_jobs SET state = 'pending', updated_at = %s, attempts = 0, next_attempt_at = %s, "
            f"claimed_by = NULL WHERE id = %s AND state IN {states_in(sources)}", (now, now, job_id))
        if cur.rowcount == 0:
            raise IllegalTransition(TRANSITIONS.machine, self.get(job_id).state, JobState.PENDING)
        return self.get(job_id)


class PgLedger(HashChain):
    """The hash chain of blocks in PostgreSQL (the same chain as server/evidence/ledger.py's LocalLedger)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def write_transaction(self) -> AbstractContextManager[object]:
        return self.conn.transaction()

    def last_block(self) -> tuple[int, str] | None:
        row = self.conn.execute("SELECT height, block_hash FROM evidence_blocks ORDER BY height DESC LIMIT 1"
                                ).fetchone()
        return (row["height"], row["block_hash"]) if row else None

    def insert_block(self, b: Block) -> None:
        self.conn.execute(f"INSERT INTO evidence_blocks ({self.COLUMNS}) VALUES ({marks(7)})", block_values(b))

    def block_row(self, height: int) -> BlockRow | None:
        row = self.conn.execute(f"SELECT {self.COLUMNS} FROM evidence_blocks WHERE height = %s", (height,)).fetchone()
        return None if row is None else _block_row(row)

    def block_rows(self) -> Iterable[BlockRow]:
        return [_block_row(r) for r in self.conn.execute(f"SELECT {self.COLUMNS} FROM evidence_blocks ORDER BY height")]


def _block_row(row: DictRow) -> BlockRow:
    return (row["height"], row["root"], row["tree_size"], row["prev_hash"], row["block_hash"], row["ts"],
            row["tx_hash"])


class PgEvidenceLog(MerkleLog):
    """The evidence log in PostgreSQL. No single writer here: submits and anchoring batches take the evidence
    lock, so leaf indexes stay gap-free and a block never misses a leaf submitted meanwhile."""

    def __init__(self, conn: Conn, clock: Any = time.time) -> None:
        self.conn = conn
        super().__init__(PgLedger(conn), clock)

    def insert_leaf(self, h: str, ts: float) -> int | None:
        with locked(self.conn, EVIDENCE_LOCK):
            self.conn.execute(
                "INSERT INTO evidence_leaves (idx, hash, submitted_at, batch) "
                "VALUES ((SELECT COALESCE(MAX(idx) + 1, 0) FROM evidence_leaves), %s, %s, NULL) "
                "ON CONFLICT (hash) DO NOTHING", (h, ts))
            row = self.conn.execute("SELECT batch FROM evidence_leaves WHERE hash = %s", (h,)).fetchone()
        assert row is not None  # just inserted, or there already
        return row["batch"]  # type: ignore[no-any-return]

    def anchoring(self) -> AbstractContextManager[object]:
        return locked(self.conn, EVIDENCE_LOCK)

    def pending_leaves(self, limit: int | None) -> list[tuple[int, str]]:
        rows = self.conn.execute("SELECT idx, hash FROM evidence_leaves WHERE batch IS NULL ORDER BY idx LIMIT %s",
                                 (limit,))  # LIMIT NULL: no limit
        return [(r["idx"], r["hash"]) for r in rows]

    def count_leaves(self, anchored: bool) -> int:
        sql = "SELECT COUNT(*) AS n FROM evidence_leaves WHERE batch IS " + ("NOT NULL" if anchored else "NULL")
        row = self.conn.execute(sql).fetchone()
        return int(row["n"]) if row else 0

    def insert_nodes(self, rows: list[tuple[int, int, str]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO evidence_nodes (level, pos, hash) VALUES (%s, %s, %s)", rows)

    def set_batch(self, height: int, below: int) -> None:
        self.conn.execute("UPDATE evidence_leaves SET batch = %s WHERE batch IS NULL AND idx < %s", (height, below))

    def leaf_hash_at(self, idx: int) -> str | None:
        row = self.conn.execute("SELECT hash FROM evidence_leaves WHERE idx = %s", (idx,)).fetchone()
        return None if row is None else row["hash"]  # type: ignore[no-any-return]

    def node_hash_at(self, level: int, pos: int) -> str | None:
        row = self.conn.execute("SELECT hash FROM evidence_nodes WHERE level = %s AND pos = %s", (level, pos)
                                ).fetchone()
        return None if row is None else row["hash"]  # type: ignore[no-any-return]

    def leaf(self, h: str) -> tuple[int, int | None] | None:
        row = self.conn.execute("SELECT idx, batch FROM evidence_leaves WHERE hash = %s", (h,)).fetchone()
        return None if row is None else (row["idx"], row["batch"])


class PgReceiptRepo(ReceiptBook):
    """Receipts in PostgreSQL; a write transaction holds the receipts lock (a chunk re-checks under it)."""

    def __init__(self, conn: Conn, evidence: PgEvidenceLog | None = None) -> None:
        self.conn = conn
        self.evidence = evidence if evidence is not None else PgEvidenceLog(conn)

    def write_transaction(self) -> AbstractContextManager[object]:
        return locked(self.conn, RECEIPTS_LOCK)

    def load(self, receipt_no: str) -> tuple[ReceiptData, str] | None:
        row = self.conn.execute("SELECT * FROM receipts WHERE receipt_no = %s", (receipt_no,)).fetchone()
        return None if row is None else receipt_from_row(row)

    def insert_row(self, values: tuple[Any, ...]) -> None:
        with storable():
            self.conn.execute(f"INSERT INTO receipts ({INSERT_COLUMNS}) VALUES ({marks(len(values))})", values)

    def update_status(self, receipt_no: str, status: ReceiptStatus, digest: str, now: float) -> None:
        self.conn.execute("UPDATE receipts SET status = %s, evidence_hash = %s, updated_at = %s WHERE receipt_no = %s",
                          (status.value, digest, now, receipt_no))

    def public(self, receipt_no: str) -> dict[str, Any] | None:
        row = self.conn.execute(f"SELECT {PUBLIC_COLUMNS} FROM receipts WHERE receipt_no = %s", (receipt_no,)
                                ).fetchone()
        return None if row is None else public_view(row)


class PgSeedTarget:
    """The seed steps' writes on PostgreSQL (server/store/site/seed.py), in `migrate`'s transaction."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def add_content(self, items: Iterable[ContentItem], now: float) -> int:
        return PgContentRepo(self.conn).add_many(items, now)

    def add_receipts(self, receipts: Iterable[ReceiptData], now: float) -> None:
        repo = PgReceiptRepo(self.conn)
        for r in receipts:
            repo.insert(r, now)
