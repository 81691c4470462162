"""Admission: who is asking (an API key, or the client address) and whether their bucket lets them in.

One path for both engines: the limiter answers at once when it needs no I/O (the memory engine; Redis while it is
away) and `Pending.AWAIT` otherwise, and only then is `Limiter.check` awaited. A refusal is the 429 problem with the
rate headers; a missing or unknown key the 401, itself limited per client address (the `unauthorized` bucket), so
guessing keys costs the server one storage read per address per bucket token at most.

`guard`: the runtime's lock around this hub's own state when a second thread reads it (Robyn answers remembered
bodies on actix's thread: server/http/robyn_app.py); a no-op context for Granian, whose requests all run here.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NoReturn

from server.api.core.router import Access, Route
from server.api.core.types import Request
from server.config import Settings
from server.core.client_ip import client_address
from server.core.errors import ApiError
from server.core.keys import ApiKey
from server.core.limits import Decision, Gcra, Rate, shared_rate
from server.core.metrics import Counter
from server.core.usage import UsageMeter
from server.engine import Limiter, Pending
from server.store.accounts.key_cache import KeyCache

KEYED, OPEN, AWAIT = Access.KEYED, Access.OPEN, Pending.AWAIT
MAX_KNOWN = 10_000  # secrets whose bucket and rate are kept (as KeyCache keeps its secrets)


class Admission:
    def __init__(self, settings: Settings, keys: KeyCache, limiter: Limiter, buckets: Gcra,
                 clock: Callable[[], float], refused: Counter, guard: AbstractContextManager[object],
                 meter: UsageMeter, private: Callable[[ApiKey], bool] = lambda key: False) -> None:
        """`limiter`: the engine's buckets for keys, client addresses and route buckets (memory or shared);
        `buckets`: this hub's own (the 401 bucket and its storage-read guard, per-user buckets: they protect this
        hub); `refused`: market_rate_limited_total; `meter`: the console's usage per key (SPEC 17); `private`: whether
        a key's answers are its own (SPEC 20: an ingest key, or a key of an account with declared instruments): such a
        key is never answered from, nor adds to, the remembered answers every other key shares."""
        self.private = private
        self.settings = settings
        self.keys = keys
        self.limiter = limiter
        self.buckets = buckets
        self.clock = clock
        self.refused = refused
        self.guard = guard
        self.meter = meter
        self.public_rate = shared_rate(settings.public_rate, "public")
        # secret -> (bucket, rate, usage cell) of keys KeyCache.lookup found, emptied whenever the key cache changes
        # (a refresh, load or revocation); the cell is the key's count of remembered answers in the usage meter
        self.known: dict[str, tuple[str, Rate, list[int]]] = {}
        keys.on_change.append(self.known.clear)

    def know(self, secret: str) -> tuple[str, Rate, list[int]] | None:
        """A cached key's bucket, rate and usage cell, kept for the remembered-answer path's next request with this
        secret (until the key cache changes)."""
        key = self.keys.lookup(secret)
        if key is None or self.private(key):
            return None
        known = ("key:" + key.id, shared_rate(self.settings.rate_for(key.plan, key.rate), key.plan),
                 self.meter.cell(key.id))
        if len(self.known) >= MAX_KNOWN:
            self.known.clear()
        self.known[secret] = known
        return known

    async def admit(self, route: Route, req: Request) -> Decision | None:
        """Authenticate and rate-limit; the decision whose headers go on the response, or the 401/429 raised."""
        if route.access is OPEN:
            return None
        if route.access is KEYED:
            key = await self._authenticate(req)
            decision = await self._limit("key:" + key.id, self.settings.rate_for(key.plan, key.rate), key.plan)
            if decision.allowed and key.scope != route.scope:  # SPEC 20 (every request counts in the key's bucket)
                raise ApiError("forbidden", "An ingest key publishes to its account's instruments and reads nothing; "
                               "use a read key." if key.scope == "ingest" else
                               "This route takes an ingest key (scope ingest: POST /api/console/keys).",
                               headers=decision.headers())
        else:
            ip = self.client_ip(req)
            decision = await self._limit("ip:" + ip, self.settings.public_rate, "public")
            if decision.allowed and route.bucket is not None:
                extra = await self._limit(f"{route.bucket}:{ip}", self._bucket_rate(route.bucket), route.bucket)
                decision = extra if not extra.allowed else decision
        return self.enforce(decision)

    async def _limit(self, bucket: str, per_minute: int, policy: str) -> Decision:
        """The limiter's decision: at once if it needs no I/O, else awaited."""
        with self.guard:
            decision = self.limiter.decide(bucket, per_minute, self.clock(), policy)
        if decision is AWAIT:
            return await self.limiter.check(bucket, per_minute, policy)
        return decision

    async def _authenticate(self, req: Request) -> ApiKey:
        """The request's active key (cache, then storage once), or the 401/429 of `_unauthorized`."""
        secret = req.headers.get("x-service-key")
        key = self.keys.lookup(secret) if secret else None
        if key is None:
            if secret and self._may_read(req):
                key = await self.keys.load(secret)
            if key is None:
                self._unauthorized(req, secret)
        req.auth = key
        return key

    def _may_read(self, req: Request) -> bool:
        """Whether an unknown key may be looked up in storage: the address's 401 bucket still has room."""
        with self.guard:
            return self.buckets.would_allow(self._unauthorized_bucket(req), self.settings.public_rate, self.clock())

    def _unauthorized(self, req: Request, secret: str | None) -> NoReturn:
        """The 401, counted in the address's `unauthorized` bucket (over it: the 429)."""
        with self.guard:
            decision = self.buckets.check(self._unauthorized_bucket(req), self.settings.public_rate, self.clock(),
                                          "unauthorized")
        self.enforce(decision)
        detail = "Missing X-SERVICE-Key header." if not secret else "Unknown or revoked API key."
        raise ApiError("unauthorized", detail,
                       headers=[("www-authenticate", 'ApiKey header="X-SERVICE-Key"'), *decision.headers()])

    def _unauthorized_bucket(self, req: Request) -> str:
        return "unauthorized:" + self.client_ip(req)

    def enforce(self, decision: Decision) -> Decision:
        """Raise the 429 problem for a refusal; pass an allowed decision through."""
        if decision.allowed:
            return decision
        self.refused.inc((("bucket", decision.policy),))
        raise ApiError(
            "rate_limited",
            f"Rate limit of {decision.limit} requests per minute exceeded; retry in {decision.retry_after_s} s.",
            headers=decision.headers(),
            extra={"retryAfter": decision.retry_after_s},
        )

    def _bucket_rate(self, bucket: str) -> int:
        return {"login": self.settings.login_rate, "inquiry": self.settings.inquiry_rate}.get(bucket, 60)

    def check_bucket(self, bucket: str, subject: str, per_minute: int) -> Decision:
        """For handlers whose bucket key is known only after authentication (e.g. per user)."""
        return self.enforce(self.buckets.check(f"{bucket}:{subject}", per_minute, self.clock(), bucket))

    def client_ip(self, req: Request) -> str:
        """The peer address; X-Forwarded-For only when the peer is a trusted proxy."""
        trusted = self.settings.trusted_proxies
        if not trusted:
            return req.client_ip
        return client_address(req.client_ip, req.headers.get("x-forwarded-for"), trusted)
