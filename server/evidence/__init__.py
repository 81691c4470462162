"""Evidence: an RFC 9162 Merkle log of submitted hashes, anchored in a hash-chained ledger.

log.py and ledger.py hold the logic (database-free); sqlite.py gives it SQLite's SQL, server/store/pg_sync.py
PostgreSQL's.
"""

from .ledger import Block, HashChain, Ledger
from .log import MerkleLog, normalize_hash
from .sqlite import EvidenceLog, LocalLedger

__all__ = ["Block", "EvidenceLog", "HashChain", "Ledger", "LocalLedger", "MerkleLog", "normalize_hash"]
