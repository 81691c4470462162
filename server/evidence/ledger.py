"""Ledgers that record Merkle roots. `Ledger` is the seam for a real chain adapter.

`LocalLedger` is a hash chain in SQLite. Heights start at 1; the first block's
prev_hash is 32 zero bytes.

    block_hash = SHA-256(b"evidence-block/v1" || u64be(height) || prev_hash
                         || root || u64be(tree_size) || f64be(ts))
    tx_hash    = hex(SHA-256(b"tx" || block_hash))

A float survives an SQLite REAL column bit for bit, so ts can be hashed as an
IEEE 754 double. Hashes are stored as lowercase hex TEXT.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from dataclasses import dataclass
from typing import Protocol

from server.store.db import dialect, joined_transaction

GENESIS_PREV = bytes(32)
_BLOCK_TAG = b"evidence-block/v1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS evidence_blocks (
    height     INTEGER PRIMARY KEY,
    root       TEXT NOT NULL,
    tree_size  INTEGER NOT NULL,
    prev_hash  TEXT NOT NULL,
    block_hash TEXT NOT NULL,
    ts         REAL NOT NULL,
    tx_hash    TEXT NOT NULL
)
"""


@dataclass(frozen=True)
class Block:
    height: int
    root: bytes
    tree_size: int
    prev_hash: bytes
    block_hash: bytes
    ts: float
    tx_hash: str


class Ledger(Protocol):
    """Where batch roots are recorded. `anchor` may run inside the caller's transaction."""

    name: str

    def anchor(self, root: bytes, tree_size: int, ts: float) -> Block: ...

    def block(self, height: int) -> Block | None: ...

    def verify_block(self, height: int) -> bool:
        """True if the block's hash recomputes and its prev_hash links to its predecessor."""
        ...

    def verify_chain(self) -> bool: ...


def block_hash(height: int, prev_hash: bytes, root: bytes, tree_size: int, ts: float) -> bytes:
    if len(prev_hash) != 32 or len(root) != 32:
        raise ValueError("prev_hash and root must be 32 bytes")
    payload = _BLOCK_TAG + struct.pack(">Q32s32sQd", height, prev_hash, root, tree_size, ts)
    return hashlib.sha256(payload).digest()


def tx_hash(block_hash_: bytes) -> str:
    return hashlib.sha256(b"tx" + block_hash_).hexdigest()


def _from_row(row: tuple[int, str, int, str, str, float, str]) -> Block:
    height, root, size, prev, bhash, ts, tx = row
    return Block(height, bytes.fromhex(root), size, bytes.fromhex(prev), bytes.fromhex(bhash), ts, tx)


def _intact(b: Block, prev: Block | None) -> bool:
    expected_prev = prev.block_hash if prev is not None else GENESIS_PREV
    return (
        b.prev_hash == expected_prev
        and b.block_hash == block_hash(b.height, b.prev_hash, b.root, b.tree_size, b.ts)
        and b.tx_hash == tx_hash(b.block_hash)
    )


class LocalLedger:
    """Hash-chained blocks in the caller's SQLite connection (one connection per thread)."""

    name = "local"
    _COLUMNS = "height, root, tree_size, prev_hash, block_hash, ts, tx_hash"

    def __init__(self, conn: sqlite3.Connection, *, schema: bool = True) -> None:
        self.conn = conn
        if schema and dialect(conn) == "sqlite":  # PostgreSQL's tables come from its migrations
            conn.execute(_SCHEMA)

    def anchor(self, root: bytes, tree_size: int, ts: float) -> Block:
        """Append a block. Joins the caller's transaction if one is open, else opens its own."""
        with joined_transaction(self.conn):
            return self._append(root, tree_size, ts)

    def _append(self, root: bytes, tree_size: int, ts: float) -> Block:
        last = self.conn.execute(
            "SELECT height, block_hash FROM evidence_blocks ORDER BY height DESC LIMIT 1"
        ).fetchone()
        height = last[0] + 1 if last else 1
        prev = bytes.fromhex(last[1]) if last else GENESIS_PREV
        bhash = block_hash(height, prev, root, tree_size, ts)
        block = Block(height, root, tree_size, prev, bhash, ts, tx_hash(bhash))
        self.conn.execute(
            f"INSERT INTO evidence_blocks ({self._COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (height, root.hex(), tree_size, prev.hex(), bhash.hex(), ts, block.tx_hash),
        )
        return block

    def block(self, height: int) -> Block | None:
        row = self.conn.execute(
            f"SELECT {self._COLUMNS} FROM evidence_blocks WHERE height = ?", (height,)
        ).fetchone()
        return _from_row(row) if row else None

    def verify_block(self, height: int) -> bool:
        try:
            b = self.block(height)
            prev = self.block(height - 1) if height > 1 else None
            return b is not None and (height == 1 or prev is not None) and _intact(b, prev)
        except (ValueError, TypeError, struct.error):  # unparsable hex, wrong lengths, out-of-range ints
            return False

    def verify_chain(self) -> bool:
        """Recompute every block hash and prev link, and require heights 1..n without gaps."""
        prev: Block | None = None
        try:
            rows = self.conn.execute(f"SELECT {self._COLUMNS} FROM evidence_blocks ORDER BY height")
            for expected_height, row in enumerate(rows, start=1):
                b = _from_row(row)
                if b.height != expected_height or not _intact(b, prev):
                    return False
                prev = b
        except (ValueError, TypeError, struct.error):  # unparsable hex, wrong lengths, out-of-range ints
            return False
        return True
