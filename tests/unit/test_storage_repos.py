"""The async repositories over real SQLite (storage threads, never the loop's) and real PostgreSQL (async pool):
the behaviour tests run on both (tests/pg_service.py gives each PostgreSQL test its own schema)."""

from __future__ import annotations

import asyncio
import math
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from server.core.keys import hash_key
from server.notify.jobs import Backoff
from server.store.accounts.users import DuplicateEmail
from server.store.history.candle_rows import write_chunks
from server.store.outbox.jobs import JobState
from server.store.site.content import ContentKind
from server.store.site.evidence_sqlite import EvidenceLog
from server.store.site.receipts import ReceiptConflict, ReceiptData, ReceiptStatus
from server.store.site.records import Cooperation, Inquiry
from server.store.sql.db import DB_NAME, open_db
from server.store.sql.errors import UnstorableValue
from server.store.sql.pg_repos import PgStorage, pg_repositories
from server.store.sql.pg_sync import PgKeyRepo
from server.store.sql.repositories import Repositories, Storage
from server.store.sql.schema import MIGRATIONS
from server.store.sql.sqlite_repos import sqlite_repositories
from server.store.sql.sqlite_sync import KeyRepo, ReceiptRepo
from server.store.sql.storage import SqliteStorage, StorageClosed
from tests.conftest import ROOT
from tests.pg_service import pg_schema

CHANNELS = (("generic", "https://hooks.example/in"), ("email", "ops@example.com"))
NOW = 1_790_000_000.0
Run = Callable[[Coroutine[Any, Any, Any]], Any]


BACKENDS = ("sqlite", "postgresql")


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One loop for the whole test: PostgreSQL's async pool belongs to the loop that opened it."""
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


@pytest.fixture
def run(loop: asyncio.AbstractEventLoop) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    return loop.run_until_complete


@pytest.fixture
def sqlite_storage(tmp_path: Path) -> Iterator[SqliteStorage]:
    s = SqliteStorage(tmp_path / "data")
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, tmp_path: Path, loop: asyncio.AbstractEventLoop) -> Iterator[Storage]:
    """The same behaviour tests on SQLite in a data dir and on PostgreSQL in a fresh schema."""
    if request.param == "sqlite":
        s: Storage = SqliteStorage(tmp_path / "data")
        yield s
        s.close()
        return
    with pg_schema() as url:
        pg = PgStorage(url, pool_size=4)
        loop.run_until_complete(pg.open())
        yield pg
        loop.run_until_complete(pg.aclose())


@pytest.fixture
def woken() -> list[int]:
    return []


@pytest.fixture
def repos(storage: Storage, woken: list[int]) -> Repositories:
    return make_repositories(storage, CHANNELS, lambda: NOW, lambda: woken.append(1))


def make_repositories(storage: Storage, channels: Any, clock: Callable[[], float],
                      wake: Callable[[], None]) -> Repositories:
    if isinstance(storage, PgStorage):
        return pg_repositories(storage, channels, clock, wake)
    assert isinstance(storage, SqliteStorage)
    return sqlite_repositories(storage, channels, clock, wake)


def test_calls_run_on_storage_threads_not_the_loop(sqlite_storage: SqliteStorage) -> None:
    storage = sqlite_storage

    async def scenario() -> tuple[int, int, int]:
        write = await storage.write(lambda c: threading.get_ident())
        read = await storage.read(lambda c: threading.get_ident())
        return threading.get_ident(), write, read

    loop_thread, writer, reader = asyncio.run(scenario())
    assert loop_thread not in (writer, reader) and writer != reader


