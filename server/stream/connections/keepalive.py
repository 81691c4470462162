"""The sweep: which sessions are due a keepalive ping, and which to close (pong overdue, slow consumer, stuck
handshake). A decision, no I/O: the stream service's sweeper carries it out on the connections."""

from __future__ import annotations

from dataclasses import dataclass

from server.core.errors import CloseCode
from server.stream.connections.sessions import Sessions
from server.stream.limits import StreamLimits
from server.stream.protocol.session import Session
from server.stream.protocol.states import SessionState


@dataclass(frozen=True, slots=True)
class Sweep:
    ping: list[Session]
    close: list[tuple[Session, CloseCode]]


class Keepalive:
    def __init__(self, sessions: Sessions, limits: StreamLimits) -> None:
        self.sessions = sessions
        self.limits = limits

    def sweep(self, now: float) -> Sweep:
        """Keepalive pings due, and sessions to close: pong overdue, slow consumer, stuck handshake."""
        lim = self.limits
        by_beats = lim.pings_after is not None
        ping: list[Session] = []
        close: list[tuple[Session, CloseCode]] = []
        for s in self.sessions.by_id.values():
            if s.state is SessionState.OPEN:
                if s.out.overdue(now, lim.slow_close_s):
                    close.append((s, CloseCode.SLOW_CONSUMER))
                elif s.pong_overdue(now, lim.keepalive_timeout_s):
                    close.append((s, CloseCode.INTERNAL_ERROR))
                elif not by_beats and s.ping_due(now, lim.keepalive_interval_s):
                    ping.append(s)  # (with heartbeats at least once per keepalive interval, the pings ride them)
            elif s.state is SessionState.CONNECTING and now - s.created_at >= lim.handshake_timeout_s:
                close.append((s, CloseCode.POLICY_VIOLATION))
        return Sweep(ping, close)
