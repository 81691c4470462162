"""The last step of every answer, remembered or not: the request id, CORS, the content coding and If-None-Match.

One step for both paths (starlette's `CORSMiddleware` and `GZipMiddleware`, folded into one pass):
- the full pipeline's `Response` gets them in `finish` (its body coded here, per request, through the `Encoder`'s
  cache of coded bodies);
- a remembered answer (`Hot`) gets them in `hot`: its coded bodies and every header that does not change per
  request are made once per coding (`variant`), so what is left per request is choosing the variant, the
  request id, this request's CORS fields and the latency sample.

The same rules either way: a client's X-Request-ID is kept when it is at most 128 printable characters, else one
is made; an allowed Origin is echoed (or `*` for wildcard CORS); a 200 of at least MIN_SIZE textual bytes is coded
br or gzip when the client accepts it, with `Vary: Accept-Encoding` and an ETag per coding; a matching
If-None-Match makes it a 304 without body, type or coding.
"""

from __future__ import annotations

import itertools
import os
from bisect import bisect_left
from time import perf_counter

from server.api.core.answers import NOT_IN_304, HeaderList, Hot, HotFields, HotReply, Variant
from server.api.core.encoding import IDENTITY, MIN_SIZE, Encoder, compressible, encoded_etag, etag_matches
from server.api.core.types import Headers, Request, Response

# what a cross-origin script may read: the rate-limit fields, and what resuming a flat-file download needs
EXPOSED_HEADERS = (
    "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, "
    "Retry-After, X-Request-ID, ETag, Content-Range, Content-Length, Accept-Ranges, Idempotent-Replayed"
)
# Range and If-Range: a browser resumes a broken flat-file download cross-origin (issue 45)
ALLOWED_REQUEST_HEADERS = ("X-SERVICE-Key, Authorization, Content-Type, X-Request-ID, If-None-Match, Range, If-Range, "
                           "Idempotency-Key")
VARY_ENCODING = ("vary", "Accept-Encoding")
MAX_REQUEST_ID = 128
ID_BLOCK = 1000  # request ids made at a time (Finisher._new_ids)
_DIGITS_DOWN = tuple(f"{n:03d}" for n in range(ID_BLOCK - 1, -1, -1))  # "999" .. "000": popped from the end


