"""In-memory view of the API keys, refreshed from SQLite so CLI changes apply to a running server.

A key created by the CLI works at once (a cache miss reads SQLite); a revoked
key is dropped by the next `refresh` (the hub runs it every second), which
also reports the revoked ids so the stream can close their sessions.
"""

from __future__ import annotations

from server.store.keys import ApiKey, KeyRepo, hash_key


class KeyCache:
    def __init__(self, repo: KeyRepo) -> None:
        self.repo = repo
        self._by_hash: dict[str, ApiKey] = repo.active_by_hash()

    def lookup(self, secret: str) -> ApiKey | None:
        digest = hash_key(secret)
        key = self._by_hash.get(digest)
        if key is not None:
            return key
        key = self.repo.by_hash(digest)
        if key is None or not key.active:
            return None
        self._by_hash[digest] = key
        return key

    def refresh(self) -> set[str]:
        """Reload active keys; return the ids that were active here and are not any more."""
        fresh = self.repo.active_by_hash()
        gone = {k.id for h, k in self._by_hash.items() if h not in fresh}
        self._by_hash = fresh
        return gone