def test_a_read_does_not_wait_behind_a_write_that_waits_for_the_lock(sqlite_storage: SqliteStorage) -> None:
    storage = sqlite_storage

    other = sqlite3.connect(storage.data_dir / DB_NAME, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's write lock (a CLI import chunk)

    async def scenario() -> tuple[bool, int]:
        write = asyncio.ensure_future(storage.write(lambda c: c.execute("INSERT INTO meta VALUES ('x', '1')")))
        await asyncio.sleep(0)  # the write is handed to the writer thread, which now waits for the lock
        count = await storage.read(lambda c: c.execute("SELECT COUNT(*) FROM content_items").fetchone()[0])
        pending = not write.done()
        other.execute("ROLLBACK")
        await write
        return pending, count

    pending, count = asyncio.run(scenario())
    other.close()
    assert pending and count > 0  # the read answered (seeded demo content) while the write still waited


def test_closed_storage_refuses_calls(tmp_path: Path) -> None:
    s = SqliteStorage(tmp_path / "data")
    s.close()
    s.close()  # idempotent
    with pytest.raises(StorageClosed):
        asyncio.run(s.read(lambda c: 1))
    assert asyncio.run(s.ping()) is False


def admin_keys(storage: Storage, fn: Callable[[Any], Any]) -> Any:
    """`fn(key_repo)` with the backend's synchronous key repository (what the CLI uses)."""
    if isinstance(storage, PgStorage):
        return storage.blocking(lambda c: fn(PgKeyRepo(c)))
    assert isinstance(storage, SqliteStorage)
    return storage.write_blocking(lambda c: fn(KeyRepo(c)))


def test_keys(storage: Storage, repos: Repositories, run: Run) -> None:
    key, secret = admin_keys(storage, lambda k: k.create("professional", label="t"))
    assert run(repos.keys.by_hash(hash_key(secret))) == key
    assert hash_key(secret) in run(repos.keys.active_by_hash())
    assert admin_keys(storage, lambda k: k.revoke(key.id)) is True
    assert hash_key(secret) not in run(repos.keys.active_by_hash())
    assert [k.id for k in admin_keys(storage, lambda k: k.list())] == [key.id]


def test_the_demo_key_is_made_once(repos: Repositories, run: Run) -> None:
    secret = repos.keys.create_demo_key_blocking()
    assert secret is not None and repos.keys.create_demo_key_blocking() is None
    found = run(repos.keys.by_hash(hash_key(secret)))
    assert found is not None and (found.plan, found.label) == ("professional", "demo")


def test_text_with_a_nul_is_never_a_driver_error(storage: Storage, repos: Repositories, run: Run) -> None:
    """PostgreSQL refuses NUL in text (psycopg.DataError); validation rejects it with a 400 before storage. If one
    slips through, a write raises the named UnstorableValue and a read finds nothing, as on SQLite (which stores
    it): never a bare driver error."""
    assert run(repos.users.by_email("a\x00@example.cn")) is None
    if isinstance(storage, PgStorage):
        with pytest.raises(UnstorableValue):
            run(repos.users.create("b\x00@example.cn", "hash", None, None))
        with pytest.raises(UnstorableValue):
            run(repos.records.add_cooperation(Cooperation("Ac\x00me", "Li", "li@example.cn", None, "data")))
        assert run(repos.outbox.list_jobs()) == []  # nothing half-written
    run(repos.users.create("c@example.cn", "hash", None, None))  # the pool's connection is still good


def test_every_table_is_created_whatever_was_imported(tmp_path: Path) -> None:
    """The schema is one explicit list per backend (server/store/sql/schema.py), not a registry filled by imports."""
    code = ("import sys; from pathlib import Path; from server.store.sql.db import open_db; "
            "c = open_db(Path(sys.argv[1])); "
            "print(' '.join(sorted(r[0] for r in c.execute(\"SELECT name FROM sqlite_master WHERE type='table'\"))))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data")], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()
    postgres = set(re.findall(r"CREATE TABLE (\w+)", " ".join(sql for _, _, sql in MIGRATIONS)))
    assert set(out) == postgres == {
        "api_keys", "candles", "content_items", "cooperations", "evidence_blocks", "evidence_leaves",
        "evidence_nodes", "inquiries", "meta", "outbox_jobs", "receipts", "users",
        "console_usage", "console_events", "subscription_requests",  # issue 32: the console's
        "support_tickets", "support_messages",  # issue 43: support tickets
        "availability_minutes",  # SPEC 20: availability per hub per minute
        "settlements_1d",  # issue 39: futures candles' open interest and settlement
        "incidents", "incident_updates", "maintenances", "incident_mail",  # issue 42: incidents and maintenance
        "custom_instruments"}  # SPEC 20: dedicated data sources (docs/ingest.md)


def test_users(repos: Repositories, run: Run) -> None:
    async def scenario() -> None:
        user = await repos.users.create("Li@Example.cn", "hash1", "Li", None)
        assert (await repos.users.by_email("li@example.cn")) == user
        with pytest.raises(DuplicateEmail):
            await repos.users.create("li@example.cn", "hash2", None, None)
        await repos.users.set_password_hash(user.id, "hash3")
        found = await repos.users.by_id(user.id)
        assert found is not None and found.password_hash == "hash3"

    run(scenario())


