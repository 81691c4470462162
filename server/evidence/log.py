"""Append-only evidence log: submitted SHA-256 hashes batched into an RFC 9162 Merkle tree.

Invariants:
- a leaf's `idx` is its tree position, assigned 0, 1, 2, ... in submission order and
  never changed; pending leaves always follow every anchored leaf.
- `anchor_pending` is the only writer of `batch` and of `evidence_nodes`; it runs in
  one write transaction (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: under an advisory lock),
  so the leaves, the nodes and the ledger block land together or not at all.
- `evidence_nodes` holds every perfect subtree hash (level >= 1) of the anchored
  leaves; level 0 is recomputed from the leaf rows. A perfect subtree never changes,
  so a root or proof for any past tree size needs only O(log n) rows.

One `EvidenceLog` per connection, one connection per thread.
"""

from __future__ import annotations

import re
import struct
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from .ledger import Block, Ledger
from .merkle import inclusion_path, leaf_hash, node_hash, tree_root, verify_inclusion

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


ANCHOR_BATCH = 2000  # leaves per block when anchoring a backlog: a short write transaction, a few ms of hashing

# What a tampered row can raise while being read back: bad hex, missing rows, wrong types.
_CORRUPT = (ValueError, LookupError, TypeError, struct.error)


def normalize_hash(hash_hex: str) -> str:
    """Lowercase a 64-hex-character SHA-256; raise ValueError for anything else."""
    if not isinstance(hash_hex, str) or not _HEX64.fullmatch(hash_hex):
        raise ValueError("hash must be 64 hexadecimal characters")
    return hash_hex.lower()


class MerkleLog:
    """The log's logic over its tables; subclasses give their database's SQL (`EvidenceLog` below: SQLite;
    PostgreSQL's in server/store/sql/pg_sync.py). One instance per connection, one connection per thread."""

    def __init__(self, ledger: Ledger, clock: Callable[[], float] = time.time) -> None:
        self.ledger = ledger
        self.clock = clock

    # -- storage (each backend's dialect)

    def insert_leaf(self, h: str, ts: float) -> int | None:
        """Append `h` at the next index unless present; its batch (None: pending). Atomic: indexes stay gap-free."""
        raise NotImplementedError

    def anchoring(self) -> AbstractContextManager[object]:
        """The write transaction of one anchoring batch: no other anchorer and no submit meanwhile."""
        raise NotImplementedError

    def pending_leaves(self, limit: int | None) -> list[tuple[int, str]]:
        """(idx, hash) of the oldest pending leaves."""
        raise NotImplementedError

    def count_leaves(self, anchored: bool) -> int:
        raise NotImplementedError

    def insert_nodes(self, rows: list[tuple[int, int, str]]) -> None:
        raise NotImplementedError

    def set_batch(self, height: int, below: int) -> None:
        """Mark the pending leaves under index `below` as anchored in block `height`."""
        raise NotImplementedError

    def leaf_hash_at(self, idx: int) -> str | None:
        raise NotImplementedError

    def node_hash_at(self, level: int, pos: int) -> str | None:
        raise NotImplementedError

    def leaf(self, h: str) -> tuple[int, int | None] | None:
        """(idx, batch) of a submitted hash."""
        raise NotImplementedError

    # -- writes

    def submit(self, hash_hex: str) -> str:
        """Record a hash; return "pending", or "anchored" if it already was. Idempotent."""
        return "pending" if self.insert_leaf(normalize_hash(hash_hex), self.clock()) is None else "anchored"

    def anchor_pending(self, max_leaves: int | None = None) -> Block | None:
        """Anchor the pending leaves (the oldest `max_leaves` of them, if given) in one block over the whole
        log; None if nothing is pending. A bounded batch keeps the write transaction and its hashing short."""
        with self.anchoring():
            return self._anchor_locked(max_leaves)

    def _anchor_locked(self, max_leaves: int | None) -> Block | None:
        pending = self.pending_leaves(max_leaves)
        if not pending:
            return None
        anchored = self.count_leaves(anchored=True)
        new_size = anchored + len(pending)
        if [idx for idx, _ in pending] != list(range(anchored, new_size)):
            raise RuntimeError("evidence log corrupt: pending leaves do not follow the anchored ones")
        self._extend_nodes(anchored, [leaf_hash(bytes.fromhex(h)) for _, h in pending])
        block = self.ledger.anchor(tree_root(new_size, self._perfect), new_size, self.clock())
        self.set_batch(block.height, new_size)
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
        if rows:
            self.insert_nodes(rows)

    def _perfect(self, start: int, level: int) -> bytes:
        """Hash of the aligned perfect subtree of 2**level leaves starting at leaf `start`."""
        if level == 0:
            leaf = self.leaf_hash_at(start)
            if leaf is None:
                raise LookupError(f"leaf {start} missing")
            return leaf_hash(bytes.fromhex(leaf))
        node = self.node_hash_at(level, start >> level)
        if node is None:
            raise LookupError(f"node {level}/{start >> level} missing")
        return bytes.fromhex(node)

    # -- reads

    def pending_count(self) -> int:
        return self.count_leaves(anchored=False)

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
        row = self.leaf(h)
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
