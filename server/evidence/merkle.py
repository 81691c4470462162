"""RFC 9162 (Certificate Transparency v2) Merkle tree hashing. Pure, no I/O.

Leaf hash: SHA-256(0x00 || leaf); node hash: SHA-256(0x01 || left || right).
MTH (section 2.1.1) splits n > 1 leaves at k, the largest power of two below n.

Invariant the efficient paths rely on: every subtree MTH visits is either a
*perfect* subtree (2**level leaves starting at a multiple of 2**level, whose hash
never changes once its leaves exist) or one of the O(log n) subtrees on the right
edge. So root and proof only need a `PerfectHash` source, which a store can back
with persisted nodes and a list can back with `Levels`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

EMPTY_ROOT = hashlib.sha256(b"").digest()

# perfect(start, level) -> hash of leaves [start, start + 2**level); start is aligned.
PerfectHash = Callable[[int, int], bytes]


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """Largest power of two strictly smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def subtree_root(start: int, size: int, perfect: PerfectHash) -> bytes:
    """MTH of leaves [start, start + size) for size >= 1."""
    if size & (size - 1) == 0:
        return perfect(start, size.bit_length() - 1)
    k = split_point(size)
    return node_hash(perfect(start, k.bit_length() - 1), subtree_root(start + k, size - k, perfect))


def tree_root(size: int, perfect: PerfectHash) -> bytes:
    return EMPTY_ROOT if size == 0 else subtree_root(0, size, perfect)


def inclusion_path(index: int, size: int, perfect: PerfectHash) -> list[bytes]:
    """RFC 9162 2.1.3.1 PATH(index, D[size]); siblings ordered from the leaf up."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} outside a tree of {size}")
    path: list[bytes] = []
    start = 0
    while size > 1:  # walk down from the root; prepend so the result reads bottom-up
        k = split_point(size)
        if index < k:
            path.append(subtree_root(start + k, size - k, perfect))
            size = k
        else:
            path.append(perfect(start, k.bit_length() - 1))
            start, index, size = start + k, index - k, size - k
    path.reverse()
    return path


class Levels:
    """All perfect-subtree hashes of a list of leaf hashes, built in O(n)."""

    def __init__(self, hashes: Sequence[bytes]) -> None:
        self.levels: list[list[bytes]] = [list(hashes)]
        while len(self.levels[-1]) > 1:
            below = self.levels[-1]
            self.levels.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])

    def perfect(self, start: int, level: int) -> bytes:
        return self.levels[level][start >> level]


def root_from_hashes(hashes: Sequence[bytes]) -> bytes:
    return tree_root(len(hashes), Levels(hashes).perfect)


def root(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) over raw leaf data (RFC 9162 2.1.1); the empty tree is SHA-256("")."""
    return root_from_hashes([leaf_hash(x) for x in leaves])


def inclusion_proof(index: int, leaves: list[bytes]) -> list[bytes]:
    """PATH(index, D[n]) over raw leaf data (RFC 9162 2.1.3.1)."""
    return inclusion_path(index, len(leaves), Levels([leaf_hash(x) for x in leaves]).perfect)


def root_from_proof(leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes]) -> bytes | None:
    """RFC 9162 2.1.3.2: the root `proof` leads to, or None if the proof is malformed."""
    if not 0 <= index < tree_size:
        return None
    fn, sn, r = index, tree_size - 1, leaf_hash(leaf)
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


def verify_inclusion(leaf: bytes, index: int, tree_size: int, proof: list[bytes], root: bytes) -> bool:
    return root_from_proof(leaf, index, tree_size, proof) == root
