"""Evidence log: RFC 9162 hashing, proofs, the local ledger and tamper detection.

The reference functions below are written from RFC 9162 with hashlib only, so they
check the module rather than restate it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.evidence import merkle
from server.store.site.evidence_sqlite import EvidenceLog, LocalLedger

# --- independent reference (RFC 9162 2.1.1 and 2.1.3.2) ---------------------------------


def _sha(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def ref_mth(leaves: list[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return _sha(b"")
    if n == 1:
        return _sha(b"\x00" + leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return _sha(b"\x01" + ref_mth(leaves[:k]) + ref_mth(leaves[k:]))


def ref_root_from_proof(hash_hex: str, index: int, size: int, proof_hex: list[str]) -> bytes | None:
    """RFC 9162 2.1.3.2, with the leaf data being the 32 raw bytes of `hash_hex`."""
    if index >= size:
        return None
    fn, sn = index, size - 1
    r = _sha(b"\x00" + bytes.fromhex(hash_hex))
    for p in (bytes.fromhex(x) for x in proof_hex):
        if sn == 0:
            return None
        if fn % 2 == 1 or fn == sn:
            r = _sha(b"\x01" + p + r)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn //= 2
                    sn //= 2
        else:
            r = _sha(b"\x01" + r + p)
        fn //= 2
        sn //= 2
    return r if sn == 0 else None


def h(i: int) -> str:
    return hashlib.sha256(f"evidence {i}".encode()).hexdigest()


# --- RFC 6962/9162 known vectors (certificate-transparency merkle_tree_test) ------------

CT_LEAVES = [
    bytes.fromhex(x)
    for x in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_PATHS = {
    (0, 8): [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    (5, 7): [
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
    (0, 1): [],
}


def test_hash_prefixes() -> None:
    assert merkle.leaf_hash(b"x") == _sha(b"\x00x")
    assert merkle.node_hash(b"a" * 32, b"b" * 32) == _sha(b"\x01" + b"a" * 32 + b"b" * 32)


@pytest.mark.parametrize("n", range(len(CT_ROOTS)))
def test_known_roots(n: int) -> None:
    assert merkle.root(CT_LEAVES[:n]).hex() == CT_ROOTS[n]
    assert ref_mth(CT_LEAVES[:n]).hex() == CT_ROOTS[n]  # the reference agrees with the vectors too


@pytest.mark.parametrize(("index", "size"), list(CT_PATHS))
def test_known_paths(index: int, size: int) -> None:
    assert [p.hex() for p in merkle.inclusion_proof(index, CT_LEAVES[:size])] == CT_PATHS[(index, size)]


@pytest.mark.parametrize("n", range(1, 18))
def test_every_proof_of_small_trees(n: int) -> None:
    leaves = [bytes.fromhex(h(i)) for i in range(n)]
    want = ref_mth(leaves)
    assert merkle.root(leaves) == want
    for i in range(n):
        proof = merkle.inclusion_proof(i, leaves)
        assert ref_root_from_proof(h(i), i, n, [p.hex() for p in proof]) == want
        assert merkle.verify_inclusion(leaves[i], i, n, proof, want)
        assert not merkle.verify_inclusion(leaves[(i + 1) % n], i, n, proof, want) or n == 1
        assert not merkle.verify_inclusion(leaves[i], i, n, [*proof, want], want)
        assert not merkle.verify_inclusion(leaves[i], n, n, proof, want)
        if proof:
            assert merkle.root_from_proof(leaves[i], i, n, proof[:-1]) is None
            bad = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
            assert not merkle.verify_inclusion(leaves[i], i, n, bad, want)


# --- the persisted log -------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.25

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = sqlite3.connect(tmp_path / "evidence.db", isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    yield c
    c.close()


@pytest.fixture
def log(conn: sqlite3.Connection) -> EvidenceLog:
    return EvidenceLog(conn, clock=Clock())


def assert_client_verifies(res: dict[str, object]) -> None:
    assert res["verified"] is True and res["status"] == "anchored"
    root = ref_root_from_proof(res["hash"], res["leafIndex"], res["treeSize"], res["proof"])  # type: ignore[arg-type]
    assert root is not None and root.hex() == res["merkleRoot"]


def test_unknown_pending_anchored(log: EvidenceLog) -> None:
    assert log.lookup(h(0)) is None
    assert log.submit(h(0)) == "pending"
    assert log.lookup(h(0)) == {"hash": h(0), "verified": False, "status": "pending"}
    block = log.anchor_pending()
    assert block is not None and block.height == 1 and block.tree_size == 1
    res = log.lookup(h(0))
    assert res is not None
    assert_client_verifies(res)
    assert res["ledger"] == "local" and res["blockHeight"] == 1 and res["leafIndex"] == 0
    assert res["txHash"] == block.tx_hash and len(block.tx_hash) == 64
    assert res["anchoredAt"] == block.ts
    assert res["merkleRoot"] == ref_mth([bytes.fromhex(h(0))]).hex()
    assert log.anchor_pending() is None


def test_duplicates_are_idempotent(log: EvidenceLog, conn: sqlite3.Connection) -> None:
    assert log.submit(h(1)) == "pending"
    assert log.submit(h(1).upper()) == "pending"
    log.anchor_pending()
    assert log.submit(h(1)) == "anchored"
    assert conn.execute("SELECT COUNT(*) FROM evidence_leaves").fetchone()[0] == 1
    assert log.anchor_pending() is None
    assert log.lookup(h(1).upper())["hash"] == h(1)  # type: ignore[index]


@pytest.mark.parametrize("bad", ["", "ab", h(0)[:63], h(0) + "0", "g" * 64, " " + h(0)[1:], h(0)[:63] + "\n"])
def test_invalid_hex_rejected(log: EvidenceLog, bad: str) -> None:
    with pytest.raises(ValueError):
        log.submit(bad)
    with pytest.raises(ValueError):
        log.lookup(bad)


def test_batches_keep_their_own_blocks(log: EvidenceLog) -> None:
    sizes = [3, 1, 5, 8]  # tree sizes 3, 4, 9, 17
    n = 0
    for b, count in enumerate(sizes, start=1):
        for _ in range(count):
            log.submit(h(n))
            n += 1
        block = log.anchor_pending()
        assert block is not None and block.height == b and block.tree_size == n
        assert block.root == ref_mth([bytes.fromhex(h(i)) for i in range(n)])
    bounds = [0, 3, 4, 9, 17]
    for i in range(n):
        res = log.lookup(h(i))
        assert res is not None
        assert_client_verifies(res)
        height = next(b for b in range(1, 5) if i < bounds[b])
        assert res["blockHeight"] == height and res["treeSize"] == bounds[height] and res["leafIndex"] == i
    assert log.ledger.verify_chain()


def test_submit_and_anchor(log: EvidenceLog) -> None:
    log.submit(h(0))
    res = log.submit_and_anchor(h(1))
    assert_client_verifies(res)
    assert res["treeSize"] == 2 and res["leafIndex"] == 1
    assert log.lookup(h(0))["status"] == "anchored"  # type: ignore[index]


def test_pending_after_anchor_gets_next_index(log: EvidenceLog) -> None:
    log.submit_and_anchor(h(0))
    log.submit(h(1))
    assert log.lookup(h(1))["status"] == "pending"  # type: ignore[index]
    assert log.pending_count() == 1
    assert log.submit_and_anchor(h(1))["leafIndex"] == 1


def test_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    c1 = sqlite3.connect(path, isolation_level=None)
    EvidenceLog(c1).submit_and_anchor(h(0))
    c1.close()
    c2 = sqlite3.connect(path, isolation_level=None)
    log = EvidenceLog(c2)
    for i in range(1, 6):
        log.submit(h(i))
    log.anchor_pending()
    for i in range(6):
        assert_client_verifies(log.lookup(h(i)))  # type: ignore[arg-type]
    assert log.ledger.verify_chain()
    c2.close()


# --- tampering -------------------------------------------------------------------------


@pytest.fixture
def anchored(log: EvidenceLog) -> EvidenceLog:
    for i in range(5):
        log.submit(h(i))
    log.anchor_pending()
    for i in range(5, 8):
        log.submit(h(i))
    log.anchor_pending()
    assert log.ledger.verify_chain()
    return log


def status(log: EvidenceLog, i: int) -> str:
    res = log.lookup(h(i))
    assert res is not None
    if res["status"] == "tampered":
        assert res == {"hash": h(i), "verified": False, "status": "tampered"}
    return str(res["status"])


def test_tampered_leaf_row(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    forged = h(99)
    conn.execute("UPDATE evidence_leaves SET hash = ? WHERE idx = 2", (forged,))
    res = anchored.lookup(forged)
    assert res == {"hash": forged, "verified": False, "status": "tampered"}
    assert status(anchored, 3) == "tampered"  # its sibling's proof now carries the forged leaf
    assert status(anchored, 6) == "anchored"  # other subtrees are untouched


def test_leaf_moved_to_a_later_block(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE evidence_leaves SET batch = 2 WHERE idx = 0")
    assert status(anchored, 0) == "tampered"


def test_tampered_block_root(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    assert status(anchored, 1) == "anchored"
    conn.execute("UPDATE evidence_blocks SET root = ? WHERE height = 1", (h(42),))
    assert status(anchored, 1) == "tampered"
    assert not anchored.ledger.verify_chain()


def test_tampered_prev_hash(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE evidence_blocks SET prev_hash = ? WHERE height = 2", (h(7),))
    assert not anchored.ledger.verify_chain()
    assert status(anchored, 6) == "tampered"
    assert status(anchored, 1) == "anchored"


def test_block_rehashed_after_tamper_breaks_the_link(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    """Rewriting block 1 consistently (root, block_hash, tx) still breaks block 2's prev link."""
    from server.evidence.ledger import block_hash, tx_hash

    b1 = anchored.ledger.block(1)
    assert b1 is not None
    fake_root = bytes.fromhex(h(42))
    fake = block_hash(1, b1.prev_hash, fake_root, b1.tree_size, b1.ts)
    conn.execute(
        "UPDATE evidence_blocks SET root = ?, block_hash = ?, tx_hash = ? WHERE height = 1",
        (fake_root.hex(), fake.hex(), tx_hash(fake)),
    )
    assert not anchored.ledger.verify_chain()
    assert status(anchored, 6) == "tampered"