def test_content_page(repos: Repositories, run: Run) -> None:
    items, total = run(repos.content.page(ContentKind.NEWS, 2, 0))
    assert len(items) == 2 and total >= 2 and items[0]["publishedAt"] >= items[1]["publishedAt"]


def test_records_write_their_jobs_and_wake_the_worker(repos: Repositories, woken: list[int], run: Run) -> None:
    async def scenario() -> tuple[str, str]:
        coop = await repos.records.add_cooperation(Cooperation("Acme", "Li", "li@example.cn", None, "data"))
        inq = await repos.records.add_inquiry(Inquiry("usr_1", "a@example.cn", "PX", 10.0))
        return coop.id, inq.id

    coop_id, inq_id = run(scenario())
    assert woken == [1, 1]
    jobs = run(repos.outbox.list_jobs())
    assert sorted((j.record_id, j.channel) for j in jobs) == sorted(
        (rid, ch) for rid in (coop_id, inq_id) for ch, _ in CHANNELS)


def test_records_without_channels_write_no_job_and_wake_nobody(storage: Storage, woken: list[int], run: Run) -> None:
    repos = make_repositories(storage, (), lambda: NOW, lambda: woken.append(1))
    run(repos.records.add_cooperation(Cooperation("Acme", "Li", None, "+86 10 1234 5678", "other")))
    assert woken == [] and run(repos.outbox.list_jobs()) == []


def test_outbox_claim_fail_deliver(repos: Repositories, run: Run) -> None:
    async def scenario() -> None:
        await repos.records.add_cooperation(Cooperation("Acme", "Li", "li@example.cn", None, "data"))
        assert await repos.outbox.next_due() == NOW
        first, second = await repos.outbox.claim_due(NOW, 10)
        assert (await repos.outbox.counts())[JobState.SENDING] == 2
        await repos.outbox.mark_delivered(first.id, NOW + 1)
        await repos.outbox.mark_failed(second.id, Backoff(1.0, 10.0, 1).after_failure(1, NOW + 1), "HTTP 500",
                                       NOW + 1)
        counts = await repos.outbox.counts()
        assert counts[JobState.DEAD] == 1 and counts[JobState.SENDING] == 0
        assert await repos.outbox.release([second.id], NOW + 2) == 0  # only jobs in sending go back
        assert await repos.outbox.recover(NOW + 2) == 0

    run(scenario())


def test_receipts_and_evidence_in_bounded_batches(repos: Repositories, run: Run) -> None:
    async def scenario() -> None:
        view = await repos.receipts.public("WR-NB-000101")  # seeded demo receipt
        assert view is not None and "*" in view["holder"]
        assert (await repos.evidence.lookup(view["evidenceHash"]))["status"] == "pending"  # type: ignore[index]
        sizes = []
        while (block := await repos.evidence.anchor_batch(4)) is not None:
            sizes.append(block.tree_size)
        assert sizes == [4, 8, 10]  # ten demo receipts, at most four per block
        found = await repos.evidence.lookup(view["evidenceHash"])
        assert found is not None and found["verified"] is True

    run(scenario())


def test_candles(repos: Repositories, run: Run) -> None:
    day = date(2026, 3, 2)
    repos.candles.upsert_blocking([("brent", day, 80.0, 81.0, 79.0, 80.5, 100.0)])
    run(repos.candles.upsert([("wti", day, 70.0, 71.0, 69.0, 70.5, 50.0)]))
    assert sorted(c[0] for c in run(repos.candles.since(day))) == ["brent", "wti"]
    assert len(repos.candles.since_blocking(date(2026, 3, 3))) == 0


