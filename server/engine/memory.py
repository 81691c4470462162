"""The memory engine: one hub, nothing shared, nothing installed (today's behaviour)."""

from __future__ import annotations

import os

from server.config import EngineKind
from server.engine import RevocationChannel, RevocationListener, SharedLimiter, TickLog


class LocalRevocations:
    """Revocations reach this hub's listeners only (there is no other hub to tell)."""

    def __init__(self) -> None:
        self._listeners: list[RevocationListener] = []

    def subscribe(self, listener: RevocationListener) -> None:
        self._listeners.append(listener)

    async def publish(self, key_ids: set[str]) -> None:
        self.deliver(key_ids)

    def deliver(self, key_ids: set[str]) -> None:
        for listener in self._listeners:
            listener(key_ids)


class MemoryEngine:
    kind = EngineKind.MEMORY

    def __init__(self) -> None:
        self.node = os.urandom(6).hex()  # names this hub in /readyz
        self.limiter: SharedLimiter | None = None
        self.revocations: RevocationChannel = LocalRevocations()
        self.ticks: TickLog | None = None

    def epoch(self, proposed: str) -> str:
        return proposed

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
