"""Replay for a resume (SPEC 7, docs/stream.md "Resume after reconnect"): the missed ticks of a set of
instruments, as the frames that were sent, or None when the client must take a snapshot instead."""

from __future__ import annotations

from server.stream.delivery.resume_history import TickHistory
from server.stream.delivery.snapshots import QuoteSource
from server.stream.metrics import StreamMetrics

MAX_REPLAY_BYTES = 8 * 1024 * 1024  # one resume's replay: about 75,000 ticks; a bigger gap gets a snapshot


class Replay:
    def __init__(self, state: QuoteSource, ids: list[str], epoch: str, history: TickHistory,
                 metrics: StreamMetrics) -> None:
        self.state, self.ids, self.epoch = state, ids, epoch
        self.history = history
        self.metrics = metrics

    def missed(self, rows: frozenset[int], since: dict[str, int], epoch: str) -> bytes | None:
        """The missed ticks of every row, or None when any of them is not held (or the epoch differs)."""
        if epoch != self.epoch:
            return None
        current = self.state.seq
        parts: list[bytes] = []
        size = count = 0
        for row in sorted(rows):
            seen = since.get(self.ids[row])
            if seen is None:
                return None  # nothing known of this id: it needs the snapshot
            now = int(current[row])
            part = self.history.replay(row, seen, now)
            if part is None:
                return None
            size += len(part)
            count += now - seen
            if size > MAX_REPLAY_BYTES:
                return None
            parts.append(part)
        self.metrics.replayed.inc(amount=count)
        return b"".join(parts)
