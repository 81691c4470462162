"""Digital warehouse receipts: explicit states, masked holders, evidence hashes in the Merkle log.

Invariants:
- the raw `holder` is written here and read back only to compare a re-import;
  every read that serves a client selects `holder_masked` instead.
- `status` changes only through `TRANSITIONS`; anything else raises `IllegalTransition`.
- a receipt's `evidence_hash` is SHA-256 of its canonical JSON (orjson, sorted keys)
  including a per-receipt random `salt`, so the public hash cannot be used to
  confirm a guessed holder name; every hash is submitted to the evidence log.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from server.core.transitions import IllegalTransition as IllegalTransition
from server.core.transitions import Transitions
from server.evidence.log import MerkleLog
from server.market.timefmt import iso

RECEIPT_NO_PATTERN = r"[A-Za-z0-9][A-Za-z0-9-]{2,63}"


class ReceiptStatus(StrEnum):
    ACTIVE = "active"
    PLEDGED = "pledged"
    FROZEN = "frozen"
    CANCELLED = "cancelled"


S = ReceiptStatus
# A pledge must be released (back to active) before cancellation; a freeze can be lifted
# to the state it interrupted or end in cancellation; cancelled is final.
TRANSITIONS = Transitions("receipt", ReceiptStatus, {
    S.ACTIVE: {S.PLEDGED, S.FROZEN, S.CANCELLED},
    S.PLEDGED: {S.ACTIVE, S.FROZEN},
    S.FROZEN: {S.ACTIVE, S.PLEDGED, S.CANCELLED},
    S.CANCELLED: set(),
})


class ReceiptConflict(Exception):
    """A re-imported receipt differs in more than its status (receipts are immutable otherwise)."""


def check_transition(receipt_no: str, old: ReceiptStatus, new: ReceiptStatus) -> None:
    TRANSITIONS.check(old, new, receipt_no)


LEGAL_SUFFIXES = tuple(sorted(
    ("股份有限公司", "有限责任公司", "集团有限公司", "有限公司", "集团", "公司",
     "Co., Ltd.", "Co., Ltd", "Ltd.", "Ltd", "Inc.", "LLC", "GmbH"),
    key=len, reverse=True,
))


def mask_holder(holder: str) -> str:
    """Show at most half the characters: up to 2 leading ones and a legal-form suffix (or 2 trailing).

    "上海远东石化贸易有限公司" -> "上海******有限公司". Hidden characters become one '*' each.
    """
    n = len(holder)
    budget = n // 2
    if budget == 0:
        return "*" * n
    tail = _suffix_len(holder, budget)
    head = min(2, budget - tail)
    return holder[:head] + "*" * (n - head - tail) + holder[n - tail:]


def _suffix_len(holder: str, budget: int) -> int:
    fitting = [s for s in LEGAL_SUFFIXES if holder.endswith(s) and len(s) <= budget]
    roomy = [s for s in fitting if len(s) <= budget - 2]  # prefer leaving room for 2 leading characters
    if roomy or fitting:
        return len((roomy or fitting)[0])
    return min(2, budget // 2)


@dataclass(frozen=True, slots=True)
class ReceiptData:
    receipt_no: str
    commodity: str
    grade: str
    quantity: float
    unit: str
    warehouse: str
    holder: str
    status: ReceiptStatus
    issued_at: float
    expires_at: float | None = None

    def details(self) -> tuple[Any, ...]:
        """Everything but the status: what a re-import must leave unchanged."""
        return (self.commodity, self.grade, float(self.quantity), self.unit, self.warehouse, self.holder,
                self.issued_at, self.expires_at)


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def canonical_json(r: ReceiptData, salt: str) -> bytes:
    doc = {
        "receiptNo": r.receipt_no, "commodity": r.commodity, "grade": r.grade, "quantity": _number(r.quantity),
        "unit": r.unit, "warehouse": r.warehouse, "holder": r.holder, "status": r.status.value,
        "issuedAt": iso(r.issued_at), "expiresAt": iso(r.expires_at) if r.expires_at is not None else None,
        "salt": salt,
    }
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def evidence_hash(r: ReceiptData, salt: str) -> str:
    return hashlib.sha256(canonical_json(r, salt)).hexdigest()


@dataclass(slots=True)
class ImportResult:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    hashes: list[str] = field(default_factory=list)


IMPORT_CHUNK = 1000  # receipts per write transaction: the write lock is held for milliseconds, not seconds

PUBLIC_COLUMNS = ("receipt_no, commodity, grade, quantity, unit, warehouse, holder_masked, status, "
                   "issued_at, expires_at, evidence_hash")


def public_view(row: Any) -> dict[str, Any]:
    """The client's view of a row of PUBLIC_COLUMNS (the holder already masked)."""
    return {
        "receiptNo": row["receipt_no"], "commodity": row["commodity"], "grade": row["grade"],
        "quantity": _number(row["quantity"]), "unit": row["unit"], "warehouse": row["warehouse"],
        "holder": row["holder_masked"], "status": row["status"], "issuedAt": iso(row["issued_at"]),
        "expiresAt": iso(row["expires_at"]) if row["expires_at"] is not None else None,
        "evidenceHash": row["evidence_hash"],
    }


