"""Router, versioned cache and settings validation, without a server."""

from __future__ import annotations

import argparse

import pytest

from server.api.core.cache import VersionedCache
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.config import ConfigError, FeedSettings, add_serve_args, settings_from_args


def _ok(req: Request) -> Response:
    return Response(200)


def test_router_exact_templated_and_trailing_slashes() -> None:
    router = Router()
    collection = router.add("GET", "/api/v1/quotes", _ok, Access.KEYED)
    router.add("GET", "/api/v1/quotes/{id}", _ok, Access.KEYED)
    entry, params = router.match("/api/v1/quotes") or (None, None)
    assert entry is not None and params == {}
    entry, params = router.match("/api/v1/quotes/brent/") or (None, None)
    assert entry is not None and params == {"id": "brent"}
    assert "HEAD" in entry.methods
    # paths come percent-decoded from the adapters: no second decoding
    assert router.match("/api/v1/quotes/50%25") == (entry, {"id": "50%25"})
    assert router.match("/api/v1/quotes/a/b") is None
    found = router.match("/api/v1/quotes/")  # a trailing slash never matters (Robyn drops one itself)
    assert found is not None and found[0].methods["GET"] is collection and found[1] == {}
    assert router.match("/nope") is None


def test_versioned_cache_builds_once_per_version() -> None:
    cache = VersionedCache()
    calls: list[int] = []

    def build() -> bytes:
        calls.append(1)
        return b"x%d" % len(calls)

    first = cache.get("k", 1, build)
    assert cache.get("k", 1, build) is first
    assert len(calls) == 1
    assert cache.get("k", 2, build) == b"x2"
    assert len(calls) == 2


def _settings(*argv: str):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    return settings_from_args(parser.parse_args(list(argv)))


def test_settings_defaults_and_overrides() -> None:
    s = _settings("--plan-rate", "free=10", "--ws-max-conn", "enterprise=7", "--trusted-proxies", "10.0.0.0/8")
    assert s.port == 8000 and s.ws_port == 8001
    assert s.plan_rate == {"free": 10, "professional": 600}
    assert s.ws_max_conn["enterprise"] == 7
    assert s.rate_for("enterprise", None) == 6000
    assert s.rate_for("enterprise", 1234) == 1234
    assert len(s.trusted_proxies) == 1


@pytest.mark.parametrize(("feed", "kind", "path"), [
    ("demo", "demo", None), ("jsonl:/x/t.jsonl", "jsonl", "/x/t.jsonl"), ("jsonl:-", "jsonl", "-"),
    ("ctp-jsonl:/x/depth.jsonl", "ctp-jsonl", "/x/depth.jsonl"), ("ctp-jsonl:-", "ctp-jsonl", "-"),
])
def test_the_feed_flag_names_its_kind_and_path(feed: str, kind: str, path: str | None) -> None:
    s = _settings("--feed", feed).group(FeedSettings)
    assert (s.feed_kind, s.feed_path) == (kind, path)


def test_settings_read_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARKET_PORT", "9100")
    assert _settings().port == 9100


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--port", "70000"), "--port"),
        (("--feed", "kafka:x"), "--feed"),
        (("--feed", "ctp-jsonl:"), "--feed"),
        (("--feed", "ctp-jsonl"), "--feed"),
        (("--plan-rate", "gold=5"), "--plan-rate"),
        (("--webhook", "slack=http://x"), "--webhook"),
        (("--webhook", "wecom=ftp://x"), "--webhook"),
        (("--smtp-url", "http://user:secretpw@x"), "--smtp-url"),
        (("--runtime", "uvicorn"), "--runtime"),
        (("--tick-interval-ms", "1"), "--tick-interval-ms"),
    ],
)
def test_bad_settings_name_the_flag(argv: tuple[str, ...], flag: str) -> None:
    with pytest.raises(ConfigError) as err:
        _settings(*argv)
    assert flag in str(err.value)
    assert "secretpw" not in str(err.value)