def test_tampered_block_ts_and_garbage(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE evidence_blocks SET ts = ts + 1 WHERE height = 2")
    assert not anchored.ledger.verify_chain()
    assert status(anchored, 5) == "tampered"
    conn.execute("UPDATE evidence_blocks SET root = 'zz' WHERE height = 1")
    assert not anchored.ledger.verify_chain()
    assert status(anchored, 0) == "tampered"


def test_tampered_node_row(anchored: EvidenceLog, conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE evidence_nodes SET hash = ? WHERE level = 1 AND pos = 0", (h(5),))
    assert status(anchored, 2) == "tampered"
    assert status(anchored, 0) == "anchored"  # a leaf's own pair node is not on its path


def test_local_ledger_alone(conn: sqlite3.Connection) -> None:
    ledger = LocalLedger(conn)
    assert ledger.verify_chain()  # empty chain
    b1 = ledger.anchor(bytes(32), 0, 1.5)
    b2 = ledger.anchor(b"\x11" * 32, 3, 2.5)
    assert (b1.height, b2.height) == (1, 2)
    assert b1.prev_hash == bytes(32) and b2.prev_hash == b1.block_hash
    assert ledger.block(2) == b2 and ledger.block(3) is None
    assert ledger.verify_chain() and ledger.verify_block(2)
    conn.execute("DELETE FROM evidence_blocks WHERE height = 1")
    assert not ledger.verify_chain() and not ledger.verify_block(2)


def test_large_log_is_quick(log: EvidenceLog, conn: sqlite3.Connection) -> None:
    n = 3000
    conn.execute("BEGIN")
    for i in range(n):
        log.submit(h(i))
    conn.execute("COMMIT")
    block = log.anchor_pending()
    assert block is not None and block.root == ref_mth([bytes.fromhex(h(i)) for i in range(n)])
    for i in (0, 1234, n - 1):
        res = log.lookup(h(i))
        assert res is not None
        assert_client_verifies(res)
        assert len(res["proof"]) <= 12  # type: ignore[arg-type]
