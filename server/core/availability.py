"""Availability per minute (SPEC 20, docs/sla.md): what a hub records each minute and the rules of a month's report.

Pure: no I/O, no clock. A hub's recorder (server/api/ops/availability.py) fills one `MinuteRecord` per minute from
counters the hot path already keeps (nothing is added per request) and from per-second samples of its components;
storage keeps them (server/store/availability/); `month_report` turns the rows of every hub into the SLA report.

Rules (docs/sla.md says them in words):
- a minute is counted from the data dir's first start (the earliest minute any hub recorded) to the minute before
  the one in progress, within the month;
- a minute is **down** for every component when no hub recorded it (no heartbeat: a killed hub leaves a gap);
- `rest` is down when over 5% of the keyed requests of the minute (summed over hubs) were answered 5xx;
- `stream`, `storage`: down when no hub that ran in the minute had the component up for at least half of the
  seconds it sampled (a row with no samples yet, a heartbeat, counts as up);
- `feed:{venue}`: the same; a minute with no hub is down only while the venue was in session (a shut venue's feed
  is operational, as /api/v1/status says).

Latency figures come from histogram buckets (the bounds of `market_http_request_seconds`): a percentile is the upper
bound of the bucket holding it (a value over the last bound reads as that bound).
"""

from __future__ import annotations

from calendar import monthrange
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date

MINUTE_S = 60
ERROR_SHARE = 0.05  # over this share of a minute's keyed requests answered 5xx: `rest` is down
CORE_COMPONENTS = ("rest", "stream", "storage")
FEED_PREFIX = "feed:"
UPTIME_DAYS = 90  # the /status page's daily uptime: at most and by default this many days (SPEC 20)
InSession = Callable[[str, int], bool]  # (venue, epoch minute) -> its clock said open at that minute's start


@dataclass(slots=True)
class MinuteRecord:
    """One hub's minute: `minute` is epoch seconds // 60. Buckets are counts per histogram bucket (the last one is
    over the last bound). `samples`: seconds the components were sampled; `outages`: component -> seconds out."""

    hub: str
    minute: int
    requests: int = 0
    errors: int = 0
    latency: list[int] = field(default_factory=list)
    frames: int = 0
    feed: list[int] = field(default_factory=list)
    samples: int = 0
    outages: dict[str, int] = field(default_factory=dict)

    def add(self, other: MinuteRecord) -> None:
        """Fold another record of the same hub and minute into this one (a restart within the minute)."""
        self.requests += other.requests
        self.errors += other.errors
        self.latency = add_buckets(self.latency, other.latency)
        self.frames += other.frames
        self.feed = add_buckets(self.feed, other.feed)
        self.samples += other.samples
        for component, seconds in other.outages.items():
            self.outages[component] = self.outages.get(component, 0) + seconds

    def served(self, component: str) -> bool:
        """This hub had the component up for at least half the seconds it sampled (no samples yet: up)."""
        return self.outages.get(component, 0) * 2 <= self.samples


def add_buckets(a: list[int], b: list[int]) -> list[int]:
    if not a:
        return list(b)
    if not b:
        return list(a)
    return [x + y for x, y in zip(a, b, strict=True)]


def delta(now: list[float], before: list[float]) -> list[int]:
    """Bucket counts observed between two readings of a cumulative histogram series (the sum slot dropped)."""
    if not before:
        return [int(n) for n in now]
    return [int(n - b) for n, b in zip(now, before, strict=True)]


def percentile(buckets: list[int], bounds: tuple[float, ...], q: float) -> float | None:
    """The upper bound of the bucket holding the q-quantile (seconds); None without observations."""
    total = sum(buckets)
    if total == 0:
        return None
    rank, seen = q * total, 0
    for i, n in enumerate(buckets):
        seen += n
        if seen >= rank and n:
            return bounds[min(i, len(bounds) - 1)]
    return bounds[-1]


@dataclass(frozen=True, slots=True)
class Span:
    """The counted minutes [first, end) of a report (epoch minutes)."""

    first: int
    end: int

    @property
    def minutes(self) -> int:
        return max(0, self.end - self.first)


