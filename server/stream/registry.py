"""Who receives which instrument: the index the fan-out walks for every tick batch.

Sessions with exactly the same subscription set share one `Group` (most
dashboards subscribe to everything, so there are few groups and many
sessions per group). The index maps instrument row -> groups subscribed to
it, so a tick touches only its subscribers, and the frames of one batch are
concatenated once per group, not once per session.

Each group also keeps its *ready* members, those being written to now, with
their write callables: the fan-out walks that one dict per group and calls
each callable, touching nothing else of a connection (a connection over its
buffer cap is held, not written: `hold` takes it out of ready, `release`
puts it back).

Invariants: a member is in at most one group; a group with no member is
removed at once (with its index entries); a group's ready members are a
subset of its members; only `join`, `leave`, `hold` and `release` mutate.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

M = TypeVar("M", bound=Hashable)
Write = Callable[[bytes], object]


class Group(Generic[M]):
    __slots__ = ("members", "ready", "rows")

    def __init__(self, rows: frozenset[int]) -> None:
        self.rows = rows
        self.members: dict[M, None] = {}  # insertion-ordered set
        self.ready: dict[M, Write] = {}  # the members written to now -> their write

    def held(self) -> list[M]:
        """The members not written to now (over their buffer cap)."""
        ready = self.ready
        return [m for m in self.members if m not in ready] if len(ready) != len(self.members) else []


class SubscriptionRegistry(Generic[M]):
    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.by_row: list[list[Group[M]]] = [[] for _ in range(n_rows)]
        self._groups: dict[frozenset[int], Group[M]] = {}
        self._member_group: dict[M, Group[M]] = {}

    def join(self, member: M, rows: Iterable[int], write: Write | None = None) -> None:
        """Set ``member``'s subscription to exactly ``rows`` (replacing any previous set); ``write``: its write
        callable when it is ready (None: held)."""
        key = frozenset(rows)
        for row in key:
            if not 0 <= row < self.n_rows:
                raise IndexError(f"row {row} out of range")
        current = self._member_group.get(member)
        if current is not None and current.rows == key:
            self._set_ready(current, member, write)
            return
        self.leave(member)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = Group(key)
            for row in key:
                self.by_row[row].append(group)
        group.members[member] = None
        self._set_ready(group, member, write)
        self._member_group[member] = group

    def hold(self, member: M) -> None:
        """Stop writing to ``member`` (its buffer passed the cap); it stays subscribed."""
        group = self._member_group.get(member)
        if group is not None:
            group.ready.pop(member, None)

    def release(self, member: M, write: Write) -> None:
        """Write to ``member`` again."""
        group = self._member_group.get(member)
        if group is not None:
            group.ready[member] = write

    @staticmethod
    def _set_ready(group: Group[M], member: M, write: Write | None) -> None:
        if write is None:
            group.ready.pop(member, None)
        else:
            group.ready[member] = write

    def leave(self, member: M) -> None:
        group = self._member_group.pop(member, None)
        if group is None:
            return
        del group.members[member]
        group.ready.pop(member, None)
        if not group.members:
            del self._groups[group.rows]
            for row in group.rows:
                self.by_row[row].remove(group)

    def groups(self) -> list[Group[M]]:
        return list(self._groups.values())

    def rows_of(self, member: M) -> frozenset[int]:
        group = self._member_group.get(member)
        return group.rows if group is not None else frozenset()

    def subscribers(self, row: int) -> list[M]:
        return [m for g in self.by_row[row] for m in g.members]

    def __contains__(self, member: object) -> bool:
        return member in self._member_group

    def __len__(self) -> int:
        return len(self._member_group)

    @property
    def group_count(self) -> int:
        return len(self._groups)


def write_ready(group: Group[M], data: bytes) -> int:
    """``data`` to every ready member of ``group``; returns how many writes went out. Walks a copy: a write may
    hold its session (the transport calls pause_writing from inside write), after that write."""
    failed = 0
    writers = tuple(group.ready.values())
    for write in writers:
        try:
            write(data)
        except RuntimeError:  # transport already closed; its connection_lost is queued
            failed += 1
    return len(writers) - failed
