"""A dedicated data source's own flat files (SPEC 20 with SPEC 18, docs/ingest.md) on a real server with a live
feed's durable history: the account publishes ticks of its declared ZCE instrument, and at 15:03 Shanghai (ZCE closed
at 15:00, its files exist from 15:02) its read key lists and downloads its own day files of ticks and 1m candles
(`GET /api/v1/flatfiles?source=acme`, `/api/v1/flatfiles/source/acme/{dataset}/{date}.{fmt}`, with ETag, 304 and
Range as every flat file); any other key gets 404 for them, and the shared files never hold them.

The hub runs on a fake clock (hidden --clock-start, Wednesday 2026-11-18 15:03 Shanghai)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.market.timefmt import TZ
from tests.conftest import ServerProcess
from tests.contract.test_ingest import INSTRUMENT, account, ingest, key

NOW = "2026-11-18T15:03:00+08:00"
WEEK = {"from": "2026-11-16", "to": "2026-11-18"}


def _ts(day: int, hh: int, mm: int) -> float:
    return datetime(2026, 11, day, hh, mm, tzinfo=TZ).timestamp()


TICKS = [{"id": "acme.blend", "price": 100 + i, "volume": 1, "ts": ts}
         for i, ts in enumerate((_ts(17, 10, 0), _ts(17, 10, 30), _ts(18, 9, 30), _ts(18, 10, 0), _ts(18, 14, 0)))]


def until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.1)  # another process commits its archive: nothing here to await
    return value


@pytest.fixture(scope="module", params=["granian", "robyn"])
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp: Path = tmp_path_factory.mktemp(f"source-files-{request.param}")
    feed = tmp / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(tmp / "data", request.param, "--feed", f"jsonl:{feed}", "--clock-start", NOW,
                        "--engine", "memory")
    acme = account(srv, "acme@example.com", namespace="acme")
    assert acme.post("/api/console/instruments", json={**INSTRUMENT, "id": "acme.blend", "venue": "zce"}
                     ).status_code == 201
    publisher, reader = key(acme, "ingest"), key(acme)
    other = key(account(srv, "other@example.com", namespace="other"))
    resp = until(lambda: (r := ingest(srv, publisher, TICKS)).status_code == 200 and r)  # the key's first refresh
    assert resp and resp.json()["accepted"] == len(TICKS), resp and resp.text
    yield {"srv": srv, "reader": reader, "other": other, "pro": srv.create_key("professional")[1]}
    assert srv.stop() == 0, srv.output()


def _get(hub: dict[str, Any], who: str, path: str, **kw: Any) -> httpx.Response:
    headers = {"X-SERVICE-Key": hub[who], **kw.pop("headers", {})}
    return httpx.get(hub["srv"].base + path, headers=headers, timeout=10.0, **kw)


def _files(hub: dict[str, Any]) -> list[dict[str, Any]]:
    r = _get(hub, "reader", "/api/v1/flatfiles", params={**WEEK, "source": "acme"})
    assert r.status_code == 200, r.text
    return r.json()["files"]  # type: ignore[no-any-return]


def test_the_owner_lists_and_downloads_its_own_files(hub: dict[str, Any]) -> None:
    # the 1m rows are the candle store's, as for the feed's own instruments: a minute bar of ticks published long
    # after their minute (the Tuesday's, Wednesday morning's here) is not rewritten there; the last minute's is
    want = {("ticks", "2026-11-17", 2), ("ticks", "2026-11-18", 3)}
    files = until(lambda: (f := _files(hub)) and want <= {(e["dataset"], e["date"], e["rows"]) for e in f}
                  and ("candles-1m", "2026-11-18") in {(e["dataset"], e["date"]) for e in f} and f)
    assert files, [(e["dataset"], e["date"], e["rows"]) for e in _files(hub)]
    assert {e["source"] for e in files} == {"acme"}
    entry = next(e for e in files if e["dataset"] == "ticks" and e["date"] == "2026-11-18")
    assert entry["url"] == "/api/v1/flatfiles/source/acme/ticks/2026-11-18.csv.gz"
    whole = _get(hub, "reader", entry["url"])
    assert whole.status_code == 200 and whole.headers["etag"] == f'"{entry["sha256"]}"'
    assert 'filename="acme-ticks-2026-11-18.csv.gz"' in whole.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(gzip.decompress(whole.content).decode())))
    assert [(r["id"], float(r["price"])) for r in rows] == [("acme.blend", 102.0), ("acme.blend", 103.0),
                                                            ("acme.blend", 104.0)]
    assert _get(hub, "reader", entry["url"], headers={"If-None-Match": whole.headers["etag"]}).status_code == 304
    part = _get(hub, "reader", entry["url"], headers={"Range": "bytes=10-"})
    assert part.status_code == 206 and part.content == whole.content[10:]
    assert _get(hub, "reader", entry["url"].replace(".csv.gz", ".parquet")).status_code == 200


def test_any_other_key_gets_404_and_the_shared_files_hold_none_of_it(hub: dict[str, Any]) -> None:
    assert until(lambda: _files(hub))
    url = "/api/v1/flatfiles/source/acme/ticks/2026-11-18.csv.gz"
    for who in ("other", "pro"):
        listing = _get(hub, who, "/api/v1/flatfiles", params={**WEEK, "source": "acme"})
        assert listing.status_code == 404 and listing.json()["code"] == "not_found"
        download = _get(hub, who, url)
        assert download.status_code == 404 and download.headers["content-type"] == "application/problem+json"
        for params in ({}, {"venue": "zce"}):
            shared = _get(hub, who, "/api/v1/flatfiles", params={**WEEK, **params})
            assert shared.status_code == 200 and shared.json()["files"] == [], shared.text  # no feed ticks here
    bad = _get(hub, "reader", "/api/v1/flatfiles", params={"source": "acme", "venue": "zce"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "source"
    assert _get(hub, "reader", "/api/v1/flatfiles/source/other/ticks/2026-11-18.csv.gz").status_code == 404
    assert json.loads(_get(hub, "reader", "/api/v1/flatfiles/source/acme/ticks/2026-11-19.csv.gz").text)["code"] \
        == "not_found"  # not closed yet
