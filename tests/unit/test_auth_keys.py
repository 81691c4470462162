"""The key cache over real SQLite storage: unknown keys are remembered until the next refresh."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.core.keys import ApiKey, hash_key
from server.store.accounts import key_cache
from server.store.accounts.key_cache import KeyCache
from server.store.sql.sqlite_repos import SqliteKeys
from server.store.sql.sqlite_sync import KeyRepo
from server.store.sql.storage import SqliteStorage


class CountingKeys:
    """The real SQLite key repository, counting the reads that reach storage."""

    def __init__(self, inner: SqliteKeys) -> None:
        self.inner = inner
        self.reads = 0

    async def active_by_hash(self) -> dict[str, ApiKey]:
        return await self.inner.active_by_hash()

    async def by_hash(self, key_hash: str) -> ApiKey | None:
        self.reads += 1
        return await self.inner.by_hash(key_hash)


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[SqliteStorage]:
    data = tmp_path / "data"
    data.mkdir()
    store = SqliteStorage(data)
    yield store
    store.close()


def _insert_key(storage: SqliteStorage, secret: str) -> None:
    """A key whose secret the test chose (the CLI would draw a random one)."""
    def insert(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO api_keys (id, key_hash, plan, rate, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                     ("key_chosen", hash_key(secret), "free", None, None, 0.0))

    storage.write_blocking(insert)


def test_an_unknown_key_reads_storage_once_until_the_next_refresh(storage: SqliteStorage) -> None:
    async def scenario() -> None:
        repo = CountingKeys(SqliteKeys(storage))
        cache = KeyCache(repo)
        for _ in range(5):
            assert await cache.load("mk_guess") is None
        assert repo.reads == 1
        _insert_key(storage, "mk_guess")  # the same secret now exists (created after it was refused)
        assert await cache.refresh() == set()
        key = await cache.load("mk_guess")
        assert key is not None and key.id == "key_chosen" and repo.reads == 2
        assert cache.lookup("mk_guess") == key  # cached: the hot path reads nothing

    asyncio.run(scenario())


def test_a_revoked_key_is_remembered_as_missing(storage: SqliteStorage) -> None:
    async def scenario() -> None:
        key, secret = storage.write_blocking(lambda c: KeyRepo(c).create("professional"))
        storage.write_blocking(lambda c: KeyRepo(c).revoke(key.id))
        repo = CountingKeys(SqliteKeys(storage))
        cache = KeyCache(repo)
        assert await cache.load(secret) is None and await cache.load(secret) is None
        assert repo.reads == 1

    asyncio.run(scenario())


def test_the_missing_set_is_bounded_oldest_forgotten_first(storage: SqliteStorage) -> None:
    async def scenario() -> None:
        repo = CountingKeys(SqliteKeys(storage))
        cache = KeyCache(repo, max_missing=3)
        for i in range(4):
            await cache.load(f"mk_{i}")
        assert repo.reads == 4
        await cache.load("mk_3")  # still remembered
        await cache.load("mk_2")
        await cache.load("mk_1")
        assert repo.reads == 4
        await cache.load("mk_0")  # the oldest was dropped to make room
        assert repo.reads == 5

    asyncio.run(scenario())


def test_a_key_forgotten_here_stays_out_and_a_refresh_reports_only_what_it_revoked(storage: SqliteStorage) -> None:
    """A revocation published by another hub (`forget`) is final here: neither a refresh that read storage before
    it committed nor a `load` brings the key back; the next refresh reports only keys revoked in storage since."""
    async def scenario() -> None:
        (a, a_secret), (b, b_secret) = (storage.write_blocking(lambda c: KeyRepo(c).create("professional"))
                                        for _ in range(2))
        cache = KeyCache(CountingKeys(SqliteKeys(storage)))
        assert await cache.refresh() == set()
        assert cache.lookup(a_secret) == a and cache.by_id(a.id) == a and cache.by_id(b.id) == b
        cache.forget({a.id})  # storage still has it active: the revocation has not committed there yet
        assert cache.lookup(a_secret) is None and cache.by_id(a.id) is None and cache.by_id(b.id) == b
        assert await cache.refresh() == set() and cache.lookup(a_secret) is None
        assert await cache.load(a_secret) is None
        assert cache.lookup(b_secret) == b == cache.lookup(b_secret)  # the second answered from the memo
        storage.write_blocking(lambda c: KeyRepo(c).revoke(b.id))
        assert await cache.refresh() == {b.id}
        assert cache.lookup(b_secret) is None and cache.by_id(b.id) is None

    asyncio.run(scenario())


def test_the_revoked_set_is_bounded_oldest_forgotten_first(storage: SqliteStorage,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_REVOKED ids the oldest is forgotten: storage (revoked there long since) is the record again."""
    monkeypatch.setattr(key_cache, "MAX_REVOKED", 3)

    async def scenario() -> None:
        key, secret = storage.write_blocking(lambda c: KeyRepo(c).create("professional"))
        cache = KeyCache(CountingKeys(SqliteKeys(storage)))
        cache.forget({key.id})
        for n in range(2):
            cache.forget({f"key_other_{n}"})
        assert await cache.refresh() == set() and cache.lookup(secret) is None  # 3 held: still refused
        cache.forget({"key_other_2"})  # a fourth: the oldest, this key, is forgotten
        assert await cache.refresh() == set() and cache.lookup(secret) == key  # storage still has it active

    asyncio.run(scenario())


def test_a_cache_built_with_keys_answers_before_any_refresh(storage: SqliteStorage) -> None:
    key, secret = storage.write_blocking(lambda c: KeyRepo(c).create("professional"))
    cache = KeyCache(CountingKeys(SqliteKeys(storage)), initial={hash_key(secret): key})
    assert cache.lookup(secret) == key and cache.by_id(key.id) == key and cache.lookup("mk_other") is None