def receipt_from_row(row: Any) -> tuple[ReceiptData, str]:
    """A stored receipt (`SELECT *`) and its salt."""
    data = ReceiptData(row["receipt_no"], row["commodity"], row["grade"], row["quantity"], row["unit"],
                       row["warehouse"], row["holder"], ReceiptStatus(row["status"]), row["issued_at"],
                       row["expires_at"])
    return data, row["salt"]


def receipt_values(r: ReceiptData, salt: str, digest: str, now: float) -> tuple[Any, ...]:
    """A new receipt as the values of INSERT_COLUMNS."""
    return (r.receipt_no, r.commodity, r.grade, float(r.quantity), r.unit, r.warehouse, r.holder,
            mask_holder(r.holder), r.status.value, r.issued_at, r.expires_at, salt, digest, now)


INSERT_COLUMNS = ("receipt_no, commodity, grade, quantity, unit, warehouse, holder, holder_masked, status, "
                  "issued_at, expires_at, salt, evidence_hash, updated_at")


class ReceiptBook:
    """Receipt imports and status changes (checks, chunks, evidence hashes) over the receipts table;
    subclasses give their database's SQL (`ReceiptRepo` below: SQLite; PostgreSQL's in server/store/sql/pg_sync.py)."""

    evidence: MerkleLog

    # -- storage (each backend's dialect)

    def write_transaction(self) -> AbstractContextManager[object]:
        """One write transaction, serialised with other writers of receipts (other processes included)."""
        raise NotImplementedError

    def load(self, receipt_no: str) -> tuple[ReceiptData, str] | None:
        """A stored receipt and its salt."""
        raise NotImplementedError

    def insert_row(self, values: tuple[Any, ...]) -> None:
        """INSERT_COLUMNS' values."""
        raise NotImplementedError

    def update_status(self, receipt_no: str, status: ReceiptStatus, digest: str, now: float) -> None:
        raise NotImplementedError

    def public(self, receipt_no: str) -> dict[str, Any] | None:
        """The client's view: the holder already masked; the raw holder is not even selected."""
        raise NotImplementedError

    # -- logic

    def import_all(self, receipts: Iterable[ReceiptData], now: float | None = None,
                   chunk: int = IMPORT_CHUNK) -> ImportResult:
        """Insert new receipts, apply status changes to known ones. Hashes stay pending.

        Every receipt is first checked against the stored ones (reads only: a conflict or an illegal
        status change raises before anything is written); then they are written `chunk` at a time, one
        transaction each, so a live server's writes wait milliseconds for the lock, not the whole import.
        Each chunk re-checks under its lock; if a concurrent change makes one fail, the earlier chunks
        stay committed, and running the same file again is idempotent (they count as unchanged).
        """
        now = time.time() if now is None else now
        items = list(receipts)
        for r in items:
            self._check(r)
        result = ImportResult()
        for start in range(0, len(items), chunk):
            with self.write_transaction():
                for r in items[start:start + chunk]:
                    self._upsert(r, now, result)
        return result

    def _check(self, r: ReceiptData) -> None:
        current = self.load(r.receipt_no)
        if current is None:
            return
        old, _salt = current
        if old.details() != r.details():
            raise ReceiptConflict(f"receipt {r.receipt_no} exists with different details; only status may change")
        if old.status is not r.status:
            check_transition(r.receipt_no, old.status, r.status)

    def transition(self, receipt_no: str, new: ReceiptStatus, now: float | None = None) -> str:
        """Change one receipt's status (raises IllegalTransition / KeyError); returns the new evidence hash."""
        with self.write_transaction():
            current = self.load(receipt_no)
            if current is None:
                raise KeyError(receipt_no)
            r, salt = current
            check_transition(receipt_no, r.status, new)
            return self._set_status(r, salt, new, time.time() if now is None else now)

    def _upsert(self, r: ReceiptData, now: float, result: ImportResult) -> None:
        current = self.load(r.receipt_no)
        if current is None:
            result.hashes.append(self.insert(r, now))
            result.inserted += 1
            return
        old, salt = current
        if old.details() != r.details():
            raise ReceiptConflict(f"receipt {r.receipt_no} exists with different details; only status may change")
        if old.status is r.status:
            result.unchanged += 1
            return
        check_transition(r.receipt_no, old.status, r.status)
        result.hashes.append(self._set_status(old, salt, r.status, now))
        result.updated += 1

    def insert(self, r: ReceiptData, now: float) -> str:
        """A new receipt (the caller's transaction) and its evidence hash submitted; returns the hash."""
        salt = secrets.token_hex(16)
        digest = evidence_hash(r, salt)
        self.insert_row(receipt_values(r, salt, digest, now))
        self.evidence.submit(digest)
        return digest

    def _set_status(self, r: ReceiptData, salt: str, new: ReceiptStatus, now: float) -> str:
        changed = ReceiptData(r.receipt_no, r.commodity, r.grade, r.quantity, r.unit, r.warehouse, r.holder,
                              new, r.issued_at, r.expires_at)
        digest = evidence_hash(changed, salt)
        self.update_status(r.receipt_no, new, digest, now)
        self.evidence.submit(digest)
        return digest