class Finisher:
    def __init__(self, cors_origins: tuple[str, ...] | list[str], encoder: Encoder,
                 latency_bounds: tuple[float, ...] | list[float]) -> None:
        """`latency_bounds`: market_http_request_seconds' buckets (a remembered answer's sample goes in here)."""
        self.encoder = encoder
        self.wildcard = "*" in cors_origins
        self.origins = frozenset(cors_origins)
        self.wildcard_fields = (("access-control-allow-origin", "*"),
                                ("access-control-expose-headers", EXPOSED_HEADERS))
        self.bounds = latency_bounds
        # request ids "<prefix>-<n>", n = 1, 2, ...: made ID_BLOCK at a time (a block's ids share their head, so
        # each is one concatenation) and taken with one list.pop per request, ~1,400 instructions less than an
        # f-string per request. Blocks are numbered atomically: two threads refilling at once (Robyn) take
        # different blocks, so an id is never given twice (a block may be left unfinished).
        self._id_pool: list[str] = []
        self._id_blocks = itertools.count(0)
        self._id_prefix = os.urandom(4).hex()

    # --- the request id ------------------------------------------------------------------------------------------
    def request_id(self, headers: Headers) -> str:
        """The client's X-Request-ID if it is fit to echo, else a new one."""
        rid = headers.get("x-request-id")
        if rid is None or len(rid) > MAX_REQUEST_ID or not rid.isprintable() or not rid:
            try:
                return self._id_pool.pop()
            except IndexError:
                return self._new_ids()
        return rid  # type: ignore[no-any-return]

    def _new_ids(self) -> str:
        """The next block of request ids (the pool ran out): keep it and return its first."""
        block = next(self._id_blocks)
        if block:
            head = f"{self._id_prefix}-{block}"  # ids block * ID_BLOCK + 0..999
            pool = [head + digits for digits in _DIGITS_DOWN]
        else:
            pool = [f"{self._id_prefix}-{n}" for n in range(ID_BLOCK - 1, 0, -1)]  # 1..999
        first = pool.pop()
        self._id_pool = pool
        return first

    # --- CORS ----------------------------------------------------------------------------------------------------
    def cors_fields(self, origin: str | None) -> HeaderList:
        """This request's CORS fields (wildcard CORS: the fixed pair)."""
        if self.wildcard:
            return list(self.wildcard_fields)
        out = [("access-control-allow-origin", origin)] if origin in self.origins else []  # type: ignore[list-item]
        out += [("vary", "Origin"), ("access-control-expose-headers", EXPOSED_HEADERS)]
        return out

    # --- a remembered answer -------------------------------------------------------------------------------------
    def hot(self, hot: Hot, method: str, headers: Headers, fields: HotFields, started: float) -> HotReply:
        """serve_hot's reply: the variant for this request's coding (its 304 on a matching If-None-Match), the
        rate fields plus this request's CORS fields (the wildcard pair is in the variant's head), the request id."""
        rid = headers.get("x-request-id")  # request_id(headers), inlined: a call is ~2% of a remembered answer
        if rid is None or len(rid) > MAX_REQUEST_ID or not rid.isprintable() or not rid:
            try:
                rid = self._id_pool.pop()
            except IndexError:
                rid = self._new_ids()
        accept = headers.get("accept-encoding")
        if accept is None or not hot.compressible:
            variant = hot.identity or self.variant(hot, IDENTITY)
        else:
            coding = self.encoder.choose(accept) or IDENTITY
            variant = hot.variants.get(coding) or self.variant(hot, coding)
        inm = headers.get("if-none-match")
        if inm is not None and etag_matches(inm, variant.etag):
            status, variant, body = 304, variant.unchanged, b""
            hot.count_304[0] += 1
        else:
            status, body = 200, (variant.body if method != "HEAD" else b"")
            hot.count_ok[0] += 1
        if not self.wildcard:
            fields += tuple(self.cors_fields(headers.get("origin")))
        elapsed = perf_counter() - started
        latency, bounds = hot.latency, self.bounds  # market_http_request_seconds, as Histogram.observe does it
        latency[0 if elapsed <= bounds[0] else bisect_left(bounds, elapsed)] += 1  # the first bucket holds most
        latency[-1] += elapsed
        return status, variant, fields, rid, body

    def variant(self, hot: Hot, coding: str) -> Variant:
        """A remembered answer's body and fixed header fields in one coding, made once and kept on it."""
        head: HeaderList = [] if hot.content_type is None else [("content-type", hot.content_type)]
        head += hot.extra
        if coding == IDENTITY:
            body, etag = hot.body, hot.etag
        else:
            body, etag = self.encoder.encode(hot.body, coding), encoded_etag(hot.etag, coding)
            head.append(("content-encoding", coding))
        head.append(("etag", etag))
        if hot.compressible:
            head.append(VARY_ENCODING)
        if self.wildcard:
            head += self.wildcard_fields
        variant = hot.variants[coding] = Variant(body, etag, head)
        if coding == IDENTITY:
            hot.identity = variant
        return variant

    # --- the full pipeline's answer ------------------------------------------------------------------------------
    def finish(self, req: Request, resp: Response, request_id: str) -> None:
        """The request id, CORS, the coding of a GET's 200 (and its If-None-Match), no body for HEAD."""
        resp.headers.append(("x-request-id", request_id))
        resp.headers += self.cors_fields(req.headers.get("origin"))
        if req.method == "GET" or req.method == "HEAD":
            self._encode(req, resp)
        if req.method == "HEAD":
            resp.body, resp.file = b"", None  # a file's Content-Length stays: the size a GET would send

    def _encode(self, req: Request, resp: Response) -> None:
        """Content coding of a 200 of at least MIN_SIZE textual bytes (Vary, per-coding ETag, If-None-Match)."""
        headers = resp.headers
        if resp.status == 304:
            if any(name == "etag" for name, _ in headers):
                headers.append(VARY_ENCODING)
            return
        if resp.status != 200:
            return
        coding = IDENTITY
        if (len(resp.body) >= MIN_SIZE and compressible(resp.content_type)
                and not any(name == "content-encoding" for name, _ in headers)):
            headers.append(VARY_ENCODING)
            coding = self.encoder.choose(req.headers.get("accept-encoding")) or IDENTITY
            if coding != IDENTITY:
                resp.body = self.encoder.encode(resp.body, coding)
                headers.append(("content-encoding", coding))
        for i, (name, value) in enumerate(headers):  # small bodies too: If-None-Match as `hot` answers it
            if name == "etag":
                etag = headers[i] = ("etag", encoded_etag(value, coding))
                if etag_matches(req.headers.get("if-none-match"), etag[1]):
                    resp.status, resp.body, resp.content_type, resp.file = 304, b"", None, None
                    resp.headers = [field for field in headers if field[0] not in NOT_IN_304]
                break


def preflight(methods: dict[str, object]) -> Response:
    """The answer to a CORS preflight (OPTIONS) of a known path."""
    allow = ", ".join(sorted({*methods, "OPTIONS"}))
    return Response(204, b"", None, [
        ("access-control-allow-methods", allow),
        ("access-control-allow-headers", ALLOWED_REQUEST_HEADERS),
        ("access-control-max-age", "600"),
    ])
