"""The main contract (SPEC 19, issue 39 item 5): which contract a product's continuous series stands for.

After each trading day's close the next day's main is decided from that day's data only (no look-ahead): the
later-expiring contract with the largest open interest replaces the current main when its open interest exceeds
the main's by more than `MARGIN` (10%); an earlier-expiring contract never does (no switching back); on the main's
last trading day the roll happens whatever the margin (to the later contract with the largest open interest).
Ties of open interest go to the nearer expiry. Without a current main (the first day a product is seen) the main is
the contract with the largest open interest still trading the next day. Unknown open interest (NaN) counts as none.

Pure: contracts are `Candidate`s (a key, the last trading day's ordinal, the day's closing open interest);
`next_main` is the rule, `replay` runs it day by day over a history.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

MARGIN = 0.10


@dataclass(frozen=True, slots=True)
class Candidate:
    key: Any  # Hashable: a row, an id
    last_day: int  # the last trading day's ordinal
    oi: float  # open interest at the day's close (NaN: unknown)


def _oi(c: Candidate) -> float:
    return c.oi if math.isfinite(c.oi) else 0.0


def _largest(candidates: Sequence[Candidate]) -> Candidate | None:
    """The largest open interest; a tie goes to the nearer expiry."""
    return min(candidates, key=lambda c: (-_oi(c), c.last_day), default=None)


def next_main(current: Hashable | None, candidates: Sequence[Candidate], day: int) -> Hashable | None:
    """The main for the trading day after `day` (an ordinal, the day that closed), from that day's `candidates`
    (every contract of the product that traded it, with its closing open interest)."""
    alive = [c for c in candidates if c.last_day > day]  # still trading the next day
    now = next((c for c in candidates if c.key == current), None)
    if now is None:
        best = _largest(alive)
        return best.key if best is not None else current
    later = _largest([c for c in alive if c.last_day > now.last_day])
    if later is None:
        return current
    if now.last_day <= day or _oi(later) > _oi(now) * (1 + MARGIN):
        return later.key
    return current


@dataclass(frozen=True, slots=True)
class Roll:
    day: int  # the new main's first trading day (ordinal)
    from_key: Any
    to_key: Any
    from_close: float  # the closes of the day before
    to_close: float


def replay(days: Sequence[int], candidates_of: Sequence[Sequence[Candidate]], closes_of: Sequence[dict[Any, float]],
           first: Hashable | None = None) -> tuple[list[Hashable | None], list[Roll]]:
    """The main of each of `days` (ascending ordinals) and the rolls between them: day k's main is decided from day
    k-1's `candidates_of` (day 0's: `first`, or the largest open interest on day 0 itself when None: the history
    starts with no earlier decision); `closes_of[k]`: each contract's close on day k."""
    mains: list[Hashable | None] = []
    rolls: list[Roll] = []
    current = first
    if current is None and days:
        best = _largest([c for c in candidates_of[0] if c.last_day >= days[0]])
        current = best.key if best is not None else None
    for k, day in enumerate(days):
        if k:
            decided = next_main(current, candidates_of[k - 1], days[k - 1])
            if decided != current and current is not None:
                closes = closes_of[k - 1]
                rolls.append(Roll(day, current, decided, closes.get(current, math.nan),
                                  closes.get(decided, math.nan)))
            current = decided
        mains.append(current)
    return mains, rolls
