"""The per-connection outgoing buffer policy: write, conflate, or give up on a slow reader.

Invariants (what keeps memory bounded whatever a client does):
- ticks are written to the transport only while it is under ``cap`` (its
  write-buffer high-water mark); while over it they wait in ``pending``,
  which holds at most one frame per instrument (the latest: conflation), so
  the client's ``seq`` for that instrument jumps;
- control replies (acks, snapshots, pongs, errors) are not conflatable and go
  to the transport, but past ``hard_cap`` the connection is closed at once;
- a connection over ``cap`` for longer than the grace period is closed (4008);
- a resume's replay (bounded by the stream core) may pass ``hard_cap`` once: ``grant`` raises the
  hard cap by its size until the transport has drained below ``cap`` again.

Pure bookkeeping: the caller reports the transport's state and writes bytes.
"""

from __future__ import annotations

DEFAULT_CAP = 64 * 1024
DEFAULT_HARD_CAP = 256 * 1024


class OutBuffer:
    __slots__ = ("cap", "credit", "hard_cap", "last", "over_since", "pending")

    def __init__(self, cap: int = DEFAULT_CAP, hard_cap: int = DEFAULT_HARD_CAP) -> None:
        if not 0 < cap <= hard_cap:
            raise ValueError("need 0 < cap <= hard_cap")
        self.cap = cap
        self.hard_cap = hard_cap
        self.over_since: float | None = None  # None while ticks may be written
        self.credit = 0  # bytes of a replay allowed over hard_cap until the transport drains below cap
        self.pending: dict[int, bytes] = {}  # row -> latest tick frame (-1 - channel: candle frame), oldest first
        self.last: bytes | None = None  # a held heartbeat: written after everything held (it accounts for them)

    @property
    def over(self) -> bool:
        return self.over_since is not None

    def pause(self, now: float) -> None:
        """The transport went over ``cap``: hold ticks from now on."""
        if self.over_since is None:
            self.over_since = now

    def resume(self) -> tuple[bytes, int]:
        """The transport drained below its low-water mark: the held ticks, ready for one write, and their count."""
        self.over_since = None
        count = len(self.pending)
        last, self.last = self.last, None
        if not count:
            return last or b"", 0
        data = b"".join(self.pending.values())
        self.pending.clear()
        return data + last if last else data, count

    def hold(self, items: list[tuple[int, bytes]]) -> int:
        """Keep the latest frame per instrument; returns how many held frames were superseded."""
        pending = self.pending
        replaced = 0
        for row, frame in items:
            if row in pending:
                del pending[row]  # re-insert so the order stays by latest arrival
                replaced += 1
            pending[row] = frame
        return replaced

    def hold_last(self, frame: bytes) -> None:
        """Hold a heartbeat until the held frames go out, after them (a newer one replaces it)."""
        self.last = frame

    def drop_pending(self) -> None:
        """A fresh snapshot supersedes every held tick (after a subscription change)."""
        self.pending.clear()
        self.last = None

    def overdue(self, now: float, grace_s: float) -> bool:
        return self.over_since is not None and now - self.over_since >= grace_s

    def grant(self, nbytes: int) -> None:
        """A replay of this size goes out now (a resume): it may pass the hard cap until it has drained."""
        self.credit = nbytes

    def exceeds_hard_cap(self, buffered: int) -> bool:
        if buffered <= self.cap:
            self.credit = 0  # the replay has drained
        return buffered > self.hard_cap + self.credit
