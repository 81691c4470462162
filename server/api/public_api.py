"""The public-site API (`/api/...`, SPEC section 8): wiring and its background task.

`register_public_site(hub)` builds the repositories and handlers on the hub's
connection and clock, adds their routes (all `Access.PUBLIC`: the per-IP public
bucket, plus the login bucket on login) and a service that rebuilds the market
snapshot every `--market-refresh-s` and anchors pending evidence every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from server.api.accounts import Accounts, BearerAuth
from server.api.site_content import SiteContentApi
from server.api.site_evidence import SiteEvidenceApi
from server.api.site_market import MarketSnapshots, SiteMarketApi
from server.api.site_records import SiteRecordsApi
from server.api.tokens import TokenService, load_external_key, load_secret
from server.evidence import EvidenceLog
from server.store.content import ContentRepo
from server.store.receipts import ReceiptRepo
from server.store.records import RecordRepo
from server.store.users import UserRepo

if TYPE_CHECKING:
    from server.hub import Hub

log = logging.getLogger("market.site")

ANCHOR_INTERVAL_S = 5.0


def register_public_site(hub: Hub) -> None:
    s = hub.settings
    evidence = EvidenceLog(hub.conn, clock=hub.clock)
    tokens = TokenService(load_secret(s.jwt_secret, s.data_dir), load_external_key(s.jwt_public_key), hub.clock)
    users = UserRepo(hub.conn)
    snapshots = MarketSnapshots(hub.state, s.market_refresh_s, hub.clock)
    apis = (
        SiteMarketApi(snapshots),
        SiteContentApi(ContentRepo(hub.conn)),
        Accounts(users, tokens),
        SiteRecordsApi(RecordRepo(hub.conn, hub.clock), BearerAuth(tokens, users), hub.app.check_bucket,
                       s.inquiry_rate),
        SiteEvidenceApi(ReceiptRepo(hub.conn, evidence), evidence),
    )
    for api in apis:
        api.register(hub.router)
    hub.services.append(SiteTasks(snapshots, evidence))


class SiteTasks:
    """Periodic work of the public site, as a hub service (started after the core, stopped before it)."""

    def __init__(self, snapshots: MarketSnapshots, evidence: EvidenceLog,
                 anchor_interval_s: float = ANCHOR_INTERVAL_S) -> None:
        self.snapshots = snapshots
        self.evidence = evidence
        self.anchor_interval_s = anchor_interval_s
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.anchor()  # demo receipts seeded with a new data dir are anchored before the first request
        self.snapshots.refresh()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(_every(self.snapshots.refresh_s, self.snapshots.refresh), name="site-market"),
            loop.create_task(_every(self.anchor_interval_s, self.anchor), name="evidence-anchor"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def anchor(self) -> None:
        try:
            block = self.evidence.anchor_pending()
        except (sqlite3.Error, RuntimeError):
            log.exception("anchoring pending evidence failed")
            return
        if block is not None:
            log.info("evidence anchored: block %d, tree size %d", block.height, block.tree_size)


async def _every(period_s: float, work: Callable[[], object]) -> None:
    while True:
        await asyncio.sleep(period_s)
        try:
            work()
        except Exception:
            log.exception("periodic site task failed")
