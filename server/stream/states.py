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


class SessionState(Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    CLOSING = "closing"
    REJECTED = "rejected"
    CLOSED = "closed"


ALLOWED: dict[SessionState, frozenset[SessionState]] = {
    SessionState.CONNECTING: frozenset({SessionState.OPEN, SessionState.REJECTED, SessionState.CLOSED}),
    SessionState.OPEN: frozenset({SessionState.CLOSING, SessionState.CLOSED}),
    SessionState.CLOSING: frozenset({SessionState.CLOSED}),
    SessionState.REJECTED: frozenset({SessionState.CLOSED}),
    SessionState.CLOSED: frozenset(),
}


class IllegalTransition(RuntimeError):
    def __init__(self, current: SessionState, target: SessionState) -> None:
        super().__init__(f"session cannot go from {current.value} to {target.value}")
        self.current, self.target = current, target


def check_transition(current: SessionState, target: SessionState) -> None:
    if target not in ALLOWED[current]:
        raise IllegalTransition(current, target)
