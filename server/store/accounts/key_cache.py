"""In-memory view of the API keys, refreshed from storage so CLI changes apply to a running server.

`lookup` never touches storage: a known key is one hash and one dict lookup (the
hot keyed path). A key the cache has not seen (created by the CLI since the last
refresh) is read with `await load(secret)`, on a storage thread; a revoked key is
dropped by the next `refresh` (the hub runs it every second), which also reports
the revoked ids so the stream can close their sessions.

A key storage does not know (or knows as revoked) is remembered as missing until
the next refresh, so repeating a bad key reads storage at most once a second;
the set is bounded (oldest forgotten first) and emptied by every refresh, so a
key created afterwards is found by the next `load`.
"""

from __future__ import annotations

from collections.abc import Callable

from server.core.keys import ApiKey, hash_key
from server.store.sql.repositories import Keys

MAX_MISSING = 10_000
MAX_REVOKED = 100_000
MAX_SECRETS = 10_000


class KeyCache:
    def __init__(self, repo: Keys, initial: dict[str, ApiKey] | None = None, max_missing: int = MAX_MISSING) -> None:
        self.repo = repo
        self.max_missing = max_missing
        self._by_hash: dict[str, ApiKey] = dict(initial or {})
        # secret -> key for secrets seen since the last change of _by_hash: a repeated key costs one dict
        # lookup instead of a SHA-256 (memory only, emptied by every refresh, load and forget)
        self._by_secret: dict[str, ApiKey] = {}
        self._by_id: dict[str, ApiKey] | None = None  # id -> key, built on demand (by_id), dropped by a change
        # run after every change of _by_secret: a memo built from `lookup` answers (the pipeline's hot path) is
        # dropped by its listener, so it never needs to compare versions
        self.on_change: list[Callable[[], object]] = []
        self._missing: dict[str, None] = {}  # digests storage did not know, until the next refresh (ordered)
        # ids revoked over the engine's channel: kept out even by a refresh or load that read storage just before
        # the revocation committed (revocation is final); bounded, oldest forgotten first
        self._revoked: dict[str, None] = {}

    def lookup(self, secret: str) -> ApiKey | None:
        """A cached active key, or None (unknown here: maybe `load` finds it)."""
        by_secret = self._by_secret  # read before _by_hash: every writer replaces _by_hash first, then this
        key = by_secret.get(secret)
        if key is None:
            key = self._by_hash.get(hash_key(secret))
            if key is not None and len(by_secret) < MAX_SECRETS:
                by_secret[secret] = key
        return key

    async def load(self, secret: str) -> ApiKey | None:
        """Read a key the cache does not hold; an active one is cached."""
        digest = hash_key(secret)
        if digest in self._missing:
            return None
        key = await self.repo.by_hash(digest)
        if key is None or not key.active or key.id in self._revoked:
            if len(self._missing) >= self.max_missing:
                del self._missing[next(iter(self._missing))]
            self._missing[digest] = None
            return None
        self._by_hash[digest] = key
        self._changed()
        return key

    async def refresh(self) -> set[str]:
        """Reload active keys; return the ids that were active here and are not any more."""
        fresh = await self.repo.active_by_hash()
        if self._revoked:
            fresh = {h: k for h, k in fresh.items() if k.id not in self._revoked}
        gone = {k.id for h, k in self._by_hash.items() if h not in fresh}
        self._by_hash = fresh
        self._changed()
        self._missing.clear()
        return gone

    def forget(self, key_ids: set[str]) -> None:
        """Revoked elsewhere (another hub, the CLI): refuse these ids from now on, without reading storage."""
        for key_id in key_ids:
            if len(self._revoked) >= MAX_REVOKED:
                del self._revoked[next(iter(self._revoked))]
            self._revoked[key_id] = None
        self._by_hash = {h: k for h, k in self._by_hash.items() if k.id not in key_ids}
        self._changed()

    def by_id(self, key_id: str) -> ApiKey | None:
        """The cached active key with this id (an index built once per change of the cache)."""
        index = self._by_id
        if index is None:
            index = self._by_id = {k.id: k for k in self._by_hash.values()}
        return index.get(key_id)

    def _changed(self) -> None:
        self._by_id = None
        self._by_secret = {}
        for listener in self.on_change:
            listener()
