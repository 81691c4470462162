"""`POST /api/v1/ingest`: a dedicated data source publishes ticks of its account's own instruments (SPEC 20,
docs/ingest.md), JSON lines as the JSONL feed takes them (server/feeds/jsonl.py), at most 1 MiB a request.

Only an ingest key is taken (the router's scope; a read key is 403), and only its account's instruments: any other id
is an unknown instrument, as if it did not exist. Each bad line is named by its number (from 1) and the good ones are
kept; the answer says how many were accepted. The ticks take the feed's path (TickPath.ingest: the tick bus, so they
are numbered, archived with a live feed's history, streamed and candled, and with the Redis engine applied by every
hub). Each account may publish `rate` ticks a second (a bucket that may go into debt for one large batch, so any
request up to 1 MiB can pass; while in debt: 429 with Retry-After, nothing of that request kept).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

from server.api.core.pipeline import INGEST_MAX_BODY, INGEST_PATH
from server.api.core.query import known_query
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.core.usage import UsageMeter
from server.feeds.jsonl import DETAIL_KEYS, JsonlParser
from server.market.catalogue import Catalogue
from server.market.tick import MAX_DETAIL, MAX_PRICE, MAX_VOLUME, Tick

MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
MAX_REJECTED = 1000  # rejections named in one answer; the count is always complete (`rejectedCount`)
LINE_HINT = 'a JSON object {"id", "price" > 0, "ts"?, "volume"? >= 0} (docs/ingest.md)'


class IngestBuckets:
    """Ticks a second per account: `rate` tokens a second, at most one second's worth kept; a batch is taken whole
    while the bucket is not in debt (it may go below zero), then the account waits until it is out of debt."""

    def __init__(self, rate: int, clock: Callable[[], float]) -> None:
        self.rate, self.clock = rate, clock
        self._level: dict[str, tuple[float, float]] = {}  # account -> (tokens, at)

    def take(self, account: str, n: int) -> float:
        """0 if the `n` ticks may go now (taken), else the seconds to wait."""
        now = self.clock()
        tokens, at = self._level.get(account, (float(self.rate), now))
        tokens = min(float(self.rate), tokens + (now - at) * self.rate)
        if tokens <= 0:
            self._level[account] = (tokens, now)
            return -tokens / self.rate + 1 / self.rate
        self._level[account] = (tokens - n, now)
        return 0.0


class IngestApi:
    def __init__(self, catalogue: Catalogue, publish: Callable[[list[Tick]], bool], not_before: Callable[[], float],
                 buckets: IngestBuckets, clock: Callable[[], float], meter: UsageMeter | None = None) -> None:
        """`publish`: TickPath.ingest; `not_before`: the oldest tick time the state keeps (older lines are bad, as the
        feed's); `meter`: each key's accepted ticks are counted as its messages (SPEC 17 usage, `wsMessages`)."""
        self.catalogue, self.publish, self.not_before = catalogue, publish, not_before
        self.buckets, self.clock, self.meter = buckets, clock, meter
        self.parser = JsonlParser(catalogue)

    def register(self, router: Router) -> None:
        router.add("POST", INGEST_PATH, self.ingest, Access.KEYED, name="ingest", scope="ingest")

    def ingest(self, req: Request) -> Response:
        known_query(req, frozenset())
        ctype = (req.headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype not in MEDIA_TYPES:
            raise ApiError("unsupported_media_type", "Send the ticks as application/x-ndjson: one JSON object a line.")
        if len(req.body) > INGEST_MAX_BODY:
            raise ApiError("payload_too_large", f"An ingest request carries at most {INGEST_MAX_BODY} bytes (1 MiB); "
                                                "send the rest in another request.")
        if req.auth is not None and req.auth.plan != "enterprise":  # an account moved off the plan keeps its keys
            raise ApiError("plan_required", "Publishing to a dedicated data source needs the enterprise plan; this "
                           f"key is on the {req.auth.plan} plan. Request an upgrade in the service console at "
                           "/console.",
                           extra={"requiredPlan": "enterprise", "currentPlan": req.auth.plan, "consoleUrl": "/console"})
        owner, key_id = (req.auth.owner, req.auth.id) if req.auth is not None else (None, None)
        return Response(200, orjson.dumps(self.publish_lines(owner, req.body, key_id)), "application/json",
                        [("cache-control", "no-store")])

    def frame(self, owner: str | None, key_id: str | None, data: bytes) -> bytes:
        """A /ws/ingest text frame's batch (SPEC 20) -> its answer: the route's `{accepted, rejected, rejectedCount}`,
        or `{"error": problem}` (429 with `retryAfter`, 503), the batch then kept nowhere."""
        try:
            return orjson.dumps(self.publish_lines(owner, data, key_id))
        except ApiError as exc:
            return orjson.dumps({"error": exc.problem()})

    def publish_lines(self, owner: str | None, body: bytes, key_id: str | None = None) -> dict[str, Any]:
        """Parse, check and publish one batch of lines: `{accepted, rejected: [{line, error}]}`; ApiError for a
        refusal of the whole batch (429: the account's ticks a second; 503: this hub cannot publish now). The accepted
        ticks count as messages of `key_id` in its usage (`wsMessages`, docs/ingest.md)."""
        ticks, rejected, rejected_count = self._parse(owner, body)
        if ticks:
            wait = self.buckets.take(owner or "", len(ticks))
            if wait > 0:
                after = max(1, math.ceil(wait))
                raise ApiError("rate_limited", f"This account publishes at most {self.buckets.rate} ticks a second; "
                               f"retry in {after} s (nothing of this request was kept).",
                               headers=[("retry-after", str(after))], extra={"retryAfter": after})
            if not self.publish(ticks):
                raise ApiError("not_ready", "This hub does not publish ticks now (another hub holds the feed); "
                               "retry, the next attempt may reach the hub that does.", headers=[("retry-after", "1")])
            if self.meter is not None and key_id is not None:
                self.meter.ws_delivered(key_id, len(ticks))
        return {"accepted": len(ticks), "rejected": rejected, "rejectedCount": rejected_count}

    def _parse(self, owner: str | None, body: bytes) -> tuple[list[Tick], list[dict[str, Any]], int]:
        """The account's ticks, the first MAX_REJECTED rejections named, and the count of all rejections: past the
        named ones a bad line is only counted (a 1 MiB body of 500,000 bad lines took 4.6 s of the loop)."""
        ticks: list[Tick] = []
        rejected: list[dict[str, Any]] = []
        count = 0
        now, not_before, parser = self.clock(), self.not_before(), self.parser
        owners = self.catalogue.owners
        for number, line in enumerate(body.split(b"\n"), 1):
            if not line.strip():
                continue
            bad = parser.bad_lines
            tick = parser.parse(line, now, not_before)
            if tick is not None and owner is not None and owners[tick.row] == owner:
                ticks.append(tick)
                continue
            count += 1
            if count > MAX_REJECTED:
                continue
            if tick is not None or parser.bad_lines == bad:  # well-formed, not this account's (or no such id)
                rejected.append({"line": number, "error": "unknown instrument id: this account declares its "
                                                          "instruments at /api/console/instruments"})
            else:
                rejected.append({"line": number, "error": _why(line, now, not_before)})
        return ticks, rejected, count


def _why(line: bytes, now: float, not_before: float) -> str:
    """What is wrong with a bad line, in a few words."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "not valid JSON: " + LINE_HINT
    if not isinstance(obj, dict):
        return "not a JSON object: " + LINE_HINT
    if not isinstance(obj.get("id"), str) and "symbol" not in obj:
        return "id must be a string: one of this account's instrument ids"
    price = obj.get("price")
    if isinstance(price, bool) or not isinstance(price, int | float) or not 0 < price <= MAX_PRICE:
        return f"price must be a number greater than 0, at most {MAX_PRICE:,.0f}"
    volume = obj.get("volume", 0)
    if isinstance(volume, bool) or not isinstance(volume, int | float) or not 0 <= volume <= MAX_VOLUME:
        return f"volume must be a number from 0 to {MAX_VOLUME:,.0f}"
    if "ts" in obj and obj["ts"] is not None:
        return ("ts must be epoch seconds or ISO 8601 (YYYY-MM-DD[Thh:mm[:ss[.f]][Z|+hh:mm]]), not before the oldest "
                "candle kept nor more than a few seconds ahead of the server's clock")
    if any(obj.get(k) is not None for k in DETAIL_KEYS):
        return f"board fields ({', '.join(DETAIL_KEYS)}) must be numbers from 0 to {MAX_DETAIL:,.0f}"
    return "not a tick line: " + LINE_HINT
