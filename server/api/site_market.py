"""`GET /api/market` and `/api/market/{id}`: the public market snapshot, serialised once per refresh.

A snapshot is rebuilt every `--market-refresh-s` by the hub's site task, and only
when the market state has moved on since the last one (so an idle feed keeps its
ETag). Each snapshot holds the bytes of the whole envelope and of every category,
with a strong ETag per body; requests only look them up. `Cache-Control: max-age`
counts down to the next scheduled refresh.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from server.api.errors import ApiError
from server.api.router import Access, Router
from server.api.types import Request, Response
from server.market.state import MarketState
from server.market.timefmt import iso


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


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 13.1.2: weak comparison, `*` matches any current representation."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


class MarketSnapshots:
    """Holds the current snapshot; `refresh` is the only writer and swaps it in one assignment."""

    def __init__(self, state: MarketState, refresh_s: float, clock: Callable[[], float]) -> None:
        self.state = state
        self.refresh_s = refresh_s
        self.clock = clock
        self.builds = 0
        self.next_refresh = 0.0
        self.current = self._build()

    def refresh(self) -> bool:
        """Rebuild if the market moved since the last snapshot; always schedules the next refresh."""
        changed = self.state.version != self.current.version
        if changed:
            self.current = self._build()
        else:
            self.next_refresh = self.clock() + self.refresh_s
        return changed

    def _build(self) -> Snapshot:
        now = self.clock()
        version = self.state.version
        refresh = int(self.refresh_s) if float(self.refresh_s).is_integer() else self.refresh_s
        head = {"updated": iso(now), "refreshSeconds": refresh, "demo": self.state.demo}
        categories = self.state.categories()
        snapshot = Snapshot(
            version, now, _body({**head, "categories": categories}),
            {c["id"]: _body({**head, **c}) for c in categories},
        )
        self.next_refresh = now + self.refresh_s
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
        return self._answer(req, self.snapshots.current.whole)

    def category(self, req: Request) -> Response:
        body = self.snapshots.current.categories.get(req.path_params["id"])
        if body is None:
            raise ApiError("not_found", "Unknown market category.")
        return self._answer(req, body)

    def _answer(self, req: Request, body: Body) -> Response:
        headers = [("etag", body.etag), ("cache-control", f"public, max-age={self.snapshots.max_age()}")]
        if etag_matches(req.headers.get("if-none-match"), body.etag):
            return Response(304, b"", None, headers)
        return Response(200, body.data, "application/json", headers)
