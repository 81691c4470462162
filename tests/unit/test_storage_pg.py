"""What only PostgreSQL has: ordered migrations under an advisory lock, SKIP LOCKED claims, gap-free evidence
indexes without SQLite's single writer. Real PostgreSQL, one fresh schema per test (tests/pg_service.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest

from server.store.site.receipts import ReceiptData, ReceiptStatus
from server.store.site.records import Cooperation
from server.store.sql.pg import MIGRATIONS, connect, migrate
from server.store.sql.pg_repos import RECONNECT_MAX_S, PgStorage, async_pool, pg_repositories
from server.store.sql.pg_sync import PgEvidenceLog, PgKeyRepo, PgReceiptRepo
from tests.conftest import ROOT
from tests.pg_service import pg_schema

NOW = 1_790_000_000.0
CHANNELS = (("generic", "https://hooks.example/in"), ("email", "ops@example.com"))


@pytest.fixture
def url() -> Iterator[str]:
    with pg_schema() as u:
        yield u


def _scalar(url: str, sql: str) -> Any:
    with connect(url) as conn:
        row = conn.execute(sql).fetchone()
        assert row is not None
        return next(iter(row.values()))


def test_migrations_are_recorded_and_idempotent(url: str) -> None:
    with connect(url) as conn:
        assert migrate(conn) == [v for v, _, _ in MIGRATIONS]
        assert migrate(conn) == []  # nothing twice: no error, no second seed
    assert _scalar(url, "SELECT COUNT(*) FROM schema_migrations") == len(MIGRATIONS)
    assert _scalar(url, "SELECT COUNT(*) FROM receipts") == 10  # the demo receipts, once
    assert _scalar(url, "SELECT COUNT(*) FROM evidence_leaves") == 10


def test_two_concurrent_starters_apply_and_seed_once(url: str) -> None:
    barrier = threading.Barrier(2)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            with connect(url) as conn:
                barrier.wait(timeout=10)
                results.append(migrate(conn))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert sorted(results) == [[], [v for v, _, _ in MIGRATIONS]]
    assert _scalar(url, "SELECT COUNT(*) FROM schema_migrations") == len(MIGRATIONS)
    news = _scalar(url, "SELECT COUNT(*) FROM content_items")
    with connect(url) as conn:
        migrate(conn)
    assert _scalar(url, "SELECT COUNT(*) FROM content_items") == news > 0


def test_two_hubs_never_claim_the_same_outbox_job(url: str) -> None:
    """Two storages (two pools: two hubs) claim the same due jobs concurrently until none is left."""
    loop = asyncio.new_event_loop()
    hubs = [PgStorage(url, pool_size=4), PgStorage(url, pool_size=4)]
    try:
        for h in hubs:
            loop.run_until_complete(h.open())
        a, b = (pg_repositories(h, CHANNELS, lambda: NOW, lambda: None) for h in hubs)

        async def scenario() -> tuple[list[str], list[str]]:
            for i in range(100):
                await a.records.add_cooperation(Cooperation(f"Co {i}", "Li", "li@example.cn", None, "data"))

            async def drain(repos: Any) -> list[str]:
                got: list[str] = []
                for _ in range(1000):  # bounded: 200 jobs, at least one claimed per round while any is due
                    jobs = await repos.outbox.claim_due(NOW, 3)
                    if not jobs:
                        return got
                    got.extend(j.id for j in jobs)
                    await asyncio.sleep(0)
                return got

            first, second = await asyncio.gather(drain(a), drain(b))
            return first, second

        first, second = loop.run_until_complete(scenario())
    finally:
        for h in hubs:
            loop.run_until_complete(h.aclose())
        loop.close()
    assert not set(first) & set(second)
    assert len(first) + len(second) == len(set(first) | set(second)) == 200
    assert first and second  # both hubs took part
    assert _scalar(url, "SELECT COUNT(*) FROM outbox_jobs WHERE state = 'sending' AND attempts = 1") == 200


def test_a_starting_hub_leaves_a_live_hubs_jobs_in_flight_and_takes_back_a_dead_hubs(url: str) -> None:
    """recover() at a worker's start used to put every job in sending back to pending, including the ones a
    live hub was sending at that moment (delivered twice). Only a gone claimer's jobs are orphans."""
    loop = asyncio.new_event_loop()
    a = PgStorage(url, pool_size=2, name=f"market-server/test-a-{uuid.uuid4().hex[:8]}")
    b = PgStorage(url, pool_size=2, name=f"market-server/test-b-{uuid.uuid4().hex[:8]}")
    try:
        for h in (a, b):
            loop.run_until_complete(h.open())
        ra, rb = (pg_repositories(h, CHANNELS, lambda: NOW, lambda: None) for h in (a, b))
        loop.run_until_complete(ra.records.add_cooperation(Cooperation("Acme", "Li", "li@example.cn", None, "data")))
        claimed = loop.run_until_complete(ra.outbox.claim_due(NOW, 10))
        assert len(claimed) == 2
        assert loop.run_until_complete(rb.outbox.recover(NOW + 1)) == 0  # a is alive: its sends are its own
        assert loop.run_until_complete(rb.outbox.claim_due(NOW + 1, 10)) == []
        loop.run_until_complete(a.aclose())  # a dies: its connections go, its jobs in sending are orphans
        retaken: list[Any] = []
        for _ in range(100):  # without any restart; a closed session leaves pg_stat_activity a moment later
            retaken = loop.run_until_complete(rb.outbox.claim_due(NOW + 2, 10))
            if retaken:
                break
            time.sleep(0.02)  # the server ends the backends on its own: nothing to await
        assert sorted(j.id for j in retaken) == sorted(j.id for j in claimed)
        assert all(j.attempts == 2 for j in retaken)
    finally:
        for h in (a, b):
            loop.run_until_complete(h.aclose())
        loop.close()


