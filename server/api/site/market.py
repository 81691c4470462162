"""`GET /api/market` and `/api/market/{id}`: the public market snapshot, serialised once per refresh.

Refreshes fall on the boundaries of `--market-refresh-s` (multiples of it since 1970) and a
snapshot's `updated` is its boundary, so every hub of one market (SPEC 12) builds the same bytes
for the same refresh: the snapshot for boundary B is the market state just before the first tick
batch stamped at or after B is applied. Every hub applies the same batches in the same order (the
Redis tick log), so that state is the same on every hub, whatever its own clock or lag. If no such
batch arrives within GRACE_S of B (an idle feed), the hub's timer builds it from the state it has.
A hub that joins other hubs mid-refresh stamps its first snapshot with the time it built it (its
state is already past the boundary, so it cannot be the boundary's) until the next boundary.
The ETag is a hash of the body's bytes: equal bytes, equal ETag, on any hub and after a restart, so
a client behind a load balancer gets its 304s.

A snapshot is rebuilt only when the market state has moved on since the last one (an idle feed
keeps its bytes and ETag). Each snapshot holds the bytes of the whole envelope and of every
category, with a strong ETag per body; requests only look them up. `Cache-Control: max-age`
counts down to the next boundary.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.market.state import MarketState
from server.market.timefmt import iso

GRACE_S = 0.5  # after a boundary, how long a hub waits for the first tick batch stamped past it

@dataclass(frozen=True, slots=True)
class Body:
    data: bytes
    etag: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: int
    built_at: float
    whole: Body
    categories: dict[str, Body]


def _body(doc: dict[str, Any]) -> Body:
    data = orjson.dumps(doc)
    return Body(data, '"' + hashlib.blake2b(data, digest_size=16).hexdigest() + '"')


class MarketSnapshots:
    """Holds the current snapshot; `refresh_at` is the only writer and swaps it in one assignment."""

    def __init__(self, state: MarketState, refresh_s: float, clock: Callable[[], float],
                 shared: bool = False) -> None:
        self.state = state
        self.refresh_s = refresh_s
        self.clock = clock
        self.shared = shared  # other hubs serve this market too (the redis engine)
        self.builds = 0
        self.next_refresh = 0.0
        self.current = self._first()

    def start(self) -> None:
        """At hub start (after joining the tick log): the snapshot of the state this hub now has."""
        if self.state.version != self.current.version:
            self.current = self._first()

    def _first(self) -> Snapshot:
        """A hub's first snapshot. It is the current boundary's only if no tick stamped at or after that
        boundary is in the state yet; else (a hub joining other hubs mid-refresh, whose state is already
        past the boundary) it is stamped with the time now and stands until the next boundary, so it
        never carries a boundary's `updated` with other bytes than the other hubs serve for it."""
        now = self.clock()
        boundary = self.boundary(now)
        if not self.shared or self.state.updated < boundary:
            return self._build(boundary)
        return self._build(boundary, stamp=now)

    def boundary(self, t: float) -> float:
        """The refresh boundary at or before `t` (a multiple of refresh_s since 1970)."""
        return math.floor(t / self.refresh_s) * self.refresh_s

    def refresh(self) -> bool:
        """Now (the idle-feed timer): rebuild for the current boundary if the market moved."""
        return self.refresh_at(self.boundary(self.clock()))

    def refresh_at(self, boundary: float) -> bool:
        """Rebuild for `boundary` if the market moved since the last snapshot; schedules the next one."""
        changed = self.state.version != self.current.version
        if changed:
            self.current = self._build(boundary)
        else:
            self.next_refresh = boundary + self.refresh_s
        return changed

    def before_ticks(self, newest_ts: float) -> None:
        """A tick batch whose newest tick is stamped `newest_ts` is about to be applied: the first one
        at or past the next boundary closes that boundary's snapshot (the same state on every hub)."""
        if newest_ts < self.next_refresh:
            return
        now_boundary = self.boundary(self.clock())
        ts_boundary = self.boundary(newest_ts)
        if ts_boundary > now_boundary + self.refresh_s:  # a feed stamping far ahead of this clock
            return  # (a jsonl file's future ts): the timer builds it
        self.refresh_at(ts_boundary)

    async def run(self) -> None:
        """The idle-feed timer: at each boundary plus GRACE_S, build it if no tick batch did."""
        while True:
            await asyncio.sleep(max(0.0, self.next_refresh + GRACE_S - self.clock()))
            if self.clock() >= self.next_refresh + GRACE_S:
                self.refresh()

    def _build(self, boundary: float, stamp: float | None = None) -> Snapshot:
        version = self.state.version
        refresh = int(self.refresh_s) if float(self.refresh_s).is_integer() else self.refresh_s
        updated = boundary if stamp is None else stamp
        head = {"updated": iso(updated), "refreshSeconds": refresh, "demo": self.state.demo}
        categories = self.state.categories()
        snapshot = Snapshot(
            version, updated, _body({**head, "categories": categories}),
            {c["id"]: _body({**head, **c}) for c in categories},
        )
        self.next_refresh = boundary + self.refresh_s
        self.builds += 1
        return snapshot

    def max_age(self) -> int:
        return max(0, math.floor(self.next_refresh - self.clock()))


class SiteMarketApi:
    def __init__(self, snapshots: MarketSnapshots) -> None:
        self.snapshots = snapshots

    def register(self, router: Router) -> None:
        router.add("GET", "/api/market", self.market, Access.PUBLIC, name="site_market")
        router.add("GET", "/api/market/{id}", self.category, Access.PUBLIC, name="site_market_category")

    def market(self, req: Request) -> Response:
        return self._answer(self.snapshots.current.whole)

    def category(self, req: Request) -> Response:
        categories = self.snapshots.current.categories
        body = categories.get(req.path_params["id"])
        if body is None:
            raise ApiError("not_found", f"Unknown market category {req.path_params['id'][:100]!r}; the categories "
                                        f"are {', '.join(categories)}.")
        return self._answer(body)

    def _answer(self, body: Body) -> Response:
        # always the 200: the pipeline answers If-None-Match (per coding) and remembers the 200 for serve_hot. A 304
        # of the handler's own was never remembered, and the route's version moves every second (max-age), so a
        # client sending only If-None-Match went through the whole pipeline until some client asked for the 200
        headers = [("etag", body.etag), ("cache-control", f"public, max-age={self.snapshots.max_age()}")]
        return Response(200, body.data, "application/json", headers)