def counted_span(month_first: int, month_end: int, first_start: int | None, in_progress: int) -> Span:
    """The month's minutes that count: not before the first start, not the minute in progress nor after it."""
    if first_start is None:
        return Span(month_first, month_first)
    first = max(month_first, first_start)
    end = min(month_end, in_progress)
    return Span(first, max(first, end))


def down_minutes(records: Iterable[MinuteRecord], span: Span, components: list[str],
                 in_session: InSession) -> dict[str, list[int]]:
    """Each component's down minutes within the span, ascending. `in_session(venue, minute)`: the venue was open at
    that minute's start (asked only for minutes no hub recorded)."""
    by_minute: dict[int, list[MinuteRecord]] = {}
    for r in records:
        if span.first <= r.minute < span.end:
            by_minute.setdefault(r.minute, []).append(r)
    down: dict[str, list[int]] = {c: [] for c in components}
    flagged = [c for c in components if c != "rest"]
    for minute in range(span.first, span.end):
        rows = by_minute.get(minute)
        if not rows:
            for c in components:
                if not c.startswith(FEED_PREFIX) or in_session(c[len(FEED_PREFIX):], minute):
                    down[c].append(minute)
            continue
        requests = sum(r.requests for r in rows)
        if requests and sum(r.errors for r in rows) > ERROR_SHARE * requests:
            down["rest"].append(minute)
        if all(r.outages for r in rows):  # some component was out on every hub for a while: which, and how long
            for c in flagged:
                if not any(r.served(c) for r in rows):
                    down[c].append(minute)
    return down


def ranges(minutes: list[int]) -> list[tuple[int, int]]:
    """Consecutive minutes as [from, to) pairs: `to` is the first minute up again (or the span's end)."""
    out: list[tuple[int, int]] = []
    for m in minutes:
        if out and out[-1][1] == m:
            out[-1] = (out[-1][0], m + 1)
        else:
            out.append((m, m + 1))
    return out


def availability(counted: int, down: int) -> float | None:
    """Percent of the counted minutes up, to three decimals; None when nothing counts."""
    if counted <= 0:
        return None
    return round(100.0 * (counted - down) / counted, 3)


def totals(records: Iterable[MinuteRecord]) -> MinuteRecord:
    """Every record folded into one (hub and minute left empty): the month's counts and buckets."""
    out = MinuteRecord("", 0)
    for r in records:
        out.add(r)
    return out


EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
SHANGHAI_S = 8 * 3600  # months and days of the report are Asia/Shanghai's (UTC+8 all year), as the console's usage


def month_span(year: int, month: int) -> Span:
    """The epoch minutes of a calendar month in Asia/Shanghai."""
    first = date(year, month, 1).toordinal() - EPOCH_ORDINAL
    after = first + monthrange(year, month)[1]
    return Span((first * 86400 - SHANGHAI_S) // MINUTE_S, (after * 86400 - SHANGHAI_S) // MINUTE_S)


def local_day_of(minute: int) -> int:
    """The Asia/Shanghai day (days since 1970-01-01) a minute falls in."""
    return (minute * MINUTE_S + SHANGHAI_S) // 86400


def day_minute(day: int) -> int:
    """The first epoch minute of an Asia/Shanghai day (days since 1970-01-01)."""
    return (day * 86400 - SHANGHAI_S) // MINUTE_S


def by_day(first_day: int, end_day: int, span: Span,
           down: dict[str, list[int]]) -> tuple[dict[int, int], dict[str, dict[int, int]]]:
    """Per Asia/Shanghai day in [first_day, end_day): the minutes counted (within `span`) and each component's down
    minutes (from `down_minutes`); the SLA report's days and the status page's daily uptime."""
    counted = {day: max(0, min(span.end, day_minute(day + 1)) - max(span.first, day_minute(day)))
               for day in range(first_day, end_day)}
    down_by_day = {c: dict.fromkeys(counted, 0) for c in down}
    for c, minutes in down.items():
        for m in minutes:
            day = local_day_of(m)
            if day in counted:
                down_by_day[c][day] += 1
    return counted, down_by_day
