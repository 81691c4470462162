"""Snapshot frames: what the stream reads from the market state, and the snapshot of a set of instruments, built
once per data version and set and shared by every session that asks for it (the opening snapshot, and the one
after each subscription change)."""

from __future__ import annotations

import math
from typing import Any, Protocol

from server.market.timefmt import iso
from server.stream.protocol import messages as msg
from server.stream.protocol.wire import text_frame

MAX_SETS = 64  # distinct sets held per version; past it the cache starts over


class QuoteSource(Protocol):
    """What the stream reads from the market state (MarketState satisfies it)."""

    version: int
    updated: float
    seq: Any  # per row: the seq of its last applied tick (numpy int64 array in MarketState)

    def quotes(self, rows: list[int]) -> list[dict]: ...  # type: ignore[type-arg]


class Snapshots:
    def __init__(self, state: QuoteSource, ids: list[str], epoch: str) -> None:
        self.state, self.ids, self.epoch = state, ids, epoch
        self._frames: dict[frozenset[int], bytes] = {}
        self._version = -1

    def frame(self, rows: frozenset[int]) -> bytes:
        """The snapshot frame for a set of rows, built once per data version and set."""
        if self._version != self.state.version:
            self._frames.clear()
            self._version = self.state.version
        frame = self._frames.get(rows)
        if frame is None:
            if len(self._frames) > MAX_SETS:
                self._frames.clear()
            updated = self.state.updated
            ordered = sorted(rows)
            quotes = self.state.quotes(ordered)
            seq = self.state.seq
            seqs = {self.ids[r]: int(seq[r]) for r in ordered}
            payload = msg.snapshot_payload(iso(updated) if updated > 0 and math.isfinite(updated) else None,
                                           self.epoch, seqs, quotes)
            frame = self._frames[rows] = text_frame(payload)
        return frame
