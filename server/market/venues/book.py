"""All venues' clocks, built once from the venue data and the calendar notices.

The composition root builds one ``VenueBook`` (``VenueBook.load(calendar_file)``) and hands
it to whoever needs a trading day; nothing here is module-level state. Every session
template of a venue shares the venue's one ``DayCalendar``, so the "calendar known until"
log line appears once per venue.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path

from server.market.venues.calendar_notices import Notices, load_notices
from server.market.venues.clock import VenueClock
from server.market.venues.data import SESSIONS, VENUES, VenueSpec, session_of, validate, venue_entry
from server.market.venues.day_calendars import DayCalendar


class VenueBook:
    def __init__(self, notices: Notices | None = None) -> None:
        validate()
        notices = notices or {}
        self.venues: dict[str, VenueSpec] = dict(VENUES)
        self.calendars: dict[str, DayCalendar] = {
            vid: DayCalendar(spec, notices.get(vid)) for vid, spec in self.venues.items()
        }
        self._clocks: dict[tuple[str, str], VenueClock] = {}

    @classmethod
    def load(cls, calendar_file: str | Path | None = None) -> VenueBook:
        """The repository's notices, extended by ``calendar_file`` (``--calendar-file``)."""
        return cls(load_notices(VENUES, calendar_file))

    def clock(self, venue_id: str, session_id: str = "") -> VenueClock:
        """The clock of ``venue_id`` for ``session_id`` (default: the venue's widest session)."""
        spec = self.venues[venue_id]
        key = (venue_id, session_id or spec.session)
        clock = self._clocks.get(key)
        if clock is None:
            clock = self._clocks[key] = VenueClock(spec, SESSIONS[key[1]], self.calendars[venue_id])
        return clock

    def for_instrument(self, instrument_id: str) -> VenueClock:
        """The clock an instrument's ticks follow (its venue with its product's session)."""
        return self.clock(venue_entry(instrument_id)[0], session_of(instrument_id))

    def venue_of(self, instrument_id: str) -> VenueSpec:
        return self.venues[venue_entry(instrument_id)[0]]

    def instruments_of(self, venue_id: str, instrument_ids: Iterable[str]) -> list[str]:
        """The ids among ``instrument_ids`` that trade on ``venue_id``, in the given order."""
        return [iid for iid in instrument_ids if venue_entry(iid)[0] == venue_id]

    def known_until(self, venue_id: str) -> date:
        return self.calendars[venue_id].known_until
