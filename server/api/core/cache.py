"""Serialised views, cached per data version.

A view is turned into bytes at most once per (key, version): every reader of
the same version shares the same bytes object. When the version moves on,
the old entries are dropped, so the cache never holds more than one version.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

MAX_ENTRIES = 4096


class VersionedCache:
    def __init__(self) -> None:
        self._version: object = None
        self._entries: dict[Hashable, bytes] = {}
        self.builds = 0

    def get(self, key: Hashable, version: object, build: Callable[[], bytes]) -> bytes:
        body = self.lookup(key, version)
        if body is None:
            body = build()
            self.store(key, version, body)
        return body

    def lookup(self, key: Hashable, version: object) -> bytes | None:
        """The bytes kept for `key` at `version`, or None (for a builder that must await: lookup, build, store)."""
        if version != self._version:
            self._entries.clear()
            self._version = version
        return self._entries.get(key)

    def store(self, key: Hashable, version: object, body: bytes) -> None:
        if version != self._version:
            self._entries.clear()
            self._version = version
        self.builds += 1
        if len(self._entries) < MAX_ENTRIES:
            self._entries[key] = body
