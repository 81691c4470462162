"""Session states and the transitions allowed between them (h11 `_state.py` style).

    CONNECTING --101--> OPEN --close sent/received--> CLOSING --TCP gone--> CLOSED
        |                  \\_____________ TCP lost ______________________/^
        +--refused (HTTP problem)--> REJECTED --TCP gone------------------/
        +--TCP lost before the handshake----------------------------------/

Only OPEN sessions are in the subscription registry, so the fan-out never
writes a tick after a close frame.
"""

from __future__ import annotations

from enum import Enum

from server.core.transitions import IllegalTransition, Transitions


class SessionState(Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    CLOSING = "closing"
    REJECTED = "rejected"
    CLOSED = "closed"


ALLOWED = Transitions("session", SessionState, {
    SessionState.CONNECTING: {SessionState.OPEN, SessionState.REJECTED, SessionState.CLOSED},
    SessionState.OPEN: {SessionState.CLOSING, SessionState.CLOSED},
    SessionState.CLOSING: {SessionState.CLOSED},
    SessionState.REJECTED: {SessionState.CLOSED},
    SessionState.CLOSED: set(),
})
__all__ = ["ALLOWED", "IllegalTransition", "SessionState", "check_transition"]


def check_transition(current: SessionState, target: SessionState) -> None:
    ALLOWED.check(current, target)