def test_futures_candles_keep_open_interest_and_settlement(repos: Repositories, run: Run) -> None:
    """SPEC 19 (issue 39): a futures candle's `oi` and `s` are stored with it (`settlements_1d`), read back by
    day; an unknown value (NaN) is NULL and never replaces a value held; a settlement is written with its candle
    in one transaction, whichever chunk the candle is in."""
    monday, tuesday = date(2026, 3, 2), date(2026, 3, 3)
    repos.candles.upsert_blocking([("methanol", monday, 2400.0, 2410.0, 2390.0, 2405.0, 900.0)],
                                  [("methanol", monday, 151_000.0, 2403.0)])
    run(repos.candles.upsert([("methanol", tuesday, 2405.0, 2420.0, 2401.0, 2418.0, 700.0),
                              ("brent", tuesday, 80.0, 81.0, 79.0, 80.5, 10.0)],
                             [("methanol", tuesday, 152_500.0, math.nan)]))
    assert repos.candles.settlements_since_blocking(monday) == [
        ("methanol", monday, 151_000.0, 2403.0), ("methanol", tuesday, 152_500.0, None)]
    run(repos.candles.upsert([("methanol", tuesday, 2405.0, 2420.0, 2401.0, 2418.0, 700.0)],
                             [("methanol", tuesday, math.nan, 2411.0)]))  # the day settled: oi kept
    assert repos.candles.settlements_since_blocking(tuesday) == [("methanol", tuesday, 152_500.0, 2411.0)]
    many = [("pp", date(2025, 1, 1) + timedelta(days=k), 7000.0, 7000.0, 7000.0, 7000.0, 1.0) for k in range(2500)]
    chunks = list(write_chunks(many, [("pp", many[-1][1], 5.0, 7001.0), ("pp", many[0][1], 4.0, None)]))
    assert [len(rows) for rows, _ in chunks] == [1000, 1000, 500]
    assert [settled for _, settled in chunks] == [[("pp", "2025-01-01", 4.0, None)], [],
                                                  [("pp", many[-1][1].isoformat(), 5.0, 7001.0)]]


def test_receipt_import_commits_in_chunks_and_checks_everything_first(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "data")
    repo = ReceiptRepo(conn, EvidenceLog(conn))
    fresh = [ReceiptData(f"T-{i:04d}", "PX", "A", 10.0, "t", "Ningbo", "Holder Co., Ltd.", ReceiptStatus.ACTIVE, NOW)
             for i in range(7)]
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    result = repo.import_all(fresh, now=NOW, chunk=3)
    conn.set_trace_callback(None)
    assert result.inserted == 7 and statements.count("COMMIT") == 3  # 3 + 3 + 1

    pledged = replace(fresh[0], status=ReceiptStatus.PLEDGED)
    conflicting = replace(fresh[6], grade="B")  # only the status of a known receipt may change
    with pytest.raises(ReceiptConflict):
        repo.import_all([pledged, *fresh[1:6], conflicting], now=NOW + 1, chunk=3)
    assert repo.public("T-0000")["status"] == "active"  # type: ignore[index]  # nothing was written


def test_a_key_carries_its_accounts_ticks_a_second(storage: Storage, repos: Repositories, run: Run) -> None:
    """SPEC 20's per-account limits (migration 9; SQLite's columns): the key queries the hubs refresh from carry the
    account's ticks a second (None: the hub's --ingest-rate), so `users limits` reaches every hub with the keys."""
    from server.store.accounts.console_store import ConsoleStore
    from server.store.sources.repo import Limits, SourcesRepo

    user = run(repos.users.create("lim@example.cn", "hash", None, None))
    store = ConsoleStore(storage)

    def make(r: Any) -> tuple[Any, str]:
        account = r.account(user.id)
        return r.create_key(account, "pub", NOW, None, "ingest")

    _, secret = run(store.write(make))
    assert run(repos.keys.by_hash(hash_key(secret))).ticks_per_second is None
    run(store.write(lambda r: SourcesRepo(r.db).set_limits("LIM@example.cn", {"ticks_per_second": 25,
                                                                             "instruments": 0})))
    assert run(repos.keys.by_hash(hash_key(secret))).ticks_per_second == 25
    assert run(repos.keys.active_by_hash())[hash_key(secret)].ticks_per_second == 25
    assert run(store.read(lambda r: SourcesRepo(r.db).limits_of(user.id))) == Limits(0, 25)
    assert Limits(0, 25).instrument_cap == 0 and Limits().instrument_cap == 100
    run(store.write(lambda r: SourcesRepo(r.db).set_limits("lim@example.cn", {"ticks_per_second": None})))
    assert run(repos.keys.by_hash(hash_key(secret))).ticks_per_second is None
    assert run(store.read(lambda r: SourcesRepo(r.db).limits_of(user.id))) == Limits(0, None)
    assert run(store.write(lambda r: SourcesRepo(r.db).set_limits("nobody@example.cn", {"instruments": 1}))) is None