def test_concurrent_evidence_submits_get_gap_free_indexes(url: str) -> None:
    with connect(url) as conn:
        migrate(conn)
    base = _scalar(url, "SELECT COUNT(*) FROM evidence_leaves")
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def submit(worker: int) -> None:
        try:
            with connect(url) as raw:
                log = PgEvidenceLog(raw)
                barrier.wait(timeout=10)
                for i in range(25):
                    log.submit(f"{worker:02x}{i:062x}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    with connect(url) as conn:
        idx = [r["idx"] for r in conn.execute("SELECT idx FROM evidence_leaves ORDER BY idx").fetchall()]
        assert idx == list(range(base + 100))
        log = PgEvidenceLog(conn)
        block = log.anchor_all(batch=30)
        assert block is not None and block.tree_size == base + 100
        found = log.lookup(f"03{24:062x}")
        assert found is not None and found["verified"] is True


def test_two_hubs_starting_together_create_one_demo_key(url: str) -> None:
    """The demo key's check-then-insert: SQLite's BEGIN IMMEDIATE serialised it; on PostgreSQL the second
    starter used to fail on the meta row's primary key (or, without it, make a second demo key)."""
    with connect(url) as conn:
        migrate(conn)
    barrier = threading.Barrier(2)
    secrets_made: list[str | None] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            with connect(url) as raw:
                barrier.wait(timeout=10)
                secrets_made.append(PgKeyRepo(raw).create_demo_key())
        except BaseException as exc:
            errors.append(exc)

    for _ in range(5):  # a few rounds: the race needs both checks before either insert
        with connect(url) as conn:
            conn.execute("DELETE FROM meta WHERE key = 'demo_key'")
            conn.execute("DELETE FROM api_keys")
        secrets_made.clear()
        threads = [threading.Thread(target=start) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert errors == []
        assert sorted(s is None for s in secrets_made) == [False, True]
        assert _scalar(url, "SELECT COUNT(*) FROM api_keys") == 1


def test_sqlite_runs_do_not_import_psycopg() -> None:
    """psycopg's import is ~0.2 s, half of a CLI command's start-up: only a PostgreSQL URL loads it."""
    code = ("import sys, server.cli, server.root, server.serve, server.evidence, server.store.accounts.users; "
            "sys.exit('psycopg' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60).returncode == 0


def test_a_pool_that_lost_postgresql_retries_at_least_every_two_seconds_and_never_gives_up() -> None:
    """psycopg_pool's own backoff doubles without bound (1, 2, 4 ... s): a hub noticed the end of a 7 s outage
    after 53 s (docs/scaling.md). Through the pool's public API (reconnect_timeout + reconnect_failed -> check()),
    attempts keep coming at most RECONNECT_MAX_S apart. A listener that drops every connection stands for a
    PostgreSQL that is away; each accept is one attempt."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    attempts: list[float] = []
    stop = threading.Event()

    def refuse() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            attempts.append(time.monotonic())
            sock.close()

    thread = threading.Thread(target=refuse)
    thread.start()
    loop = asyncio.new_event_loop()
    try:
        pool = async_pool(f"postgresql://x@127.0.0.1:{port}/x?connect_timeout=2", 2, "market-server/test-away")
        loop.run_until_complete(pool.open(wait=False))
        loop.run_until_complete(asyncio.sleep(9.0))  # waiting for a pool's background attempts: nothing to await
        loop.run_until_complete(pool.close())
    finally:
        stop.set()
        thread.join()
        listener.close()
        loop.close()
    gaps = [b - a for a, b in pairwise(attempts)]
    # uncapped: attempts at 0, 1, 3, 7 s (4 in 9 s, a 4 s gap); capped: one at least every ~2 s, never giving up
    assert len(attempts) >= 5, attempts
    assert max(gaps) <= RECONNECT_MAX_S + 1.0, gaps


def test_two_processes_importing_the_same_receipts_insert_each_once(url: str) -> None:
    """SQLite's single writer serialises a receipt chunk's check-then-write; here the receipts lock does: two
    importers of the same new receipts at once never both insert one (no unique violation, no second hash)."""
    with connect(url) as conn:
        migrate(conn)
    items = [ReceiptData(f"PG-{i:04d}", "PX", "A", 10.0, "t", "Ningbo", "Holder Co., Ltd.", ReceiptStatus.ACTIVE,
                         NOW) for i in range(40)]
    barrier = threading.Barrier(2)
    results: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def run_import() -> None:
        try:
            with connect(url) as raw:
                repo = PgReceiptRepo(raw)
                barrier.wait(timeout=10)
                r = repo.import_all(items, now=NOW, chunk=5)
                results.append((r.inserted, r.unchanged))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run_import) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sum(inserted for inserted, _ in results) == 40 and sorted(sum(r) for r in results) == [40, 40]
    assert _scalar(url, "SELECT COUNT(*) FROM receipts WHERE receipt_no LIKE 'PG-%'") == 40
    assert _scalar(url, "SELECT COUNT(*) FROM evidence_leaves") == 10 + 40  # the demo receipts, then one each
