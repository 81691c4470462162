"""Who receives which instrument: the index the fan-out walks for every tick batch.

Sessions with exactly the same subscription set share one `Group` (most
dashboards subscribe to everything, so there are few groups and many
sessions per group). The index maps instrument row -> groups subscribed to
it, so a tick touches only its subscribers, and the frames of one batch are
concatenated once per group, not once per session.

Invariants: a member is in at most one group; a group with no member is
removed at once (with its index entries); only `join` and `leave` mutate.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

M = TypeVar("M", bound=Hashable)


class Group(Generic[M]):
    __slots__ = ("members", "rows")

    def __init__(self, rows: frozenset[int]) -> None:
        self.rows = rows
        self.members: dict[M, None] = {}  # insertion-ordered set


class SubscriptionRegistry(Generic[M]):
    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.by_row: list[list[Group[M]]] = [[] for _ in range(n_rows)]
        self._groups: dict[frozenset[int], Group[M]] = {}
        self._member_group: dict[M, Group[M]] = {}

    def join(self, member: M, rows: Iterable[int]) -> None:
        """Set ``member``'s subscription to exactly ``rows`` (replacing any previous set)."""
        key = frozenset(rows)
        for row in key:
            if not 0 <= row < self.n_rows:
                raise IndexError(f"row {row} out of range")
        current = self._member_group.get(member)
        if current is not None and current.rows == key:
            return
        self.leave(member)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = Group(key)
            for row in key:
                self.by_row[row].append(group)
        group.members[member] = None
        self._member_group[member] = group

    def leave(self, member: M) -> None:
        group = self._member_group.pop(member, None)
        if group is None:
            return
        del group.members[member]
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
