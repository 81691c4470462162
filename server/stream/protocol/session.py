"""One WebSocket session's state, without I/O.

The connection pump owns the socket and the websockets protocol object; the
session holds what the stream logic needs: its state (an explicit machine),
the API key it authenticated with, its outgoing-buffer policy, its client
message rate and its keepalive bookkeeping. ``write`` is injected by the
pump (the transport's ``write``); tests pass ``list.append``.
"""

from __future__ import annotations

from collections.abc import Callable

from server.stream.protocol.outbuf import OutBuffer
from server.stream.protocol.states import SessionState, check_transition

MAX_MESSAGES_PER_S = 20


class MessageRate:
    """GCRA over one float: a burst of ``per_s`` messages, then one every 1/per_s seconds.

    So "more than 20 client messages within a second" is refused, exactly, with
    no per-message history kept.
    """

    __slots__ = ("interval", "tat", "window")

    def __init__(self, per_s: int = MAX_MESSAGES_PER_S) -> None:
        self.interval = 1.0 / per_s
        self.window = 1.0 + 1e-6  # float slack so exactly per_s messages in a burst pass
        self.tat = 0.0

    def allow(self, now: float) -> bool:
        tat = max(self.tat, now) + self.interval
        if tat - now > self.window:
            return False
        self.tat = tat
        return True


class Session:
    __slots__ = (
        "created_at",
        "id",
        "ingest",
        "key_id",
        "last_ping_at",
        "out",
        "owner",
        "ping_sent_at",
        "plan",
        "rate",
        "state",
        "write",
    )

    def __init__(self, session_id: int, write: Callable[[bytes], object], now: float,
                 out: OutBuffer | None = None) -> None:
        self.id = session_id
        self.write = write
        self.state = SessionState.CONNECTING
        self.key_id: str | None = None
        self.plan: str | None = None
        self.owner: str | None = None  # the key's account: whose declared instruments it may subscribe to (SPEC 20)
        self.ingest = False  # a /ws/ingest session: its text frames are batches of ticks, each answered (SPEC 20)
        self.out = out if out is not None else OutBuffer()
        self.rate = MessageRate()
        self.created_at = now
        self.last_ping_at = now  # keepalive: when the last ping went out (or the session opened)
        self.ping_sent_at: float | None = None  # set while a ping awaits its pong

    def transition(self, target: SessionState) -> None:
        check_transition(self.state, target)
        self.state = target

    @property
    def is_open(self) -> bool:
        return self.state is SessionState.OPEN

    # --- keepalive -----------------------------------------------------------
    def ping_due(self, now: float, interval_s: float) -> bool:
        return self.ping_sent_at is None and now - self.last_ping_at >= interval_s

    def ping_sent(self, now: float) -> None:
        self.last_ping_at = now
        self.ping_sent_at = now

    def pong_received(self) -> None:
        self.ping_sent_at = None

    def pong_overdue(self, now: float, timeout_s: float) -> bool:
        return self.ping_sent_at is not None and now - self.ping_sent_at >= timeout_s

    def ready_write(self) -> Callable[[bytes], object] | None:
        """The session's write while it is ready (under its buffer cap), else None (held)."""
        return self.write if self.out.over_since is None else None

    def __repr__(self) -> str:
        return f"Session({self.id}, {self.state.value}, key={self.key_id})"
