"""A remembered answer (App.serve_hot) and If-None-Match, without a server: a request answered 304 by the pipeline
still leaves the route's 200 remembered, and a 304 carries no representation metadata on either path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from server.api.core.types import Request
from server.config import Settings
from server.root import build


def _node(tmp_path: Path):  # type: ignore[no-untyped-def]
    ticks = tmp_path / "ticks.jsonl"
    ticks.write_text("")  # a quiet feed: the snapshot stays as built
    data = tmp_path / "data"
    data.mkdir()
    return build(Settings(data_dir=data, feed=f"jsonl:{ticks}", public_rate=1_000_000))


PEER = SimpleNamespace(client="127.0.0.1:1")  # Granian's scope as serve_hot's peer (its `client`, "host:port")


def _get(path: str, **headers: str) -> Request:
    return Request("GET", path, "", {"host": "127.0.0.1", **headers}, b"", "127.0.0.1")


def test_a_304_from_the_pipeline_leaves_the_200_remembered(tmp_path: Path) -> None:
    """/api/market's version moves every second (its max-age counts down): a client that only ever sends
    If-None-Match must not be sent through the whole pipeline from then on (the 304 used to be the handler's own,
    which was never remembered)."""
    app = _node(tmp_path).app

    async def run() -> None:
        first = await app.handle(_get("/api/market", **{"accept-encoding": "identity"}))
        assert first.status == 200
        etag = dict(first.headers)["etag"]
        app.answers.by_path.clear()  # as if the version had moved since: nothing remembered for this path
        inm = {"if-none-match": etag, "accept-encoding": "identity"}
        again = await app.handle(_get("/api/market", **inm))
        assert again.status == 304 and again.body == b"" and again.content_type is None
        assert all(name not in ("content-type", "content-encoding") for name, _ in again.all_headers())
        hot = app.serve_hot("GET", "/api/market", "", inm, PEER)
        assert isinstance(hot, tuple), "the 200 behind the 304 was not remembered"
        status, variant, _fields, _rid, body = hot
        assert status == 304 and body == b"" and variant.etag == etag
        names = {name for name, _ in variant.head}
        assert "etag" in names and "cache-control" in names and "vary" in names
        assert "content-type" not in names and "content-encoding" not in names
        ok = app.serve_hot("GET", "/api/market", "", {"accept-encoding": "gzip"}, PEER)
        assert isinstance(ok, tuple) and ok[0] == 200
        assert ("content-type", "application/json") in ok[1].head and ("content-encoding", "gzip") in ok[1].head
        gz = app.serve_hot("GET", "/api/market", "", {"accept-encoding": "gzip", "if-none-match": ok[1].etag},
                           PEER)
        assert isinstance(gz, tuple) and gz[0] == 304 and gz[1] is ok[1].unchanged
        assert {name for name, _ in gz[1].head}.isdisjoint({"content-type", "content-encoding"})

    asyncio.run(run())
