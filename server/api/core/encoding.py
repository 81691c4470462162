"""Content coding of response bodies: gzip and brotli, negotiated with Accept-Encoding, compressed once per body.

Bodies of at least MIN_SIZE bytes with a textual content type are offered as `br`, `gzip` or as they are
(`identity`), whichever the client's Accept-Encoding ranks highest (RFC 9110 12.5.3: q-values, `*`, `identity`
acceptable unless excluded by `identity;q=0` or `*;q=0`; on equal q the server prefers br, then gzip, then
identity). Such a response carries `Vary: Accept-Encoding` whatever coding it has. A compressed variant's ETag is
the identity ETag with `-br`/`-gz` inside the quotes, so a cache can never confuse two codings of one resource.

Compressed bytes are kept per body object (the pipeline's bodies are shared bytes, built once per data version),
so each body is compressed at most once per coding while it is current. brotli (Google's reference encoder,
`brotli` on PyPI) at quality 5: about the size of gzip -9 at the cost of gzip -6 on our JSON; every browser sends
`br` (zstd is missing in Safari).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import brotli

MIN_SIZE = 1024
GZIP_LEVEL = 6
BROTLI_QUALITY = 5
IDENTITY = "identity"
ETAG_SUFFIX = {"br": "-br", "gzip": "-gz"}
# what the server offers, in its order of preference on equal q
OFFERED = ("br", "gzip", IDENTITY)
COMPRESSIBLE = ("application/json", "application/problem+json", "text/", "application/javascript",
                "image/svg+xml", "application/xml")
MAX_CHOICES = 1024  # distinct Accept-Encoding values remembered
MAX_BODIES = 512  # compressed bodies kept (each entry is one body object and coding)


def compressible(content_type: str | None) -> bool:
    return content_type is not None and content_type.startswith(COMPRESSIBLE)


def parse(accept: str) -> dict[str, float]:
    """Accept-Encoding as {coding: q}; a malformed q counts as 0 (not acceptable)."""
    out: dict[str, float] = {}
    for item in accept.split(","):
        coding, _, params = item.partition(";")
        coding = coding.strip().lower()
        if not coding:
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
                if not 0.0 <= q <= 1.0:
                    q = 0.0
        if coding == "x-gzip":
            coding = "gzip"
        out[coding] = max(q, out.get(coding, 0.0)) if coding in out else q
    return out


def choose(accept: str | None) -> str | None:
    """The coding to send for this Accept-Encoding, or None when no coding the server offers is acceptable."""
    if accept is None:
        return IDENTITY
    ranks = parse(accept)
    star = ranks.get("*")
    best, best_q = None, 0.0
    for coding in OFFERED:
        q = ranks.get(coding)
        if q is None:  # unlisted: as `*` says, else only identity is acceptable
            q = star if star is not None else (1.0 if coding == IDENTITY else 0.0)
        if q > best_q:
            best, best_q = coding, q
    return best


class Encoder:
    """Negotiation and compression with memory: one parse per distinct header, one compression per body."""

    def __init__(self, on_compress: Callable[[str, int], None] | None = None) -> None:
        self._choices: dict[str, str | None] = {}
        self._bodies: dict[tuple[bytes, str], bytes] = {}
        self.on_compress = on_compress  # (coding, bytes in): the metrics count each compression

    def choose(self, accept: str | None) -> str | None:
        if accept is None:
            return IDENTITY
        choice = self._choices.get(accept, "")
        if choice == "":
            choice = choose(accept)
            if len(self._choices) >= MAX_CHOICES:
                self._choices.clear()
            self._choices[accept] = choice
        return choice

    def encode(self, body: bytes, coding: str) -> bytes:
        """`body` in `coding` (br or gzip), compressed once per body object while it stays in memory."""
        key = (body, coding)
        out = self._bodies.get(key)
        if out is None:
            out = compress(body, coding)
            if self.on_compress is not None:
                self.on_compress(coding, len(body))
            if len(self._bodies) >= MAX_BODIES:
                self._bodies.pop(next(iter(self._bodies)), None)  # oldest first (pop: another thread may race)
            self._bodies[key] = out
        return out


def compress(body: bytes, coding: str) -> bytes:
    if coding == "br":
        return bytes(brotli.compress(body, quality=BROTLI_QUALITY))
    z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    return z.compress(body) + z.flush()


def encoded_etag(etag: str, coding: str) -> str:
    """`"abc"` -> `"abc-gz"` (a weak `W/"abc"` keeps its prefix)."""
    if coding == IDENTITY or not etag.endswith('"'):
        return etag
    return etag[:-1] + ETAG_SUFFIX[coding] + '"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """If-None-Match (a list, `*`, weak or strong tags) against one ETag, by weak comparison (RFC 9110 13.1.2)."""
    if not if_none_match:
        return False
    strong = etag.removeprefix("W/")
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == strong:
            return True
    return False
