"""Append-only evidence log: submitted SHA-256 hashes batched into an RFC 9162 Merkle tree.

Invariants:
- a leaf's `idx` is its tree position, assigned 0, 1, 2, ... in submission order and
  never changed; pending leaves always follow every anchored leaf.
- `anchor_pending` is the only writer of `batch` and of `evidence_nodes`; it runs in
  one `BEGIN IMMEDIATE` transaction, so the leaves, the nodes and the ledger block
  land together or not at all.
- `evidence_nodes` holds every perfect subtree hash (level >= 1) of the anchored
  leaves; level 0 is recomputed from the leaf rows. A perfect subtree never changes,
  so a root or proof for any past tree size needs only O(log n) rows.

One `EvidenceLog` per connection, one connection per thread.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import struct
import time
from collections.abc import Callable
from typing import Any

from server.store.db import EVIDENCE_LOCK, dialect, joined_transaction, lock_sql

from .ledger import Block, Ledger, LocalLedger
from .merkle import inclusion_path, leaf_hash, node_hash, tree_root, verify_inclusion

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS evidence_leaves (
        idx          INTEGER PRIMARY KEY,
        hash         TEXT UNIQUE NOT NULL,
        submitted_at REAL NOT NULL,
        batch        INTEGER NULL
    )""",
    "CREATE INDEX IF NOT EXISTS evidence_leaves_pending ON evidence_leaves(idx) WHERE batch IS NULL",
    """CREATE TABLE IF NOT EXISTS evidence_nodes (
        level INTEGER NOT NULL,
        pos   INTEGER NOT NULL,
        hash  TEXT NOT NULL,
        PRIMARY KEY (level, pos)
    ) WITHOUT ROWID""",
)

ANCHOR_BATCH = 2000  # leaves per block when anchoring a backlog: a short write transaction, a few ms of hashing

# What a tampered row can raise while being read back: bad hex, missing rows, wrong types.
_CORRUPT = (ValueError, LookupError, TypeError, struct.error)


def normalize_hash(hash_hex: str) -> str:
    """Lowercase a 64-hex-character SHA-256; raise ValueError for anything else."""
    if not isinstance(hash_hex, str) or not _HEX64.fullmatch(hash_hex):
        raise ValueError("hash must be 64 hexadecimal characters")
    return hash_hex.lower()


