"""`GET /api/news` and `GET /api/research`: `{items, total, limit, offset}`, newest first, remembered per version.

An answer is a function of (path, query string, content version), so the routes declare `version=` and the
pipeline remembers each 200 per path + query string (every `limit`/`offset` variant apart) with its ETag and
answers from it (`App.serve_hot`) without a storage read until the version moves. The version is read by the
request path from memory (`ContentVersion.current`), never from storage.

The version source, the same on every storage backend and engine (SQLite or PostgreSQL, memory or Redis):
content items are only ever inserted (`content import`, the demo seed: `INSERT ... ON CONFLICT DO NOTHING`),
never updated or deleted, so their count is a version. `ContentVersion` reads it with one `COUNT(*)` every
POLL_S on a reader thread / pooled connection, so an import run from the CLI (another process) shows within
POLL_S plus one query on every hub of the shared database, without a Redis key or a schema change. If content
ever becomes editable, the edit must move the version too (e.g. a version row bumped in the same transaction).
While the version is unknown (storage away at start, a failed poll) nothing is remembered and every request
reads storage, so no answer outlives the data it was built from by more than one poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import orjson

from server.api.core.cache import VersionedCache
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.site.fields import int_params
from server.core.background import log_round_failure
from server.core.metrics import Registry
from server.store.site.content import ContentKind
from server.store.sql.db import storage_errors
from server.store.sql.repositories import Content
from server.store.sql.storage import StorageClosed

log = logging.getLogger("market.site")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MAX_OFFSET = 10**9
POLL_S = 0.5  # how often the content version is read: an import from another process shows within this + a query


class ContentVersion:
    """The content version as last read from storage (None: unknown), refreshed every `poll_s`; a hub service."""

    def __init__(self, repo: Content, poll_s: float = POLL_S) -> None:
        self.repo = repo
        self.poll_s = poll_s
        self.current: int | None = None
        self._task: asyncio.Task[None] | None = None

    def get(self) -> int | None:
        return self.current

    async def refresh(self) -> None:
        try:
            self.current = await self.repo.version()
        except StorageClosed:
            self.current = None
        except storage_errors(RuntimeError) as exc:
            if self.current is not None:  # one line per outage, not one per poll
                log_round_failure(log, "reading the content version", exc)
            self.current = None  # answers are read from storage again until a poll succeeds

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="content-version")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            await self.refresh()


class SiteContentApi:
    def __init__(self, repo: Content, registry: Registry | None = None, poll_s: float = POLL_S) -> None:
        self.repo = repo
        self.versions = ContentVersion(repo, poll_s)
        # the bodies per (kind, limit, offset) at the current version: the answer when serve_hot cannot give it
        # (the Redis engine's shared limiter, a refused or first request per query string) without a storage read
        self.cache = VersionedCache()
        registry = registry or Registry()
        # storage reads for content pages: a remembered answer makes none (tests and operators see the cache work)
        self.reads = registry.counter("market_content_reads_total", "Content pages read from storage, by kind.")
        self._labels = {kind: (("kind", kind.value),) for kind in ContentKind}
        registry.gauge("market_content_version", "The content version the public site serves (-1: unknown).",
                       lambda: -1.0 if self.versions.current is None else float(self.versions.current))

    def register(self, router: Router) -> None:
        version = self.versions.get
        router.add("GET", "/api/news", self.news, Access.PUBLIC, name="site_news", version=version)
        router.add("GET", "/api/research", self.research, Access.PUBLIC, name="site_research", version=version)

    async def news(self, req: Request) -> Response:
        return await self._page(req, ContentKind.NEWS)

    async def research(self, req: Request) -> Response:
        return await self._page(req, ContentKind.RESEARCH)

    async def _page(self, req: Request, kind: ContentKind) -> Response:
        page = int_params(req.query, limit=(DEFAULT_LIMIT, 1, MAX_LIMIT), offset=(0, 0, MAX_OFFSET))
        limit, offset = page["limit"], page["offset"]
        version = self.versions.current  # read before storage: the body is at least as new as its version
        key = (kind, limit, offset)
        body = None if version is None else self.cache.lookup(key, version)
        if body is None:
            self.reads.inc(self._labels[kind])
            items, total = await self.repo.page(kind, limit, offset)
            body = orjson.dumps({"items": items, "total": total, "limit": limit, "offset": offset})
            if version is not None:
                self.cache.store(key, version, body)
        return Response(200, body)
