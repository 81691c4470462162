"""The declared instruments of dedicated data sources on this hub (SPEC 20, docs/ingest.md): each bound to its reserved
market-state row (`custom_from + slot`), at build (before a live feed's archive is replayed into the state), at once
when the console declares or deletes one here, and by a refresh every second for what other hubs did.

A row is bound to one instrument for good (a slot is never reused); a deleted instrument's row goes back to nobody's
(404 for every key) and is cleared.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from functools import partial

from server.api.core.router import Router
from server.api.market.ingest import IngestApi, Publish
from server.core.usage import UsageMeter
from server.market.catalogue import Catalogue, Instrument, declared_instrument, slot_instrument
from server.market.state import MarketState, reset_row
from server.market.timefmt import iso
from server.market.venues.book import VenueBook
from server.market.venues.clock import VenueClock
from server.market.venues.data import SESSIONS
from server.store.accounts.console_store import ConsoleStore
from server.store.sources.repo import Declared, SourcesRepo

log = logging.getLogger("market.sources")

REFRESH_S = 1.0
ConsoleSources = tuple[int, list[str], list[str], Callable[[Declared | None, str], None]]  # register_console's


def instrument_of(venues: VenueBook, d: Declared) -> Instrument:
    publication = venues.venues[d.venue].publication.value
    return declared_instrument(d.id, d.owner_id, d.name, d.unit, d.currency, d.decimals, d.venue, d.session,
                               publication)


def register_sources(router: Router, state: MarketState, venues: VenueBook, store: ConsoleStore,
                     clock: Callable[[], float], changed: list[Callable[[], object]], rate: int,
                     publish: Publish, meter: UsageMeter | None = None,
                     ) -> tuple[DeclaredInstruments, IngestApi]:
    """The declared instruments' binding (a core part: its refresh) and the ingest route (its `frame` serves
    /ws/ingest too); `publish`: the tick path's ingest (TickPath.ingest), `rate`: ticks a second of an account without
    its own (--ingest-rate; an operator's `users limits` sets an account's),
    `meter`: counts each key's accepted ticks (its usage's wsMessages, docs/ingest.md)."""
    declared = DeclaredInstruments(state, venues, store, clock, changed)
    ingest = IngestApi(state.catalogue, publish, state.history_start, rate, clock, meter,
                       partial(late_tick, state))  # a late tick lands in its own bars or is refused, named
    ingest.register(router)
    return declared, ingest


def late_tick(state: MarketState, row: int, ts: float, previous: float | None = None) -> str | None:
    """Why an ingest tick of `row` at `ts` would not count toward its own buckets and trading day, or None when it
    would (`previous`: the row's tick taken before it in the same batch). The candle book only moves forward: a tick
    stamped before the row's newest bucket, a bucket the stream sent as final, or in a trading day before the live
    one counts toward the newest bucket and the live day (the feed's rule for its few-seconds-late ticks), so its
    1m bar, daily candle and 1m flat file would not be its ticks file's minute and day (docs/ingest.md "Late
    ticks"): such a line is refused with this reason, every other late tick lands in its own bars."""
    if not state.clocks or not len(state.candles):
        return None
    clock = state.clocks[row]
    ms = int(ts * 1000)
    day, live = clock.trading_day(ms), state.candles.live_day(row)
    if day < live:
        return (f"late tick: ts {iso(ts)} is in trading day {day}, before this instrument's live trading day {live} "
                "(a closed day's candles and files are not rewritten; publish an instrument's ticks in time order)")
    before = None if previous is None else clock.bucket_ts(int(previous * 1000)) / 1000
    found = state.intraday.behind(row, clock.bucket_ts(ms) / 1000, before)
    if found is None:
        return None
    return (f"late tick: ts {iso(ts)} is before this instrument's newest {found[0]} bar ({iso(found[1])}), which it "
            "would be counted in (a bar already published is not rewritten; publish an instrument's ticks in time "
            "order)")


def bind_at_build(catalogue: Catalogue, venues: VenueBook, store: ConsoleStore) -> None:
    """Before the market state is built: the catalogue's reserved rows take the declared instruments storage holds
    (their clocks, and a live feed's stored candles and archived ticks, are then found by their ids)."""
    rows = len(catalogue.instruments) - catalogue.custom_from
    if rows:
        for d in store.write_blocking(lambda r: SourcesRepo(r.db).bound()):
            if d.slot < rows:
                catalogue.bind(catalogue.custom_from + d.slot, instrument_of(venues, d))


def clock_of(venues: VenueBook, inst: Instrument) -> VenueClock:
    """The clock an instrument's ticks follow: a declared one's venue and session, else the venue data's."""
    return venues.clock(inst.venue, inst.session) if inst.owner else venues.for_instrument(inst.id)


class DeclaredInstruments:
    def __init__(self, state: MarketState, venues: VenueBook, store: ConsoleStore, clock: Callable[[], float],
                 changed: list[Callable[[], object]]) -> None:
        """`changed`: told after any row was bound or freed (the pipeline's memo of keys' buckets)."""
        self.state, self.venues, self.store, self.clock = state, venues, store, clock
        self.catalogue = state.catalogue
        self.rows = len(self.catalogue.instruments) - self.catalogue.custom_from
        self.changed = changed
        self._task: asyncio.Task[None] | None = None

    # --- binding ------------------------------------------------------------------------------------------------
    def instrument(self, d: Declared) -> Instrument:
        return instrument_of(self.venues, d)

    def bind(self, declared: Declared | None, inst_id: str) -> None:
        """One declaration (or, None, the deletion of `inst_id`) on this hub now."""
        if declared is not None:
            self._bind_slot(declared.slot, declared)
        else:
            row = self.catalogue.index.get(inst_id)
            if row is not None and row >= self.catalogue.custom_from:
                self._bind_slot(row - self.catalogue.custom_from, None)
        for listener in self.changed:
            listener()

    def apply(self, bound: list[Declared]) -> bool:
        """Every slot as storage has it; True if any row changed."""
        wanted = {d.slot: d for d in bound if d.slot < self.rows}
        changed = False
        for slot in range(self.rows):
            changed |= self._bind_slot(slot, wanted.get(slot))
        if changed:
            for listener in self.changed:
                listener()
        return changed

    def _bind_slot(self, slot: int, declared: Declared | None) -> bool:
        if slot >= self.rows:
            log.warning("declared instrument %s has slot %d; this hub reserves %d rows (--custom-instruments)",
                        declared.id if declared else "?", slot, self.rows)
            return False
        row = self.catalogue.custom_from + slot
        inst = self.instrument(declared) if declared is not None else slot_instrument(slot)
        if self.catalogue.instruments[row] == inst:
            return False
        self.catalogue.bind(row, inst)
        clock = self.venues.clock(inst.venue, inst.session) if self.state.clocks else None
        reset_row(self.state, row, clock, self.clock())
        return True


    def console_sources(self) -> ConsoleSources:
        """What the console's instruments routes take: the reserved rows, the venue and session ids a declaration may
        name, and this hub's binding."""
        return self.rows, sorted(self.venues.venues), sorted(SESSIONS), self.bind

    # --- the refresh (a core part) ------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.rows:
            self._task = asyncio.get_running_loop().create_task(self._refresh(), name="declared-instruments")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            try:
                self.apply(await self.store.read(lambda r: SourcesRepo(r.db).bound()))
            except Exception as exc:  # storage away: the rows stay as they are; the next round tries again
                log.warning("declared instruments not refreshed (%s: %s)", type(exc).__name__, exc)
