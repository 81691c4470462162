"""Content coding (issue 13.3) on both runtimes: br and gzip for bodies of at least 1 KiB, negotiated with
Accept-Encoding (q-values, `*`, `identity;q=0`), `Vary: Accept-Encoding`, an ETag per coding, 304 per coding,
HEAD. A quiet jsonl feed keeps the data version still, so two requests see the same body."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import brotli
import httpx
import pytest

from tests.conftest import RUNTIMES, ServerProcess

ENGINE_NEUTRAL = "response compression happens in the HTTP layer"

PATHS = ("/api/v1/quotes", "/api/v1/inventory", "/openapi.json", "/api/market")


@pytest.fixture(scope="module", params=RUNTIMES)
def quiet(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp(f"coding-{request.param}")
    ticks = root / "ticks.jsonl"
    ticks.write_text("")  # no tick: the data version never moves during the module
    srv = ServerProcess(root / "data", request.param, "--feed", f"jsonl:{ticks}", "--public-rate", "100000")
    yield srv
    assert srv.stop() == 0, srv.output()


def _raw(srv: ServerProcess, path: str, accept: str | None, method: str = "GET",
         **headers: str) -> tuple[httpx.Response, bytes]:
    sent = {"X-SERVICE-Key": srv.demo_key, **{k.replace("_", "-"): v for k, v in headers.items()}}
    with httpx.Client(base_url=srv.base, timeout=10) as c:
        req = c.build_request(method, path, headers=sent)
        if accept is None:
            del req.headers["Accept-Encoding"]
        else:
            req.headers["Accept-Encoding"] = accept
        resp = c.send(req, stream=True)
        raw = b"".join(resp.iter_raw())
        resp.close()
        return resp, raw


def _decode(resp: httpx.Response, raw: bytes) -> bytes:
    coding = resp.headers.get("content-encoding")
    if coding == "br":
        return bytes(brotli.decompress(raw))
    if coding == "gzip":
        return gzip.decompress(raw)
    assert coding is None, coding
    return raw


@pytest.mark.parametrize("path", PATHS)
def test_each_coding_decodes_to_the_identity_body(quiet: ServerProcess, path: str) -> None:
    plain, identity = _raw(quiet, path, None)
    assert plain.status_code == 200 and len(identity) >= 1024
    assert plain.headers.get("content-encoding") is None and "Accept-Encoding" in plain.headers.get_list("vary")
    etag = plain.headers.get("etag")
    for accept, coding, suffix in (("br", "br", "-br"), ("gzip", "gzip", "-gz"), ("gzip, br", "br", "-br"),
                                   ("br;q=0.5, gzip", "gzip", "-gz"), ("x-gzip", "gzip", "-gz")):
        resp, raw = _raw(quiet, path, accept)
        assert resp.status_code == 200 and resp.headers["content-encoding"] == coding, accept
        assert "Accept-Encoding" in resp.headers.get_list("vary")
        assert len(raw) < len(identity) / 2  # JSON compresses well
        assert _decode(resp, raw) == identity, accept
        if etag is not None:
            assert resp.headers["etag"] == etag[:-1] + suffix + '"'


def test_q_values_and_identity_exclusion(quiet: ServerProcess) -> None:
    path = "/api/v1/quotes"
    cases = {
        "identity": None, "gzip;q=0, br;q=0": None, "*": "br", "*;q=0.1, identity;q=0.5": None,
        "identity;q=0": None, "identity;q=0, gzip": "gzip", "*;q=0, br": "br", "compress, deflate": None,
        "gzip;q=1.5": None, "gzip;q=abc, br;q=0.2": None, "gzip;q=abc, br;q=0.2, identity;q=0": "br",
        "BR": "br", "": None, "gzip;q=0.8, br;q=0.9, identity;q=0.1": "br",
    }
    for accept, coding in cases.items():
        resp, raw = _raw(quiet, path, accept)
        assert resp.status_code == 200, accept
        assert resp.headers.get("content-encoding") == coding, accept
        assert _decode(resp, raw).startswith(b"{"), accept


def test_if_none_match_per_coding(quiet: ServerProcess) -> None:
    for path in ("/api/v1/quotes", "/api/market", "/openapi.json"):
        first, _ = _raw(quiet, path, "br")
        if "etag" not in first.headers:
            continue
        br_tag = first.headers["etag"]
        assert br_tag.endswith('-br"')
        again, raw = _raw(quiet, path, "br", if_none_match=br_tag)
        assert again.status_code == 304 and raw == b"" and again.headers["etag"] == br_tag, path
        assert "Accept-Encoding" in again.headers.get_list("vary")
        # no representation metadata on a 304 (RFC 9110 15.4.5): the ETag names the coding
        assert "content-type" not in again.headers and "content-encoding" not in again.headers, path
        # the br tag does not validate the gzip coding: that is a different representation
        other, raw = _raw(quiet, path, "gzip", if_none_match=br_tag)
        assert other.status_code == 200 and other.headers["etag"] == br_tag.replace('-br"', '-gz"')
        assert gzip.decompress(raw).startswith(b"{")
        plain, _ = _raw(quiet, path, None, if_none_match=br_tag.replace('-br"', '"'))
        assert plain.status_code == 304


def test_head_has_the_headers_without_a_body(quiet: ServerProcess) -> None:
    resp, raw = _raw(quiet, "/api/v1/quotes", "gzip", method="HEAD")
    assert resp.status_code == 200 and raw == b""
    assert resp.headers["content-encoding"] == "gzip" and resp.headers["etag"].endswith('-gz"')


def test_small_bodies_and_errors_are_not_compressed(quiet: ServerProcess) -> None:
    for path in ("/api/v1/quotes/brent", "/healthz", "/api/v1/kline/nope", "/api/v1/quotes?kind=x"):
        resp, raw = _raw(quiet, path, "gzip, br")
        assert resp.headers.get("content-encoding") is None, path
        assert len(raw) < 1024 or resp.status_code != 200


def _compressions(srv: ServerProcess, coding: str) -> float:
    for line in httpx.get(srv.base + "/metrics", headers={"Accept-Encoding": "identity"}).text.splitlines():
        if line.startswith(f'market_http_compressed_bodies_total{{coding="{coding}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_compressed_once_per_body(quiet: ServerProcess) -> None:
    """The data version does not move here: twenty requests for a compressed body compress it at most once."""
    _raw(quiet, "/api/v1/spreads", "gzip")
    before = _compressions(quiet, "gzip")
    bodies = {_raw(quiet, "/api/v1/spreads", "gzip")[1] for _ in range(20)}
    assert len(bodies) == 1
    assert _compressions(quiet, "gzip") == before
    _raw(quiet, "/api/v1/inventory", "br")
    assert _compressions(quiet, "br") >= 1
