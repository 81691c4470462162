"""A trading day's data quality (SPEC 20, Databento's dataset conditions): pure rules over tick times.

- `pending`: the trading day has not closed yet;
- `missing`: no tick at all in the day's sessions;
- `degraded`: a continuously traded venue was silent inside its sessions for longer than --stale-after: every such
  silence listed, from the last tick before it (or the window's start) to the first after it (or the window's end);
- `available`: otherwise (an assessment venue's day is available as soon as it has a tick).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

from server.market.freshness import Span, in_session_ms


class Condition(StrEnum):
    AVAILABLE = "available"
    DEGRADED = "degraded"
    PENDING = "pending"
    MISSING = "missing"


@dataclass(frozen=True, slots=True)
class DayQuality:
    condition: Condition
    gaps: tuple[tuple[int, int], ...]  # (from, to) epoch ms
    last_ms: int | None  # the newest tick of the day


def silences(ticks_ms: Sequence[int], windows: Sequence[Span], over_ms: int) -> list[tuple[int, int]]:
    """Every in-session silence longer than ``over_ms`` among sorted tick times, as (from, to): from the last tick
    before it (or the first window's start) to the first after it (or the last window's end)."""
    if not windows:
        return []
    first, last = windows[0].start_ms, windows[-1].end_ms
    edges = [first, *(t for t in ticks_ms if first < t < last), last]
    return [(a, b) for a, b in pairwise(edges) if in_session_ms(windows, a, b) > over_ms]


def day_quality(ticks_ms: Sequence[int], windows: Sequence[Span], over_ms: int, *, closed: bool,
                continuous: bool) -> DayQuality:
    """The condition of one venue's trading day from the sorted times of its ticks inside the day's windows."""
    last = ticks_ms[-1] if ticks_ms else None
    if not closed:
        return DayQuality(Condition.PENDING, (), last)
    if not ticks_ms:
        return DayQuality(Condition.MISSING, (), None)
    gaps = tuple(silences(ticks_ms, windows, over_ms)) if continuous else ()
    return DayQuality(Condition.DEGRADED if gaps else Condition.AVAILABLE, gaps, last)


# the all-venue day's condition is its worst venue's: no data beats a gap beats not closed yet beats complete
SEVERITY = {Condition.AVAILABLE: 0, Condition.PENDING: 1, Condition.DEGRADED: 2, Condition.MISSING: 3}


def worst(conditions: Iterable[Condition]) -> Condition:
    """The worst of several venues' conditions of one date (missing > degraded > pending > available)."""
    return max(conditions, key=SEVERITY.__getitem__)
