"""Which sets of flat files a hub keeps (SPEC 18): the all-venue files, and each venue's own.

The all-venue file of a trading day holds every instrument's rows and exists once the last venue trading that day
has closed (ICE Futures Europe's 23:00 London, 07:00 the next morning in Shanghai), so a user of one venue would
wait for every other. A venue's files hold its instruments only (the catalogue's `venue` of each instrument, so a
contract listed on a venue is in its files) and exist from its own close plus two minutes (``SETTLE_MS``): ZCE's
Wednesday at 15:02 Shanghai. They live beside the all-venue files, in ``<root>/venues/<venue>/<dataset>/``.

A dedicated data source's files (SPEC 20, docs/ingest.md "Flat files") are the same over one namespace's declared
instruments (``SourceFiles``), in ``<root>/sources/<namespace>/<dataset>/``: made ahead by the job as a venue's are,
deleted by the retention and dropped by an import like every other set.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from server.market.catalogue import Catalogue, Instrument
from server.market.venues.book import VenueBook
from server.market.venues.clock import VenueClock
from server.store.flatfiles.days import FlatFileDays
from server.store.flatfiles.files import data_version, dropped_days, move_version
from server.store.history.threads import History
from server.store.sql.repositories import Candles

VENUES_DIR = "venues"  # under the flat-file root: one folder per venue
SOURCES_DIR = "sources"  # under the flat-file root: one folder per dedicated data source's namespace (SPEC 20)


class SourceFiles:
    """Each dedicated data source's files: one ``FlatFileDays`` per namespace over the instruments it declares now
    (the catalogue's bound reserved rows), kept while that list stays the same (a declaration or deletion: a new
    set in the same folder; days already made keep their files, docs/ingest.md "Flat files")."""

    def __init__(self, every: FlatFileDays, catalogue: Catalogue, venues: VenueBook) -> None:
        self.every, self.catalogue, self.venues = every, catalogue, venues
        self._held: dict[str, tuple[tuple[str, ...], FlatFileDays]] = {}  # namespace -> (its ids, its files)

    def declared(self) -> dict[str, list[Instrument]]:
        """Namespace -> its declared instruments now, by id."""
        cat = self.catalogue
        out: dict[str, list[Instrument]] = {}
        for row in sorted(r for rows in cat.owned.values() for r in rows):
            inst = cat.instruments[row]
            out.setdefault(inst.id.partition(".")[0], []).append(inst)
        return {ns: sorted(insts, key=lambda i: i.id) for ns, insts in out.items()}

    def of(self, namespace: str, mine: Sequence[Instrument]) -> FlatFileDays:
        """The files of `namespace` over `mine` (its declared instruments, by id)."""
        ids = tuple(inst.id for inst in mine)
        held = self._held.get(namespace)
        if held is None or held[0] != ids:
            clocks = [self.venues.clock(inst.venue, inst.session) for inst in mine]
            held = self._held[namespace] = (ids, source_days(self.every, namespace, ids, clocks))
        return held[1]

    def __iter__(self) -> Iterator[FlatFileDays]:
        """Every namespace's files now (the job's round), and a set of no instrument for each namespace folder on
        disk without a declared instrument (all deleted since: it makes no day, its retention still deletes)."""
        declared = self.declared()
        folder = self.every.root / SOURCES_DIR
        held = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        for namespace in sorted({*declared, *held}):
            yield self.of(namespace, declared.get(namespace, []))


@dataclass(frozen=True)
class FlatFileSets:
    all: FlatFileDays
    venues: Mapping[str, FlatFileDays]  # every venue of the venue book, those without instruments too
    sources: SourceFiles | None = None  # the dedicated data sources' (SPEC 20; None: no declared instruments)

    @classmethod
    def build(cls, history: History, daily: Candles, ids: Sequence[str], venue_ids: Sequence[str],
              clocks: Sequence[VenueClock], known: Iterable[str], root: Path,
              retention: Mapping[str, int], declared: tuple[Catalogue, VenueBook] | None = None) -> FlatFileSets:
        """`ids`, `venue_ids` and `clocks`: every instrument, its venue and its clock, in the same order; `known`:
        every venue id (a venue without an instrument has files of no day); `declared`: the catalogue whose reserved
        rows hold the dedicated data sources' instruments and the venue book of their clocks."""
        rows = list(zip(ids, venue_ids, clocks, strict=True))
        every = FlatFileDays(history, daily, ids, clocks, root, retention)
        venues = {}
        for vid in known:
            mine = [(i, c) for i, v, c in rows if v == vid]
            venues[vid] = FlatFileDays(history, daily, [i for i, _ in mine], [c for _, c in mine],
                                       venue_root(root, vid), retention, venue=vid, version_root=root)
        return cls(every, venues, SourceFiles(every, *declared) if declared is not None else None)

    def import_version(self) -> str:
        """The data dir's data version, which every import moves (files.data_version); no committed-tick count."""
        return data_version(self.all.version_root)

    def __iter__(self) -> Iterator[FlatFileDays]:
        """The all-venue files first, then each venue's, then each dedicated data source's (a job's order)."""
        yield self.all
        yield from self.venues.values()
        if self.sources is not None:
            yield from self.sources


def venue_root(root: Path, venue: str) -> Path:
    return root / VENUES_DIR / venue


def source_days(every: FlatFileDays, namespace: str, ids: Sequence[str], clocks: Sequence[VenueClock]) -> FlatFileDays:
    """A dedicated data source's files (SPEC 20, docs/ingest.md): its declared instruments `ids` (their venues'
    `clocks`) over the all-venue files' history and retention, in ``<root>/sources/<namespace>/<dataset>/``; a day
    exists from the last close among its instruments' venues plus two minutes (one venue: that venue's close)."""
    return FlatFileDays(every.history, every.daily, ids, clocks, every.root / SOURCES_DIR / namespace,
                        every.retention, venue=namespace, version_root=every.version_root)


def drop_days_everywhere(root: Path, dataset: str, first: date, last: date) -> int:
    """`drop_days` on the all-venue files, every venue's and every dedicated data source's (an import changed those
    days); the count of days that had files in any of them. Rows may have come to days that had none: the data
    version moves (one for every set: the venues' days read the all-venue root's), so hubs look at the days they
    remembered empty again."""
    move_version(root)
    dropped = dropped_days(root, dataset, first, last)
    for folder in (root / VENUES_DIR, root / SOURCES_DIR):
        if folder.is_dir():
            for scope in folder.iterdir():
                dropped |= dropped_days(scope, dataset, first, last)
    return len(dropped)
