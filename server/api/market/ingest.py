"""`POST /api/v1/ingest`: a dedicated data source publishes ticks of its account's own instruments (SPEC 20,
docs/ingest.md), JSON lines as the JSONL feed takes them (server/feeds/jsonl.py), at most 1 MiB a request.

Only an ingest key is taken (the router's scope; a read key is 403), and only its account's instruments: any other id
is an unknown instrument, as if it did not exist. Each bad line is named by its number (from 1) and the good ones are
kept; the answer says how many were accepted. The ticks take the feed's path (TickPath.ingest: the tick bus, so they
are numbered, archived with a live feed's history, streamed and candled, and with the Redis engine taken by every hub
and applied by every hub, through the feed lease holder). Each account may publish its ticks a second (a bucket that
may go into debt for one large batch, so any request up to 1 MiB can pass; while in debt: 429 with Retry-After,
nothing of that request kept; server/core/tick_buckets.py, shared by every hub on Redis): the rate an operator set for
it (`users limits EMAIL --ticks-per-second N`), carried on its keys and refreshed with them, else the hub's
--ingest-rate (the enterprise plan's default).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from server.api.core.pipeline import INGEST_MAX_BODY, INGEST_PATH
from server.api.core.query import known_query
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.core.keys import ApiKey
from server.core.usage import UsageMeter
from server.engine import InboxFull, InboxUnavailable, Once, Put, Replayed
from server.feeds.jsonl import DETAIL_KEYS, JsonlParser
from server.market.catalogue import Catalogue
from server.market.tick import MAX_DETAIL, MAX_PRICE, MAX_VOLUME, Tick

MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
MAX_REJECTED = 1000  # rejections named in one answer; the count is always complete (`rejectedCount`)
LINE_HINT = 'a JSON object {"id", "price" > 0, "ts"?, "volume"? >= 0} (docs/ingest.md)'
Late = Callable[[int, float, float | None], str | None]  # (row, ts, the row's previous ts in the batch) -> why not


# TickPath.ingest: (account, ticks, ticks a second, Idempotency-Key) -> 0.0 kept, else seconds to wait, or Replayed
# (the key kept already); raises InboxUnavailable
Publish = Callable[[str, list[Tick], int, Once | None], Put | Awaitable[Put]]
IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")  # visible ASCII, as the IETF draft's examples (UUIDs and such)


class IngestApi:
    def __init__(self, catalogue: Catalogue, publish: Publish, not_before: Callable[[], float], rate: int,
                 clock: Callable[[], float], meter: UsageMeter | None = None, late: Late | None = None) -> None:
        """`publish`: TickPath.ingest (the account's bucket, then the engine's inbox); `rate`: the ticks a second of
        an account without its own (`--ingest-rate`); `not_before`: the oldest tick time the state keeps (older lines
        are bad, as the feed's); `meter`: each key's accepted ticks are counted as its messages (SPEC 17 usage,
        `wsMessages`); `late(row, ts, previous)`: why a tick would not count toward its own buckets
        (market/late_ticks.py)."""
        self.catalogue, self.publish, self.not_before = catalogue, publish, not_before
        self.rate, self.clock, self.meter, self.late = rate, clock, meter, late
        self.parser = JsonlParser(catalogue)

    def register(self, router: Router) -> None:
        router.add("POST", INGEST_PATH, self.ingest, Access.KEYED, name="ingest", scope="ingest")

    async def ingest(self, req: Request) -> Response:
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
        key = req.headers.get("idempotency-key")
        if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
            raise ApiError("invalid_parameter", "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID, "
                           "say), one for each batch, sent again unchanged with the same body when the answer was "
                           "lost.", errors=[{"field": "Idempotency-Key", "message": "1 to 255 visible ASCII "
                                             "characters"}])
        answer, replayed = await self.publish_lines(owner, req.body, key_id, self.rate_of(req.auth), key)
        headers = [("cache-control", "no-store")]
        if replayed:  # the batch of this key, answered as it was the first time
            headers.append(("idempotent-replayed", "true"))
        return Response(200, answer, "application/json", headers)

    def rate_of(self, key: ApiKey | None) -> int:
        """The ticks a second of the key's account: its own (carried on the key, refreshed with it), else the hub's."""
        return key.ticks_per_second if key is not None and key.ticks_per_second else self.rate

    def framer(self, key_of: Callable[[str], ApiKey | None]) -> Callable[[str | None, str | None, bytes],
                                                                          Awaitable[bytes]]:
        """/ws/ingest's batches -> answers (`frame`), the account's rate read from its key as the cache holds it now
        (`key_of`: the key cache's by id)."""
        return lambda owner, key_id, data: self.frame(owner, key_id, data,
                                                      self.rate_of(key_of(key_id) if key_id is not None else None))

    async def frame(self, owner: str | None, key_id: str | None, data: bytes, rate: int | None = None) -> bytes:
        """A /ws/ingest text frame's batch (SPEC 20) -> its answer: the route's `{accepted, rejected, rejectedCount}`,
        or `{"error": problem}` (429 with `retryAfter`, 503), the batch then kept nowhere."""
        try:
            return (await self.publish_lines(owner, data, key_id, rate))[0]
        except ApiError as exc:
            return orjson.dumps({"error": exc.problem()})

    async def publish_lines(self, owner: str | None, body: bytes, key_id: str | None = None,
                            rate: int | None = None, key: str | None = None) -> tuple[bytes, bool]:
        """Parse, check and publish one batch of lines: `{accepted, rejected: [{line, error}]}` (as JSON, and False)
        once the batch is kept
        (memory: applied; Redis: held by Redis, on its way to the tick log); ApiError for a refusal of the whole
        batch (429: the account's ticks a second, `rate`, default the hub's; 503: Redis unreachable), nothing of it
        kept. The accepted ticks count as messages of `key_id` in its usage (`wsMessages`, docs/ingest.md).
        `key`: the batch's Idempotency-Key: the answer is kept with the batch, and a batch of a key kept already
        is answered with the kept answer (and True), nothing kept again (422 when its body is another one)."""
        ticks, rejected, rejected_count = self._parse(owner, body)
        answer = orjson.dumps({"accepted": len(ticks), "rejected": rejected, "rejectedCount": rejected_count})
        if not ticks:  # nothing to keep (and so nothing remembered of a key)
            return answer, False
        once = None if key is None else Once(key, hashlib.sha256(body).hexdigest(), answer)
        kept = await self._put(owner or "", ticks, rate or self.rate, once)
        if isinstance(kept, Replayed):
            assert once is not None
            if kept.fingerprint != once.fingerprint:
                raise ApiError("idempotency_key_reused", "This Idempotency-Key was sent with another body in the "
                               "last 24 hours: a key names one batch; make a new key for a new batch (nothing of "
                               "this request was kept).",
                               errors=[{"field": "Idempotency-Key", "message": "sent before with another body"}])
            return kept.answer, True
        if self.meter is not None and key_id is not None:
            self.meter.ws_delivered(key_id, len(ticks))
        return answer, False

    async def _put(self, owner: str, ticks: list[Tick], rate: int, once: Once | None) -> Replayed | None:
        """The batch kept (None), or the batch of its key kept before (Replayed); else the refusal's ApiError."""
        try:
            kept = self.publish(owner, ticks, rate, once)
            if not isinstance(kept, float | Replayed):
                kept = await kept
        except InboxUnavailable as exc:
            why = ("its shared inbox holds the most ingest batches it may keep waiting for the feed (its lease is "
                   "changing hands, or its holder is behind)" if isinstance(exc, InboxFull) else
                   "the shared store does not answer")
            raise ApiError("not_ready", f"This hub cannot keep ticks now ({why}); nothing of this batch was kept: "
                           "retry.", headers=[("retry-after", "1")]) from None
        if isinstance(kept, Replayed):
            return kept
        if kept > 0:
            after = max(1, math.ceil(kept))
            raise ApiError("rate_limited", f"This account publishes at most {rate} ticks a second; "
                           f"retry in {after} s (nothing of this request was kept).",
                           headers=[("retry-after", str(after))], extra={"retryAfter": after})
        return None

    def _parse(self, owner: str | None, body: bytes) -> tuple[list[Tick], list[dict[str, Any]], int]:
        """The account's ticks, the first MAX_REJECTED rejections named, and the count of all rejections: past the
        named ones a bad line is only counted (a 1 MiB body of 500,000 bad lines took 4.6 s of the loop)."""
        ticks: list[Tick] = []
        rejected: list[dict[str, Any]] = []
        count = 0
        now, not_before, parser = self.clock(), self.not_before(), self.parser
        owners, decimals, late = self.catalogue.owners, self.catalogue.decimals, self.late
        previous: dict[int, float] = {}  # row -> the time of its last tick taken in this batch
        for number, line in enumerate(body.split(b"\n"), 1):
            if not line.strip():
                continue
            bad, why = parser.bad_lines, None
            tick = parser.parse(line, now, not_before)
            if tick is not None and owner is not None and owners[tick.row] == owner:
                why = _finer(tick.price, decimals[tick.row])
                if why is None and late is not None:
                    why = late(tick.row, tick.ts, previous.get(tick.row))
                if why is None:
                    previous[tick.row] = tick.ts
                    ticks.append(tick)
                    continue
            count += 1
            if count > MAX_REJECTED:
                continue
            if why is None and (tick is not None or parser.bad_lines == bad):  # not this account's (or no such id)
                why = "unknown instrument id: this account declares its instruments at /api/console/instruments"
            rejected.append({"line": number, "error": why or _why(line, now, not_before)})
        return ticks, rejected, count


def _finer(price: float, decimals: int) -> str | None:
    """Why a price is finer than its instrument shows (it would be quoted rounded: 0.001 as 0.00), else None. A JSON
    number written with at most `decimals` decimals reads back from round() as the same float."""
    if round(price, decimals) == price:
        return None
    return (f"price {price!r} has more decimals than this instrument's {decimals}: send it rounded, or declare the "
            "instrument again with more decimals")


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