# --- demo receipts, seeded with a new database (server/store/site/seed.py) --------------------------------------

_DAY = 86400.0
# receiptNo, commodity, grade, quantity, unit, warehouse, holder, status, issued days ago, valid days
_DEMO: tuple[tuple[str, str, str, float, str, str, str, str, int, int | None], ...] = (
    ("WR-NB-000101", "甲醇", "优等品 GB/T 338", 5000, "t", "宁波镇海港化工储罐区 3 号库",
     "上海远东石化贸易有限公司", "active", 40, 365),
    ("WR-ZJ-000102", "精对苯二甲酸 PTA", "优等品", 2400, "t", "绍兴柯桥化纤物流园 A 库",
     "浙江恒泰新材料股份有限公司", "pledged", 37, 365),
    ("WR-JS-000103", "聚丙烯 PP", "拉丝 T30S", 1200, "t", "江阴临港塑化仓储中心",
     "江苏华盛塑化有限公司", "active", 33, 180),
    ("WR-SD-000104", "线性低密度聚乙烯 LLDPE", "膜料 7042", 800, "t", "青岛前湾保税港区 5 号仓",
     "山东鲁润能源集团有限公司", "active", 29, 180),
    ("WR-TJ-000105", "聚氯乙烯 PVC", "SG-5", 1500, "t", "天津港南疆化工品仓库",
     "天津滨海聚合物有限公司", "frozen", 25, 365),
    ("WR-GD-000106", "乙二醇 MEG", "聚酯级", 3000, "t", "广州南沙港石化码头罐区",
     "广州南沙石油化工仓储有限公司", "active", 21, 365),
    ("WR-LN-000107", "苯乙烯", "优等品 GB/T 3915", 1000, "t", "大连长兴岛石化仓储 2 号罐",
     "大连北方化工贸易有限公司", "pledged", 17, 120),
    ("WR-FJ-000108", "燃料油", "RMG 380", 8000, "t", "舟山外钓岛油品储运基地",
     "福建闽海能源有限公司", "active", 13, None),
    ("WR-CQ-000109", "尿素", "颗粒 总氮 46.4%", 2000, "t", "重庆长寿化工园区散货仓",
     "重庆长江化肥销售有限责任公司", "cancelled", 9, 90),
    ("WR-HB-000110", "液碱 (烧碱)", "32% 离子膜", 600, "t", "武汉阳逻港危化品仓储区",
     "湖北楚天氯碱化工有限公司", "active", 5, 180),
)


def demo_receipts(now: float) -> list[ReceiptData]:
    base = now - now % 3600
    return [
        ReceiptData(no, com, grade, qty, unit, wh, holder, ReceiptStatus(status), base - ago * _DAY,
                    base + (valid - ago) * _DAY if valid is not None else None)
        for no, com, grade, qty, unit, wh, holder, status, ago, valid in _DEMO
    ]

