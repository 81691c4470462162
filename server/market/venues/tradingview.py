"""A venue clock's hours in the TradingView Charting Library's grammar: `session`, `session_holidays`,
`corrections` (SPEC 14, docs/charting.md), and the holiday closures its time scale marks.

The grammar, as the library parses it (times in the venue's zone):
- a window is `HHMM-HHMM`; its start is on the chart's day itself, or `F` (one day) / `Fn` (n days) before it; its
  end is the first time `HHMM` after the start (a start after the end runs overnight);
- `session` is one or more `windows:days` alternatives joined by `|`, `days` the weekdays 1 = Sunday .. 7 = Saturday;
- `session_holidays` the days (`YYYYMMDD,...`) of a session weekday without trading;
- `corrections` `windows:YYYYMMDD,...;...`: the days whose windows differ from their weekday's.

The chart's day of a trading day is the trading day itself, unless every window of it ends on a later date (CFETS:
09:30 to 03:00 the next day): the grammar has no end after the day, so such a day is written on the date its
windows end. The weekly template is each weekday's most frequent windows over the range written (a weekday
trading on fewer than half of its dates there, CFETS's make-up Saturdays, is no session day: its trading dates are
corrections). Every day of the range is then exactly the template, a holiday or a correction.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

from server.market.venues.clock import VenueClock, Window

Span = tuple[int, str, str]  # (days before the chart's day the window starts, start "HHMM", end "HHMM")
_LABEL_SHIFT_DAYS = 3  # trading days this far before the range may be written on a date inside it


@dataclass(frozen=True, slots=True)
class ChartHours:
    """One clock's hours over [start, end] in the library's fields; `closures` the weekday holidays' names."""
    session: str
    session_holidays: str
    corrections: str
    closures: tuple[tuple[date, str], ...]


def chart_hours(clock: VenueClock, start: date, end: date) -> ChartHours:
    days = _written_days(clock, start, end)
    template = _template(days, start, end)
    closures = tuple((d, name) for d in _dates(start, end) if (name := clock.days.holiday_name(d)) is not None)
    if not template:  # a monthly price has no weekly hours; the library needs a session all the same
        return ChartHours("24x7", "", "", closures)
    holidays: list[str] = []
    corrections: dict[tuple[Span, ...], list[str]] = {}
    day = start
    while day <= end:
        spans, usual = days.get(day), template.get(_tv_weekday(day))
        if spans is None and usual is not None:
            holidays.append(_ymd(day))
        elif spans is not None and spans != usual:
            corrections.setdefault(spans, []).append(_ymd(day))
        day += timedelta(days=1)
    return ChartHours(_session(template), ",".join(holidays),
                      ";".join(f"{_windows(s)}:{','.join(ds)}" for s, ds in corrections.items()), closures)


def _written_days(clock: VenueClock, start: date, end: date) -> dict[date, tuple[Span, ...]]:
    """The windows of every chart day in [start, end] that has any."""
    out: dict[date, tuple[Span, ...]] = {}
    for day in _dates(start - timedelta(days=_LABEL_SHIFT_DAYS), end):
        windows = clock.windows(day)
        if windows:
            label, spans = _written(clock, day, windows)
            if start <= label <= end:
                out[label] = spans
    return out


def _written(clock: VenueClock, day: date, windows: tuple[Window, ...]) -> tuple[date, tuple[Span, ...]]:
    pairs = [(clock.local(w.start_ms), clock.local(w.end_ms)) for w in windows]
    label = max(day, pairs[-1][1].date())
    spans: list[Span] = []
    for opens, closes in pairs:
        if closes <= opens or closes.replace(tzinfo=None) - opens.replace(tzinfo=None) > timedelta(days=1):
            raise ValueError(f"{clock.venue.id} {day}: a window of more than a day cannot be written")
        spans.append(((label - opens.date()).days, f"{opens:%H%M}", f"{closes:%H%M}"))
    return label, tuple(spans)


def _template(days: dict[date, tuple[Span, ...]], start: date, end: date) -> dict[int, tuple[Span, ...]]:
    """Each session weekday's most frequent windows (weekday as the library numbers it)."""
    seen: dict[int, Counter[tuple[Span, ...]]] = {}
    dates: Counter[int] = Counter(_tv_weekday(d) for d in _dates(start, end))
    for day, spans in days.items():
        seen.setdefault(_tv_weekday(day), Counter())[spans] += 1
    return {wd: counts.most_common(1)[0][0] for wd, counts in sorted(seen.items())
            if 2 * sum(counts.values()) > dates[wd]}


def _session(template: dict[int, tuple[Span, ...]]) -> str:
    """`windows:days|...`, the alternative of most weekdays first (days always written: no default to rely on)."""
    groups: dict[tuple[Span, ...], list[int]] = {}
    for wd, spans in template.items():
        groups.setdefault(spans, []).append(wd)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[1]))
    return "|".join(f"{_windows(spans)}:{''.join(map(str, wds))}" for spans, wds in ordered)


def _windows(spans: tuple[Span, ...]) -> str:
    return ",".join(f"{opens}{_days_before(n)}-{closes}" for n, opens, closes in spans)


def _days_before(n: int) -> str:
    return "" if n == 0 else "F" if n == 1 else f"F{n}"


def _tv_weekday(day: date) -> int:
    """1 = Sunday .. 7 = Saturday."""
    return (day.weekday() + 1) % 7 + 1


def _ymd(day: date) -> str:
    return f"{day:%Y%m%d}"


def _dates(start: date, end: date) -> list[date]:
    return [start + timedelta(days=k) for k in range((end - start).days + 1)]

