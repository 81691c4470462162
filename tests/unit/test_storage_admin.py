"""The operator's repositories (what the CLI commands use, server/store/sql/admin.py) on both backends: SQLite in a
data dir and PostgreSQL in a fresh schema (tests/pg_service.py). Same calls, same answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from server.store.accounts.users import DuplicateEmail
from server.store.outbox.jobs import IllegalTransition
from server.store.outbox.queue import JobNotFound
from server.store.site.content import ContentItem, ContentKind, Localised
from server.store.site.receipts import ReceiptConflict, ReceiptData, ReceiptStatus
from server.store.sql.admin import AdminRepos, open_admin
from tests.pg_service import pg_schema

NOW = 1_790_000_000.0


@pytest.fixture(params=("sqlite", "postgresql"))
def admin(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AdminRepos]:
    if request.param == "sqlite":
        repos = open_admin(tmp_path / "data")
        yield repos
        repos.close()
        return
    with pg_schema() as url:
        repos = open_admin(tmp_path / "unused", url)
        yield repos
        repos.close()


def test_keys(admin: AdminRepos) -> None:
    key, secret = admin.keys.create("free", 5, "ops")
    assert secret.startswith("mk_") and (key.plan, key.rate, key.label) == ("free", 5, "ops")
    assert [k.id for k in admin.keys.list()] == [key.id]
    assert admin.keys.revoke(key.id) is True
    assert admin.keys.revoke(key.id) is False  # once
    assert admin.keys.list()[0].revoked_at is not None


def test_users(admin: AdminRepos) -> None:
    user = admin.users.create("Li@Example.cn", "hash", "Li", "Acme", now=NOW)
    assert (user.email, user.created_at) == ("li@example.cn", NOW)
    with pytest.raises(DuplicateEmail):
        admin.users.create("li@example.cn", "hash2")
    assert admin.users.disable("LI@example.cn") is True
    assert admin.users.disable("li@example.cn") is False


def test_content_import_is_idempotent_in_chunks(admin: AdminRepos) -> None:
    items = [ContentItem(ContentKind.NEWS, Localised(f"标题 {i}", f"Title {i}"), Localised("摘要", "Summary"),
                         NOW - i, source="test", tags=("x",)) for i in range(5)]
    assert admin.content.import_items(items, chunk=2) == 5
    assert admin.content.import_items(items, chunk=2) == 0  # ids derive from content: nothing twice


def test_candles(admin: AdminRepos) -> None:
    day = date(2026, 3, 2)
    admin.candles.upsert([("brent", day, 80.0, 81.0, 79.0, 80.5, 100.0)], chunk=1)
    admin.candles.upsert([("brent", day, 80.0, 82.0, 79.0, 81.5, 120.0)])  # the same day again: replaced
    assert admin.candles.since(day) == [("brent", day, 80.0, 82.0, 79.0, 81.5, 120.0)]
    assert admin.candles.since(date(2026, 3, 3)) == []


def test_receipts_import_transition_and_evidence(admin: AdminRepos) -> None:
    fresh = [ReceiptData(f"T-{i:04d}", "PX", "A", 10.0, "t", "Ningbo", "宁波远东石化贸易有限公司",
                         ReceiptStatus.ACTIVE, NOW) for i in range(5)]
    result = admin.receipts.import_all(fresh, now=NOW, chunk=2)
    assert (result.inserted, result.updated, result.unchanged, len(result.hashes)) == (5, 0, 0, 5)
    again = admin.receipts.import_all([replace(fresh[0], status=ReceiptStatus.PLEDGED), *fresh[1:]], now=NOW + 1)
    assert (again.inserted, again.updated, again.unchanged) == (0, 1, 4)
    with pytest.raises(ReceiptConflict):  # checked before anything is written
        admin.receipts.import_all([replace(fresh[1], status=ReceiptStatus.FROZEN), replace(fresh[2], grade="B")])
    assert admin.receipts.public("T-0001")["status"] == "active"  # type: ignore[index]
    with pytest.raises(IllegalTransition):
        admin.receipts.transition("T-0000", ReceiptStatus.CANCELLED)  # a pledge is released first
    digest = admin.receipts.transition("T-0000", ReceiptStatus.ACTIVE, now=NOW + 2)
    assert digest == result.hashes[0]  # back to what it was: the same document, the same hash
    view = admin.receipts.public("T-0000")
    assert view is not None and view["evidenceHash"] == digest and "*" in view["holder"]
    assert admin.evidence.lookup(digest) == {"hash": digest, "verified": False, "status": "pending"}
    block = admin.evidence.anchor_all(batch=4)
    assert block is not None and block.tree_size == 10 + 5 + 1  # 10 demo, 5 new, 1 pledge (the release repeats a hash)
    found = admin.evidence.lookup(digest)
    # leaf 10 (after the 10 demo receipts), proved against the block that first anchored it (4 per block)
    assert found is not None and found["verified"] is True and (found["leafIndex"], found["treeSize"]) == (10, 12)
    assert admin.evidence.submit(digest) == "anchored"


def test_outbox_retry_refuses_what_it_cannot_retry(admin: AdminRepos) -> None:
    assert admin.outbox.list_jobs() == [] and admin.outbox.for_record("cooperation", "coop_x") == []
    with pytest.raises(JobNotFound):
        admin.outbox.retry("job_missing", NOW)
