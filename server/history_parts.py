"""A live feed's history parts, as server/root.py wires them (SPEC 18): the durable history it opens, who writes
the tick archive, and what the archive serves (metrics, retention, deep range queries, flat files)."""

from __future__ import annotations

from collections.abc import Callable

from server.api.market.deep_ranges import DeepRanges
from server.config import Settings, StorageSettings
from server.core.metrics import Registry
from server.engine import Engine
from server.market.venues.book import VenueBook
from server.store.flatfiles.days import FlatFileJob
from server.store.flatfiles.scopes import FlatFileSets
from server.store.history.archive_keeper import RetentionJob
from server.store.history.candle_book import CandleKeeper
from server.store.history.retention import DEFAULT_DAYS, Retention
from server.store.history.threads import History
from server.store.sql.repositories import Candles

Jobs = list[RetentionJob | FlatFileJob]  # the history's background jobs (root.py starts them with the core)


def history_parts(keeper: CandleKeeper | None, registry: Registry, storage: StorageSettings,
                  clock: Callable[[], float], venues: VenueBook, daily: Candles,
                  ) -> tuple[Callable[[], bool], Jobs, DeepRanges | None, FlatFileSets | None]:
    """A live feed's history (SPEC 18): its /metrics and the check /readyz adds, its retention job (pruned as
    --retention says), the range queries below the rings and the flat files (kept in the data dir's flatfiles/,
    made ahead by their job); nothing for the demo feed."""
    if keeper is None or keeper.archive is None:
        return (lambda: True), [], None, None
    days = {**DEFAULT_DAYS, **storage.retention}
    archive, catalogue = keeper.archive, keeper.catalogue
    # the catalogue's own lists: a reserved row's declared instrument (SPEC 20) is read by the id it has now
    deep = DeepRanges(archive.history, catalogue.ids, catalogue.decimals, daily)
    # the flat files of the day: every instrument but the declared ones (docs/ingest.md: another account's keys
    # see nothing of them, and a file is one set of bytes for every key), which have their own per namespace
    instruments = catalogue.instruments[:catalogue.custom_from]
    ids = [i.id for i in instruments]
    flat = FlatFileSets.build(archive.history, daily, ids, [i.venue for i in instruments],
                              [venues.for_instrument(i) for i in ids], venues.venues, storage.data_dir / "flatfiles",
                              days, (catalogue, venues))
    jobs: Jobs = [RetentionJob(archive.history, Retention(days), clock), FlatFileJob(flat, clock)]
    return archive.register_metrics(registry), jobs, deep, flat


def history_opener(storage: StorageSettings) -> Callable[[], History]:
    """The durable history of a live feed (SPEC 18): SQLite in the data dir or PostgreSQL."""
    url, every = storage.database_url, storage.archive_commit_s
    return (lambda: History.postgres(url, every)) if url else (lambda: History.sqlite(storage.data_dir, every))


def archive_writer(settings: Settings, engine: Engine) -> Callable[[], bool] | None:
    """Who writes the tick archive: on the Redis engine with PostgreSQL (one archive for every hub) the feed's
    lease holder only; otherwise every hub writes its own (None)."""
    if engine.ticks.shared and settings.database_url:
        return lambda: engine.ticks.leading
    return None
