"""State machines as data: a table of allowed transitions and one error for a move it does not allow.

h11 `_state.py` style: each state machine (outbox jobs, warehouse receipts, stream sessions) declares its
states as an Enum and its moves as one `Transitions` table; code that changes a state asks the table first,
so an illegal move is a named error (`IllegalTransition`) and never a silent write.

Invariant: every state of the enum has a row (a terminal state has an empty one), checked when the table is
built, so a state added to the enum without a decision about its moves fails at import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from typing import Generic, TypeVar

S = TypeVar("S", bound=Enum)


class IllegalTransition(ValueError):
    """A move between two states that the machine's table does not connect."""

    def __init__(self, machine: str, current: Enum, target: Enum, subject: str = "") -> None:
        about = f" ({subject})" if subject else ""
        super().__init__(f"illegal {machine} transition {current.value} -> {target.value}{about}")
        self.machine, self.current, self.target, self.subject = machine, current, target, subject

    # the names the receipt code has always used for the two ends
    @property
    def old(self) -> Enum:
        return self.current

    @property
    def new(self) -> Enum:
        return self.target


class Transitions(Mapping[S, frozenset[S]], Generic[S]):
    """The allowed moves of one state machine: `table[state]` is the set of states it may move to."""

    def __init__(self, machine: str, states: type[S], moves: Mapping[S, Iterable[S]]) -> None:
        missing = [s.value for s in states if s not in moves]
        if missing:
            raise ValueError(f"{machine}: no row for state(s) {', '.join(map(str, missing))}")
        self.machine = machine
        self._moves: dict[S, frozenset[S]] = {s: frozenset(moves[s]) for s in states}

    def __getitem__(self, state: S) -> frozenset[S]:
        return self._moves[state]

    def __iter__(self) -> Iterator[S]:
        return iter(self._moves)

    def __len__(self) -> int:
        return len(self._moves)

    def allows(self, current: S, target: S) -> bool:
        return target in self._moves[current]

    def check(self, current: S, target: S, subject: str = "") -> S:
        """`target` if the move is allowed, else IllegalTransition naming the machine (and `subject`)."""
        if target not in self._moves[current]:
            raise IllegalTransition(self.machine, current, target, subject)
        return target

    def terminal(self) -> frozenset[S]:
        """The states nothing leaves."""
        return frozenset(s for s, moves in self._moves.items() if not moves)
