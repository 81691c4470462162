"""Exchange notices that differ from the maintained holiday packages: a TOML file.

The repository ships ``calendar_notices.toml`` beside this module; an operator extends it at
run time with another file of the same form (``--calendar-file``). Entries:

    [[closure]]            # an extra closure: the venue does not trade on this date
    venue = "dce"          # a venue id, or a list of them
    date = 2026-12-31
    name = "Exchange notice 2026-12"

    [[opening]]            # a date the package marks closed on which the venue trades
    [[night_cancelled]]    # no night session before this trading day (date = the trading day)
    [[known_until]]        # the calendar is known (after the notices above) up to this date
    venue = "zce"
    date = 2027-12-31

Every error names the file, the entry (table name and 1-based index) and the field.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

DEFAULT_NOTICES = Path(__file__).with_name("calendar_notices.toml")

_KINDS = ("closure", "opening", "night_cancelled", "known_until")


class CalendarFileError(ValueError):
    """A calendar notices file that cannot be used; the message names the place."""


@dataclass(slots=True)
class VenueNotices:
    closures: dict[date, str] = field(default_factory=dict)
    openings: set[date] = field(default_factory=set)
    night_cancelled: set[date] = field(default_factory=set)
    known_until: date | None = None


Notices = dict[str, VenueNotices]


def parse_notices(text: str, origin: str, venue_ids: Iterable[str]) -> Notices:
    """Parse one notices document; ``origin`` names it in errors."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CalendarFileError(f"{origin}: not valid TOML: {exc}") from exc
    known = frozenset(venue_ids)
    unknown = sorted(set(doc) - set(_KINDS))
    if unknown:
        raise CalendarFileError(f"{origin}: unknown table [[{unknown[0]}]] (expected one of {', '.join(_KINDS)})")
    out: Notices = {}
    for kind in _KINDS:
        entries = doc.get(kind, [])
        if not isinstance(entries, list):
            raise CalendarFileError(f"{origin}: {kind} must be an array of tables ([[{kind}]])")
        for index, entry in enumerate(entries, start=1):
            _apply(out, kind, entry, f"{origin}: [[{kind}]] #{index}", known)
    return out


def _apply(out: Notices, kind: str, entry: Any, where: str, known: frozenset[str]) -> None:
    if not isinstance(entry, dict):
        raise CalendarFileError(f"{where}: must be a table")
    extra = sorted(set(entry) - {"venue", "date", "name"})
    if extra:
        raise CalendarFileError(f"{where}: unknown field {extra[0]!r}")
    day = entry.get("date")
    if not isinstance(day, date) or hasattr(day, "hour"):
        raise CalendarFileError(f"{where}: field 'date' must be a TOML date like 2026-10-01, got {day!r}")
    name = entry.get("name", "")
    if not isinstance(name, str):
        raise CalendarFileError(f"{where}: field 'name' must be a string")
    if kind == "closure" and not name:
        raise CalendarFileError(f"{where}: field 'name' is required for a closure")
    for venue in _venues(entry.get("venue"), where, known):
        notices = out.setdefault(venue, VenueNotices())
        if kind == "closure":
            notices.closures[day] = name
        elif kind == "opening":
            notices.openings.add(day)
        elif kind == "night_cancelled":
            notices.night_cancelled.add(day)
        else:
            notices.known_until = max(day, notices.known_until or day)


def _venues(value: Any, where: str, known: frozenset[str]) -> list[str]:
    venues = [value] if isinstance(value, str) else value
    if not isinstance(venues, list) or not venues or not all(isinstance(v, str) for v in venues):
        raise CalendarFileError(f"{where}: field 'venue' must be a venue id or a non-empty list of them")
    for venue in venues:
        if venue not in known:
            raise CalendarFileError(f"{where}: field 'venue': unknown venue {venue!r}")
    return venues


def merge(base: Notices, extra: Notices) -> Notices:
    """``base`` extended by ``extra`` (a later file wins for a closure's name and known_until)."""
    out: Notices = {}
    for venue in set(base) | set(extra):
        merged = VenueNotices()
        for part in (base.get(venue), extra.get(venue)):
            if part is None:
                continue
            merged.closures.update(part.closures)
            merged.openings |= part.openings
            merged.night_cancelled |= part.night_cancelled
            merged.known_until = part.known_until or merged.known_until
        out[venue] = merged
    return out


def load_notices(venue_ids: Iterable[str], extra_file: str | Path | None = None) -> Notices:
    """The repository's notices, extended by ``extra_file`` (the ``--calendar-file`` flag) if given."""
    ids = tuple(venue_ids)
    notices = parse_notices(DEFAULT_NOTICES.read_text(encoding="utf-8"), str(DEFAULT_NOTICES.name), ids)
    if extra_file is None:
        return notices
    path = Path(extra_file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CalendarFileError(f"{path}: cannot read the calendar file: {exc.strerror or exc}") from exc
    return merge(notices, parse_notices(text, str(path), ids))
