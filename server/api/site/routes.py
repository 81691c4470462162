"""The public-site API (`/api/...`, SPEC section 8): wiring and its background task.

`register_public_site(...)` builds the handlers on the repositories (async,
off the loop) and clock, adds their routes (all `Access.PUBLIC`: the per-IP public
bucket, plus the login bucket on login) and a service that rebuilds the market
snapshot every `--market-refresh-s` and anchors pending evidence every few seconds,
in batches of at most ANCHOR_BATCH hashes (one storage call and one block each).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable

from server.api.auth.tokens import TokenService
from server.api.core.router import Router
from server.api.site.accounts import Accounts, BearerAuth
from server.api.site.content import ContentVersion, SiteContentApi
from server.api.site.evidence import SiteEvidenceApi
from server.api.site.market import MarketSnapshots, SiteMarketApi
from server.api.site.records import BucketCheck, SiteRecordsApi
from server.core.background import log_round_failure
from server.core.metrics import Registry
from server.engine import LoginFailures
from server.evidence.log import ANCHOR_BATCH
from server.market.state import MarketState
from server.store.accounts.users import User
from server.store.sql.db import storage_errors
from server.store.sql.repositories import Evidence, Repositories
from server.store.sql.storage import StorageClosed

log = logging.getLogger("market.site")

ANCHOR_INTERVAL_S = 5.0
MAX_BATCHES_PER_ROUND = 1000  # bounded; a bigger backlog continues next round


def register_public_site(router: Router, repos: Repositories, state: MarketState, tokens: TokenService,
                         clock: Callable[[], float], check_bucket: BucketCheck, *, refresh_s: float,
                         inquiry_rate: int, shared: bool, may_anchor: Callable[[], bool],
                         registry: Registry, logins: LoginFailures,
                         tell_owner: Callable[[User], Awaitable[None]] | None = None) -> SiteTasks:
    """Add the public-site routes to `router`; returns the site's service (snapshot refresh, anchoring), whose
    `snapshots.before_ticks` the composition root has listen to the applied ticks. `tokens`: the accounts' JWTs
    (the root reads the secret); `shared`: other hubs serve this market too; `may_anchor`: whether this hub
    anchors evidence now (SPEC 12: the feed lease holder only); `logins`: the engine's failed logins per account;
    `tell_owner`: e-mails a locked account's owner."""
    snapshots = MarketSnapshots(state, refresh_s, clock, shared=shared)
    content = SiteContentApi(repos.content, registry)  # its reads and version on /metrics (`registry`)
    apis = (
        SiteMarketApi(snapshots),
        content,
        Accounts(repos.users, tokens, logins, tell_owner),
        SiteRecordsApi(repos.records, BearerAuth(tokens, repos.users), check_bucket, inquiry_rate),
        SiteEvidenceApi(repos.receipts, repos.evidence),
    )
    for api in apis:
        api.register(router)
    # the snapshot's answers are a function of the snapshot and its max-age: remembered by the pipeline per both
    router.set_version(("site_market", "site_market_category"), lambda: (snapshots.current, snapshots.max_age()))
    return SiteTasks(snapshots, repos.evidence, may_anchor=may_anchor, content=content.versions)


class SiteTasks:
    """Periodic work of the public site, as a hub service (started after the core, stopped before it)."""

    def __init__(self, snapshots: MarketSnapshots, evidence: Evidence,
                 anchor_interval_s: float = ANCHOR_INTERVAL_S, anchor_batch: int = ANCHOR_BATCH,
                 may_anchor: Callable[[], bool] = lambda: True, content: ContentVersion | None = None) -> None:
        self.snapshots = snapshots
        self.content = content  # the version the news/research answers are remembered under, polled
        self.may_anchor = may_anchor
        self.evidence = evidence
        self.anchor_interval_s = anchor_interval_s
        self.anchor_batch = anchor_batch
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.anchor()  # demo receipts seeded with a new data dir are anchored before the first request
        self.snapshots.start()
        if self.content is not None:
            await self.content.start()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self.snapshots.run(), name="site-market"),
            loop.create_task(_every(self.anchor_interval_s, self.anchor), name="evidence-anchor"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self.content is not None:
            await self.content.stop()

    async def anchor(self) -> None:
        """Anchor the pending hashes, one bounded batch (one block) per storage call (on the redis
        engine only while this hub holds the feed lease)."""
        if not self.may_anchor():
            return
        for _ in range(MAX_BATCHES_PER_ROUND):
            try:
                block = await self.evidence.anchor_batch(self.anchor_batch)
            except StorageClosed:
                return
            except storage_errors(RuntimeError) as exc:
                log_round_failure(log, "anchoring pending evidence", exc)
                return
            if block is None:
                return
            log.info("evidence anchored: block %d, tree size %d", block.height, block.tree_size)


async def _every(period_s: float, work: Callable[[], object]) -> None:
    while True:
        await asyncio.sleep(period_s)
        try:
            done = work()
            if inspect.isawaitable(done):
                await done
        except Exception as exc:
            log_round_failure(log, "periodic site task", exc)
