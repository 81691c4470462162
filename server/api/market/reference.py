"""Reference data (SPEC 16): the instruments, their venues, each venue's state now and its calendar.

- `GET /api/v1/instruments` and `/{id}`: what each instrument is, where it trades, how often it is published and
  which candle intervals it has (a daily or monthly publication has no intraday candles); with `?product=` or
  `?symbol=`, and for a contract id, the futures contracts (SPEC 19, server/api/market/contract_views.py).
- `GET /api/v1/venues`: every venue with its status now (open, break, closed), trading day, next open and close,
  how far ahead its calendar is known and its instruments.
- `GET /api/v1/venues/{id}/calendar?from=&to=`: each trading day in the range (both dates included, at most 366
  days) with its session windows, and the weekdays it is shut.

The catalogue's instrument answers never change while the hub runs; the contracts' status and the venue list change
with the clock (remembered per minute: every session window starts and ends on a minute); a calendar range is fixed
once the hub has started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

import orjson

from server.api.core.query import known_query, param_error, parse_day
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.market.contract_views import PARAMS as CONTRACT_PARAMS
from server.api.market.contract_views import ContractViews
from server.api.market.deep_ranges import DeepRanges
from server.core.errors import ApiError
from server.market.candles.intraday import INTERVALS
from server.market.catalogue import Catalogue, Instrument
from server.market.contracts.listing import ContractBook
from server.market.contracts.specs import ProductSpec
from server.market.state import MarketState
from server.market.venues.book import VenueBook
from server.market.venues.views import CalendarRangeError, calendar, venue_summary

DAILY = "1d"
NO_PARAMS: frozenset[str] = frozenset()
CALENDAR_PARAMS = frozenset({"from", "to"})


def intervals_of(inst: Instrument) -> list[str]:
    """The candle intervals an instrument has: every one for a continuous market, only 1d for a publication."""
    return [*INTERVALS, DAILY] if inst.publication == "continuous" else [DAILY]


def instrument_view(inst: Instrument) -> dict[str, Any]:
    return {"id": inst.id, "kind": inst.kind, "name": inst.name, "source": inst.source, "unit": inst.unit,
            "currency": inst.currency, "decimals": inst.decimals, "venue": inst.venue,
            "publication": inst.publication, "intervals": intervals_of(inst)}


class ReferenceApi:
    def __init__(self, catalogue: Catalogue, venues: VenueBook, clock: Callable[[], float],
                 state: MarketState | None = None, deep: DeepRanges | None = None,
                 products: Mapping[str, ProductSpec] | None = None) -> None:
        """`state`: the candles held, for an instrument's `earliest` (SPEC 18); `deep`: a live feed's stored
        history, whose older buckets count too; `products`: the futures products, whose contracts it answers too
        (SPEC 19)."""
        self.state, self.deep = state, deep
        self.contracts = ContractViews(ContractBook(products, venues.calendars), venues) if products else None
        self.catalogue = catalogue
        self.venues = venues
        self.clock = clock
        self._instruments = {inst.id: orjson.dumps(instrument_view(inst)) for inst in catalogue.instruments
                             if not inst.owner}  # a declared instrument's (SPEC 20): made per request, for its owner
        listed = [catalogue.instruments[row] for row in catalogue.listed_rows]  # contracts come with ?product=
        self._all = orjson.dumps({"instruments": [instrument_view(inst) for inst in listed]})
        self._ids = [inst.id for inst in listed]
        self._ids_all = [inst.id for inst in catalogue.instruments]

    def register(self, router: Router) -> None:
        fixed, minute = _fixed, self._minute
        router.add("GET", "/api/v1/instruments", self.instruments, Access.KEYED, name="instruments",
                   version=minute)  # a contract's status moves with the clock; the catalogue's list is built once
        router.add("GET", "/api/v1/instruments/{id}", self.instrument, Access.KEYED, name="instrument",
                   version=self._held_version)  # `earliest` moves as the rings roll and the retention prunes
        router.add("GET", "/api/v1/instruments/{id}/rolls", self.rolls, Access.KEYED, name="instrument-rolls",
                   version=self._held_version)  # a roll is decided as a product's trading day begins
        router.add("GET", "/api/v1/venues", self.venue_list, Access.KEYED, name="venues", version=minute)
        router.add("GET", "/api/v1/venues/{id}/calendar", self.calendar, Access.KEYED, name="venue-calendar",
                   version=fixed)

    def _minute(self) -> object:
        return int(self.clock() // 60)

    def _held_version(self) -> object:
        return (self.state.version if self.state is not None else 0), int(self.clock() // 60)

    def instruments(self, req: Request) -> Response:
        query = known_query(req, CONTRACT_PARAMS if self.contracts is not None else NO_PARAMS)
        owned = self.catalogue.owned.get(req.owner) if req.owner is not None else None
        if owned and not query:  # an account's own instruments after ours (SPEC 20)
            body = orjson.loads(self._all)
            body["instruments"] += [instrument_view(self.catalogue.instruments[r]) for r in owned]
            return Response(200, orjson.dumps(body))
        if not query or self.contracts is None:
            return Response(200, self._all)
        return Response(200, self.contracts.listing(query, int(self.clock() * 1000)))

    def instrument(self, req: Request) -> Response:
        known_query(req, NO_PARAMS)
        inst_id = req.path_params["id"]
        row = self.catalogue.index.get(inst_id)
        if row is not None and not self.catalogue.visible(row, req.owner):  # another account's (SPEC 20)
            row = None
        contract = self.contracts.one(inst_id, int(self.clock() * 1000)) if self.contracts is not None else None
        if row is None or contract is not None:  # a contract: its reference data (SPEC 19), `earliest` if it has a row
            if contract is None:
                raise ApiError("not_found", f"Unknown instrument id {inst_id!r}.")
            if row is None or self.state is None:
                return Response(200, contract)
            return Response(200, orjson.dumps({**orjson.loads(contract), "kind": self.catalogue.instruments[row].kind,
                                               "earliest": self._earliest(row)}))
        inst = self.catalogue.instruments[row]
        if self.state is None and not inst.owner:
            return Response(200, self._instruments[inst_id])
        earliest = self._earliest(row)
        if self.deep is not None:
            return self._with_stored(inst, earliest)  # type: ignore[return-value]
        return Response(200, orjson.dumps({**instrument_view(inst), "earliest": earliest}))

    def rolls(self, req: Request) -> Response:
        """A futures product's main contract rolls (SPEC 19), oldest first: `{id, contract, rolls: [{tradingDay, from,
        to, fromClose, toClose}]}`; 404 for anything but a product with contracts."""
        known_query(req, NO_PARAMS)
        inst_id = req.path_params["id"]
        row = self.catalogue.index.get(inst_id)
        if self.state is None or row is None or not self.state.mains.is_series(row):
            raise ApiError("not_found", f"{inst_id!r} is not a futures product with contracts (methanol, brent...).")
        mains = self.state.mains
        main = mains.main[row]
        return Response(200, orjson.dumps({"id": inst_id, "contract": self._ids_all[main] if main is not None else None,
                                           "rolls": mains.roll_views(row)}))

    def _earliest(self, row: int) -> dict[str, str | None]:
        return {iv: self._first_held(row, iv) for iv in intervals_of(self.catalogue.instruments[row])}

    def _first_held(self, row: int, interval: str) -> str | None:
        """The `t` of the first candle of `interval` the rings (or the daily book) hold, as /kline writes it."""
        assert self.state is not None
        starts, cols = self.state.ranges.held(row, interval)
        return self.state.ranges.format(row, interval, cols[:1])[0]["t"] if len(starts) else None

    async def _with_stored(self, inst: Instrument, earliest: dict[str, str | None]) -> Response:
        """`earliest` counting the stored history's older intraday buckets (read on a history thread)."""
        assert self.deep is not None
        stored = await self.deep.earliest(inst.id, intervals_of(inst))
        for interval, first in stored.items():
            held = earliest.get(interval)
            if first is not None and (held is None or first < held):  # the same ISO format: ordered as text
                earliest[interval] = first
        return Response(200, orjson.dumps({**instrument_view(inst), "earliest": earliest}))

    def venue_list(self, req: Request) -> Response:
        known_query(req, NO_PARAMS)
        now_ms = int(self.clock() * 1000)
        venues = [venue_summary(self.venues.clock(vid), now_ms, self.venues.known_until(vid),
                                self.venues.instruments_of(vid, self._ids))
                  for vid in self.venues.venues]
        return Response(200, orjson.dumps({"venues": venues}))

    def calendar(self, req: Request) -> Response:
        query = known_query(req, CALENDAR_PARAMS)
        venue_id = req.path_params["id"]
        if venue_id not in self.venues.venues:
            raise ApiError("not_found", f"Unknown venue id {venue_id!r}.")
        start, end = _date(query, "from"), _date(query, "to")
        try:  # the span, the order and the calendar's known years are checked before a day is looked up
            return Response(200, orjson.dumps(calendar(self.venues.clock(venue_id), start, end)))
        except CalendarRangeError as exc:
            raise param_error(exc.field, str(exc)) from None


def _fixed() -> object:
    return 0


def _date(query: dict[str, str], field: str) -> date:
    raw = query.get(field, "")
    if not raw.strip():
        raise param_error(field, f"{field} is required (YYYY-MM-DD)")
    return parse_day(field, raw)
