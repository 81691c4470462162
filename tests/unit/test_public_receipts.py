"""Receipts core: holder masking, the state-transition table, canonical evidence hashes, the repository."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from server.store.site.evidence_sqlite import EvidenceLog
from server.store.site.receipts import (
    TRANSITIONS,
    IllegalTransition,
    ReceiptConflict,
    ReceiptData,
    ReceiptStatus,
    canonical_json,
    check_transition,
    demo_receipts,
    mask_holder,
)
from server.store.sql.db import open_db
from server.store.sql.sqlite_sync import ReceiptRepo

S = ReceiptStatus


@pytest.mark.parametrize(
    ("holder", "masked"),
    [
        ("上海远东石化贸易有限公司", "上海******有限公司"),
        ("中国石化销售股份有限公司", "中国******有限公司"),
        ("某某有限公司", "某***公司"),
        ("Acme Trading", "Ac********ng"),
        ("ab", "a*"),
        ("x", "*"),
        ("", ""),
    ],
)
def test_mask_examples(holder: str, masked: str) -> None:
    assert mask_holder(holder) == masked


def test_mask_never_shows_more_than_half() -> None:
    rng = random.Random(7)
    alphabet = "上海北京有限公司集团股份ABCxyz -.,"
    for _ in range(3000):
        n = rng.randrange(0, 60)
        holder = "".join(rng.choice(alphabet) for _ in range(n))
        masked = mask_holder(holder)
        assert len(masked) == n
        shown = sum(1 for c in masked if c != "*")
        assert shown <= n // 2, (holder, masked)


def test_transition_table_is_enforced_for_every_pair() -> None:
    for old in S:
        for new in S:
            if new in TRANSITIONS[old]:
                check_transition("R-1", old, new)
            else:
                with pytest.raises(IllegalTransition) as err:
                    check_transition("R-1", old, new)
                assert err.value.old is old and err.value.new is new
    assert TRANSITIONS[S.CANCELLED] == frozenset()  # final
    assert S.CANCELLED not in TRANSITIONS[S.PLEDGED]  # a pledge is released before cancellation


def _receipt(status: S = S.ACTIVE, holder: str = "上海远东石化贸易有限公司") -> ReceiptData:
    return ReceiptData("WR-T-1", "甲醇", "优等品", 100, "t", "宁波", holder, status, 1_767_225_600.0, None)


def test_canonical_json_is_sorted_salted_and_normalised() -> None:
    doc = orjson.loads(canonical_json(_receipt(), "00" * 16))
    raw = canonical_json(_receipt(), "00" * 16)
    assert list(doc) == sorted(doc)
    assert raw == orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    assert doc["quantity"] == 100 and b'"quantity":100,' in raw  # integral quantities are JSON integers
    assert doc["issuedAt"] == "2026-01-01T08:00:00.000+08:00" and doc["expiresAt"] is None
    assert canonical_json(_receipt(), "11" * 16) != raw  # the salt changes the hash


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path / "data")
    yield c
    c.close()


def test_seeded_demo_receipts_have_pending_evidence(conn: sqlite3.Connection) -> None:
    log = EvidenceLog(conn)
    repo = ReceiptRepo(conn, log)
    demo = demo_receipts(1_767_225_600.0)
    assert len(demo) == 10
    for r in demo:
        view = repo.public(r.receipt_no)
        assert view is not None and view["holder"] == mask_holder(r.holder) != r.holder
        found = log.lookup(view["evidenceHash"])
        assert found is not None and found["status"] == "pending"
    assert log.anchor_pending() is not None


def test_import_inserts_then_transitions_and_rejects_changed_details(conn: sqlite3.Connection) -> None:
    log = EvidenceLog(conn)
    repo = ReceiptRepo(conn, log)
    first = repo.import_all([_receipt()])
    assert (first.inserted, first.updated, first.unchanged) == (1, 0, 0)
    view = repo.public("WR-T-1")
    assert view is not None and view["evidenceHash"] == first.hashes[0]
    (salt,) = conn.execute("SELECT salt FROM receipts WHERE receipt_no = 'WR-T-1'").fetchone()
    assert first.hashes[0] == hashlib.sha256(canonical_json(_receipt(), salt)).hexdigest()
    assert repo.import_all([_receipt()]).unchanged == 1
    pledged = repo.import_all([_receipt(S.PLEDGED)])
    assert pledged.updated == 1 and pledged.hashes[0] != first.hashes[0]
    with pytest.raises(IllegalTransition):
        repo.import_all([_receipt(S.CANCELLED)])  # pledged -> cancelled is not allowed
    with pytest.raises(ReceiptConflict) as err:
        repo.import_all([_receipt(S.PLEDGED, holder="另一家公司有限公司")])
    assert "另一家" not in str(err.value)  # errors never carry the holder
    view = repo.public("WR-T-1")
    assert view is not None and view["status"] == "pledged"  # failed imports changed nothing
    assert repo.transition("WR-T-1", S.ACTIVE) != pledged.hashes[0]
    assert log.lookup(pledged.hashes[0]) is not None  # old evidence stays in the append-only log


def test_public_view_never_selects_the_raw_holder(conn: sqlite3.Connection) -> None:
    repo = ReceiptRepo(conn)
    repo.import_all([_receipt()])
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    view = repo.public("WR-T-1")
    conn.set_trace_callback(None)
    assert view is not None and "上海远东石化贸易有限公司" not in orjson.dumps(view).decode()
    assert all("holder_masked" in s and "holder," not in s.replace("holder_masked,", "") for s in statements)
