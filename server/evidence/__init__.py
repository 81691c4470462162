"""Evidence: an RFC 9162 Merkle log of submitted hashes, anchored in a hash-chained ledger."""

from .ledger import Block, Ledger, LocalLedger
from .log import EvidenceLog, normalize_hash

__all__ = ["Block", "EvidenceLog", "Ledger", "LocalLedger", "normalize_hash"]
