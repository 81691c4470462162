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

The frames each member was sent are counted per group, not per member (the
console's usage per key, SPEC 17): the fan-out adds a batch's frame count to
the group's `sent` once, and a member's count is `sent` now minus `sent` when
it became ready (its mark); `drain` and `leave` hand the count out. A write to
a connection costs nothing more than the write.

Invariants: a member is in at most one group; a group with no member is
removed at once (with its index entries); a group's ready members are a
subset of its members and exactly the members with a mark; only `join`,
`leave`, `hold`, `release` and `drain` mutate.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

M = TypeVar("M", bound=Hashable)
Write = Callable[[bytes], object]


class Group(Generic[M]):
    __slots__ = ("marks", "members", "ready", "rows", "sent")

    def __init__(self, rows: frozenset[int]) -> None:
        self.rows = rows
        self.members: dict[M, None] = {}  # insertion-ordered set
        self.ready: dict[M, Write] = {}  # the members written to now -> their write
        self.sent = 0  # frames written to every ready member so far (added before the batch's writes)
        self.marks: dict[M, int] = {}  # ready member -> `sent` when it was last counted

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
        self._counted: dict[M, int] = {}  # frames sent to a member while ready, not drained yet

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
        self._count(member, self.leave(member))  # the frames of its previous group stay counted
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
            self._set_ready(group, member, None)

    def release(self, member: M, write: Write) -> None:
        """Write to ``member`` again."""
        group = self._member_group.get(member)
        if group is not None:
            self._set_ready(group, member, write)

    def _set_ready(self, group: Group[M], member: M, write: Write | None) -> None:
        if write is None:
            if group.ready.pop(member, None) is not None:
                self._count(member, group.sent - group.marks.pop(member))
        else:
            if member not in group.ready:
                group.marks[member] = group.sent
            group.ready[member] = write

    def _count(self, member: M, frames: int) -> None:
        if frames:
            self._counted[member] = self._counted.get(member, 0) + frames

    def drain(self, member: M) -> int:
        """The frames sent to ``member`` since the last drain (counting starts again from now)."""
        frames = self._counted.pop(member, 0)
        group = self._member_group.get(member)
        if group is not None and member in group.marks:
            frames += group.sent - group.marks[member]
            group.marks[member] = group.sent
        return frames

    def leave(self, member: M) -> int:
        """Unsubscribe ``member`` from everything; returns the frames sent to it since the last drain."""
        group = self._member_group.pop(member, None)
        if group is not None:
            self._set_ready(group, member, None)
            del group.members[member]
            if not group.members:
                del self._groups[group.rows]
                for row in group.rows:
                    self.by_row[row].remove(group)
        return self._counted.pop(member, 0)

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
