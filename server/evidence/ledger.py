"""Ledgers that record Merkle roots. `Ledger` is the seam for a real chain adapter.

`HashChain` is a hash chain in a database table (`LocalLedger`: SQLite; PostgreSQL's in
server/store/sql/pg_sync.py). Heights start at 1; the first block's
prev_hash is 32 zero bytes.

    block_hash = SHA-256(b"evidence-block/v1" || u64be(height) || prev_hash
                         || root || u64be(tree_size) || f64be(ts))
    tx_hash    = hex(SHA-256(b"tx" || block_hash))

A float survives an SQLite REAL column bit for bit, so ts can be hashed as an
IEEE 754 double. Hashes are stored as lowercase hex TEXT.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

GENESIS_PREV = bytes(32)
_BLOCK_TAG = b"evidence-block/v1"



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


BlockRow = tuple[int, str, int, str, str, float, str]


def _from_row(row: BlockRow) -> Block:
    height, root, size, prev, bhash, ts, tx = row
    return Block(height, bytes.fromhex(root), size, bytes.fromhex(prev), bytes.fromhex(bhash), ts, tx)


def _intact(b: Block, prev: Block | None) -> bool:
    expected_prev = prev.block_hash if prev is not None else GENESIS_PREV
    return (
        b.prev_hash == expected_prev
        and b.block_hash == block_hash(b.height, b.prev_hash, b.root, b.tree_size, b.ts)
        and b.tx_hash == tx_hash(b.block_hash)
    )


class HashChain:
    """The ledger's logic (append, verify) over the block table; subclasses give their database's SQL."""

    name = "local"
    COLUMNS = "height, root, tree_size, prev_hash, block_hash, ts, tx_hash"

    # -- storage (each backend's dialect)

    def write_transaction(self) -> AbstractContextManager[object]:
        """The caller's transaction if one is open, else one of its own."""
        raise NotImplementedError

    def last_block(self) -> tuple[int, str] | None:
        """(height, block_hash hex) of the newest block."""
        raise NotImplementedError

    def insert_block(self, b: Block) -> None:
        raise NotImplementedError

    def block_row(self, height: int) -> BlockRow | None:
        raise NotImplementedError

    def block_rows(self) -> Iterable[BlockRow]:
        """Every block, by height."""
        raise NotImplementedError

    # -- logic

    def anchor(self, root: bytes, tree_size: int, ts: float) -> Block:
        """Append a block. Joins the caller's transaction if one is open, else opens its own."""
        with self.write_transaction():
            last = self.last_block()
            height = last[0] + 1 if last else 1
            prev = bytes.fromhex(last[1]) if last else GENESIS_PREV
            bhash = block_hash(height, prev, root, tree_size, ts)
            block = Block(height, root, tree_size, prev, bhash, ts, tx_hash(bhash))
            self.insert_block(block)
            return block

    def block(self, height: int) -> Block | None:
        row = self.block_row(height)
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
            for expected_height, row in enumerate(self.block_rows(), start=1):
                b = _from_row(row)
                if b.height != expected_height or not _intact(b, prev):
                    return False
                prev = b
        except (ValueError, TypeError, struct.error):  # unparsable hex, wrong lengths, out-of-range ints
            return False
        return True


def block_values(b: Block) -> tuple[int, str, int, str, str, float, str]:
    """A block as the values of HashChain.COLUMNS."""
    return (b.height, b.root.hex(), b.tree_size, b.prev_hash.hex(), b.block_hash.hex(), b.ts, b.tx_hash)