class EvidenceLog:
    def __init__(
        self,
        conn: sqlite3.Connection,
        ledger: Ledger | None = None,
        clock: Callable[[], float] = time.time,
        *,
        schema: bool = True,
    ) -> None:
        """`schema=False` skips the CREATE TABLE IF NOT EXISTS statements (a read-only connection)."""
        self.conn = conn
        self.clock = clock
        self.postgres = dialect(conn) == "postgresql"
        schema = schema and not self.postgres  # PostgreSQL's tables come from its migrations (server/store/pg.py)
        if schema:
            for stmt in _SCHEMA:
                conn.execute(stmt)
        self.ledger: Ledger = ledger if ledger is not None else LocalLedger(conn, schema=schema)

    # -- writes

    def submit(self, hash_hex: str) -> str:
        """Record a hash; return "pending", or "anchored" if it already was. Idempotent."""
        h = normalize_hash(hash_hex)
        # SQLite: one autocommit statement, so MAX(idx)+1 is atomic under its write lock. PostgreSQL has no single
        # writer: a transaction holding the advisory lock makes MAX(idx)+1 gap-free and unique.
        with joined_transaction(self.conn, "BEGIN") if self.postgres else contextlib.nullcontext():
            if self.postgres:
                self.conn.execute(lock_sql(EVIDENCE_LOCK))
            self.conn.execute(
                "INSERT OR IGNORE INTO evidence_leaves (idx, hash, submitted_at, batch) "
                "VALUES ((SELECT COALESCE(MAX(idx) + 1, 0) FROM evidence_leaves), ?, ?, NULL)",
                (h, self.clock()),
            )
            row = self.conn.execute("SELECT batch FROM evidence_leaves WHERE hash = ?", (h,)).fetchone()
        return "pending" if row[0] is None else "anchored"

    def anchor_pending(self, max_leaves: int | None = None) -> Block | None:
        """Anchor the pending leaves (the oldest `max_leaves` of them, if given) in one block over the whole
        log; None if nothing is pending. A bounded batch keeps the write transaction and its hashing short."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.postgres:  # one anchorer at a time, and no submit between reading and extending the tree
                self.conn.execute(lock_sql(EVIDENCE_LOCK))
            block = self._anchor_locked(max_leaves)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return block

    def _anchor_locked(self, max_leaves: int | None) -> Block | None:
        pending = self.conn.execute(
            "SELECT idx, hash FROM evidence_leaves WHERE batch IS NULL ORDER BY idx"
            + ("" if max_leaves is None else " LIMIT ?"),
            () if max_leaves is None else (max_leaves,),
        ).fetchall()
        if not pending:
            return None
        (anchored,) = self.conn.execute(
            "SELECT COUNT(*) FROM evidence_leaves WHERE batch IS NOT NULL"
        ).fetchone()
        new_size = anchored + len(pending)
        if [idx for idx, _ in pending] != list(range(anchored, new_size)):
            raise RuntimeError("evidence log corrupt: pending leaves do not follow the anchored ones")
        self._extend_nodes(anchored, [leaf_hash(bytes.fromhex(h)) for _, h in pending])
        block = self.ledger.anchor(tree_root(new_size, self._perfect), new_size, self.clock())
        self.conn.execute(
            "UPDATE evidence_leaves SET batch = ? WHERE batch IS NULL AND idx < ?", (block.height, new_size)
        )
        return block

    def _extend_nodes(self, old_size: int, new_leaves: list[bytes]) -> None:
        """Store the perfect subtrees completed by appending `new_leaves` after `old_size` leaves."""
        new_size = old_size + len(new_leaves)
        below = {old_size + i: h for i, h in enumerate(new_leaves)}  # pos -> hash one level down
        rows: list[tuple[int, int, str]] = []
        level = 1
        while (old_size >> level) < (new_size >> level):
            current: dict[int, bytes] = {}
            for pos in range(old_size >> level, new_size >> level):
                left, right = (
                    below[c] if c in below else self._perfect(c << (level - 1), level - 1)
                    for c in (2 * pos, 2 * pos + 1)
                )
                current[pos] = node_hash(left, right)
            rows.extend((level, pos, h.hex()) for pos, h in current.items())
            below, level = current, level + 1
        self.conn.executemany("INSERT INTO evidence_nodes (level, pos, hash) VALUES (?, ?, ?)", rows)

    def _perfect(self, start: int, level: int) -> bytes:
        """Hash of the aligned perfect subtree of 2**level leaves starting at leaf `start`."""
        if level == 0:
            row = self.conn.execute("SELECT hash FROM evidence_leaves WHERE idx = ?", (start,)).fetchone()
            if row is None:
                raise LookupError(f"leaf {start} missing")
            return leaf_hash(bytes.fromhex(row[0]))
        row = self.conn.execute(
            "SELECT hash FROM evidence_nodes WHERE level = ? AND pos = ?", (level, start >> level)
        ).fetchone()
        if row is None:
            raise LookupError(f"node {level}/{start >> level} missing")
        return bytes.fromhex(row[0])

    # -- reads

    def pending_count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM evidence_leaves WHERE batch IS NULL").fetchone()[0]

    def lookup(self, hash_hex: str) -> dict[str, Any] | None:
        """What is known about a hash; raises ValueError for a malformed one.

        - unknown: None
        - submitted, not anchored: {hash, verified: False, status: "pending"}
        - anchored and checked: {hash, verified: True, status: "anchored", anchoredAt (epoch
          seconds), ledger, blockHeight, txHash, merkleRoot, leafIndex, treeSize, proof}, where
          merkleRoot/treeSize are those of the block that first anchored the leaf and proof is
          the RFC 9162 inclusion proof (hex, leaf side first) against that tree size.
        - anchored but the stored data no longer checks out - the proof does not lead to the
          block's root, the block's hash or prev link does not recompute, the leaf lies outside
          the range its block added, or rows are missing or unreadable:
          {hash, verified: False, status: "tampered"}
        """
        h = normalize_hash(hash_hex)
        row = self.conn.execute("SELECT idx, batch FROM evidence_leaves WHERE hash = ?", (h,)).fetchone()
        if row is None:
            return None
        idx, height = row
        if height is None:
            return {"hash": h, "verified": False, "status": "pending"}
        try:
            found = self._checked_proof(h, idx, height)
        except _CORRUPT:
            found = None
        if found is None:
            return {"hash": h, "verified": False, "status": "tampered"}
        block, proof = found
        return {
            "hash": h,
            "verified": True,
            "status": "anchored",
            "anchoredAt": block.ts,
            "ledger": self.ledger.name,
            "blockHeight": block.height,
            "txHash": block.tx_hash,
            "merkleRoot": block.root.hex(),
            "leafIndex": idx,
            "treeSize": block.tree_size,
            "proof": [p.hex() for p in proof],
        }

    def _checked_proof(self, h: str, idx: int, height: int) -> tuple[Block, list[bytes]] | None:
        block = self.ledger.block(height)
        if block is None or not self.ledger.verify_block(height):
            return None
        prev = self.ledger.block(height - 1) if height > 1 else None
        first = prev.tree_size if prev is not None else 0
        if not first <= idx < block.tree_size:
            return None
        proof = inclusion_path(idx, block.tree_size, self._perfect)
        if not verify_inclusion(bytes.fromhex(h), idx, block.tree_size, proof, block.root):
            return None
        return block, proof

    def anchor_all(self, batch: int = ANCHOR_BATCH) -> Block | None:
        """Anchor every pending leaf, `batch` at a time (one transaction and block each); the last block."""
        last = None
        while (block := self.anchor_pending(batch)) is not None:
            last = block
        return last

    def submit_and_anchor(self, hash_hex: str) -> dict[str, Any]:
        """Submit a hash and anchor everything pending (CLI `evidence anchor`); returns its lookup."""
        self.submit(hash_hex)
        self.anchor_all()
        result = self.lookup(hash_hex)
        assert result is not None  # just submitted
        return result
