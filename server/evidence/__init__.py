"""Evidence: an RFC 9162 Merkle log of submitted hashes, anchored in a hash-chained ledger.

log.py and ledger.py hold the logic (database-free); server/store/site/evidence_sqlite.py gives it SQLite's SQL,
server/store/sql/pg_sync.py PostgreSQL's. May import `core` only.
"""

from .ledger import Block, HashChain, Ledger
from .log import MerkleLog, normalize_hash

__all__ = ["Block", "HashChain", "Ledger", "MerkleLog", "normalize_hash"]
