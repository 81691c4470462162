"""Flat files per venue (issue 39 item 9, SPEC 18) on a real server, both runtimes (and PostgreSQL under
MARKET_TEST_STORAGE=postgresql): `GET /api/v1/flatfiles?venue=zce` lists ZCE's own files, Wednesday's among them
at 15:03 Shanghai while the all-venue Wednesday (and ICE's) waits for ICE's close; a venue's file holds its
instruments only, is the same bytes on every request, resumes with Range and If-Range; a day that is not a trading
day of the venue, an unknown venue and a venue's file not closed yet are 404 problems.

The hub runs on a fake clock (hidden --clock-start, Wednesday 2026-11-18 15:03 in Shanghai: ZCE and DCE closed at
15:00, ICE Futures Europe trades until 23:00 London); Monday to Wednesday's history is imported with the CLI before
it starts, as an operator backfills. tests/unit/test_flatfile_venues.py holds the close to the millisecond."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from server.market.timefmt import TZ
from tests.conftest import ServerProcess, run_cli
from tests.contract.test_flatfile_routes import Hub, _line
from tests.contract.test_schemas import Checker

NOW = "2026-11-18T15:03:00+08:00"
WEEK = {"from": "2026-11-16", "to": "2026-11-18"}


def _ms(day: int, hh: int, mm: int) -> int:
    return int(datetime(2026, 11, day, hh, mm, tzinfo=TZ).timestamp() * 1000)


TICKS = [  # (id, ts, seq, price, volume)
    ("methanol", _ms(16, 21, 30), 1, 2400.0, 3.0),  # Monday night: Tuesday's trading day (SPEC 16)
    ("methanol", _ms(17, 10, 0), 2, 2401.5, 1.0),
    ("urea", _ms(17, 10, 5), 1, 1800.0, 2.0),  # zce, day session only
    ("methanol", _ms(17, 21, 30), 3, 2403.0, 1.0),  # Tuesday night: Wednesday's
    ("methanol", _ms(18, 10, 0), 4, 2404.0, 1.0),
    ("urea", _ms(18, 9, 30), 2, 1801.0, 1.0),
    ("pp", _ms(17, 10, 0), 1, 7000.0, 1.0),  # dce
    ("pp", _ms(18, 10, 0), 2, 7001.0, 1.0),
    ("brent", _ms(17, 16, 0), 1, 80.25, 5.0),  # 08:00 London: Tuesday's
    ("brent", _ms(18, 14, 0), 2, 80.5, 1.0),  # 06:00 London: Wednesday's, not closed at NOW
]
VENUE = {"methanol": "zce", "urea": "zce", "pp": "dce", "brent": "ice-eu"}


def start_hub(tmp: Path, runtime: str) -> Hub:
    data = tmp / "data"
    data.mkdir()
    ticks = tmp / "ticks.jsonl"
    ticks.write_text("".join(json.dumps(_line(t)) + "\n" for t in TICKS))
    assert run_cli(data, "ticks", "import", str(ticks), "--clock-start", NOW).returncode == 0
    daily = tmp / "daily.csv"
    daily.write_text("brent,2026-11-17,80,81,79,80.5,6\nmethanol,2026-11-17,2400,2402,2399,2401.5,4\n"
                     "urea,2026-11-17,1800,1800,1800,1800,2\npp,2026-11-17,7000,7000,7000,7000,1\n")
    assert run_cli(data, "candles", "import", str(daily), "--clock-start", NOW).returncode == 0
    feed = tmp / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", NOW, "--engine", "memory")
    return Hub(srv, srv.create_key("professional")[1], srv.create_key("free")[1])


@pytest.fixture(scope="module", params=["granian", "robyn"])
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    started = start_hub(tmp_path_factory.mktemp(f"venue-flat-{request.param}"), request.param)
    yield started
    assert started.srv.stop() == 0, started.srv.output()


def _listing(hub: Hub, **params: str) -> list[dict]:
    r = hub.get("/api/v1/flatfiles", params={**WEEK, **params})
    assert r.status_code == 200, r.text
    return r.json()["files"]  # type: ignore[no-any-return]


def _csv(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(gzip.decompress(body).decode())))


def test_a_venues_day_is_there_from_its_own_close(hub: Hub) -> None:
    zce = _listing(hub, venue="zce", dataset="ticks")
    assert [(f["venue"], f["date"]) for f in zce] == [("zce", "2026-11-17"), ("zce", "2026-11-18")]
    assert zce[1]["url"] == "/api/v1/flatfiles/zce/ticks/2026-11-18.csv.gz" and zce[1]["format"] == "csv.gz"
    assert set(zce[1]) == {"venue", "dataset", "date", "format", "url", "bytes", "sha256", "rows", "condition", "gaps"}
    # the all-venue Wednesday and ICE's wait for ICE's close (23:00 London: 07:02 Thursday in Shanghai)
    assert [f["date"] for f in _listing(hub, dataset="ticks")] == ["2026-11-17"]
    assert [f["date"] for f in _listing(hub, venue="ice-eu", dataset="ticks")] == ["2026-11-17"]
    early = hub.get("/api/v1/flatfiles/ice-eu/ticks/2026-11-18.csv.gz")
    assert early.status_code == 404 and "close plus two minutes" in early.json()["detail"], early.text


def test_a_venues_file_holds_its_instruments_only(hub: Hub) -> None:
    entry = _listing(hub, venue="zce", dataset="ticks", **{"from": "2026-11-18"})[0]
    r = hub.get(entry["url"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    assert int(r.headers["content-length"]) == entry["bytes"] == len(r.content)
    assert r.headers["etag"] == f'"{entry["sha256"]}"' and hashlib.sha256(r.content).hexdigest() == entry["sha256"]
    assert r.headers["content-disposition"] == 'attachment; filename="zce-ticks-2026-11-18.csv.gz"'
    rows = _csv(r.content)
    assert rows[0] == ["id", "ts", "seq", "price", "volume"] and entry["rows"] == len(rows) - 1
    assert [(row[0], row[1]) for row in rows[1:]] == [
        ("methanol", "2026-11-17T21:30:00.000+08:00"), ("methanol", "2026-11-18T10:00:00.000+08:00"),
        ("urea", "2026-11-18T09:30:00.000+08:00")]
    again = hub.get(entry["url"])
    assert again.content == r.content and again.headers["etag"] == r.headers["etag"]  # byte-identical
    assert hub.get(entry["url"], headers={"If-None-Match": r.headers["etag"]}).status_code == 304
    dce = hub.get("/api/v1/flatfiles/dce/ticks/2026-11-18.csv.gz")
    assert dce.status_code == 200 and [row[0] for row in _csv(dce.content)[1:]] == ["pp"]


@pytest.mark.parametrize("dataset", ["ticks", "candles-1m", "candles-1d"])
def test_a_venues_rows_are_those_of_the_all_venue_file(hub: Hub, dataset: str) -> None:
    """Tuesday (closed everywhere): each venue's file is the all-venue file's rows of its instruments."""
    every = _listing(hub, dataset=dataset, **{"from": "2026-11-17", "to": "2026-11-17"})
    rows = _csv(hub.get(every[0]["url"]).content)
    assert {row[0] for row in rows[1:]} == set(VENUE)
    for venue in ("zce", "dce", "ice-eu"):
        mine = _listing(hub, venue=venue, dataset=dataset, **{"from": "2026-11-17", "to": "2026-11-17"})
        body = hub.get(mine[0]["url"]).content
        assert _csv(body) == [rows[0], *(row for row in rows[1:] if VENUE[row[0]] == venue)], venue


def test_parquet_and_a_resumed_download(hub: Hub) -> None:
    entry = _listing(hub, venue="zce", dataset="ticks", format="parquet", **{"from": "2026-11-18"})[0]
    assert entry["url"] == "/api/v1/flatfiles/zce/ticks/2026-11-18.parquet"
    whole = hub.get(entry["url"]).content
    assert hashlib.sha256(whole).hexdigest() == entry["sha256"]
    table = pq.read_table(io.BytesIO(whole))
    assert table.column("id").to_pylist() == ["methanol", "methanol", "urea"]
    part = hub.get(entry["url"], headers={"Range": "bytes=0-99"})
    assert part.status_code == 206 and part.content == whole[:100]
    rest = hub.get(entry["url"], headers={"Range": "bytes=100-", "If-Range": f'"{entry["sha256"]}"'})
    assert rest.status_code == 206 and rest.headers["content-range"] == f"bytes 100-{len(whole) - 1}/{len(whole)}"
    assert part.content + rest.content == whole
    stale = hub.get(entry["url"], headers={"Range": "bytes=100-", "If-Range": '"another"'})
    assert stale.status_code == 200 and stale.content == whole
    past = hub.get(entry["url"], headers={"Range": f"bytes={len(whole)}-"})
    assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{len(whole)}"


@pytest.mark.parametrize("path", [
    "/api/v1/flatfiles/nyse/ticks/2026-11-17.csv.gz",  # no such venue
    "/api/v1/flatfiles/zce/ticks/2026-11-15.csv.gz",  # a Sunday: not a trading day of zce
    "/api/v1/flatfiles/zce/ticks/2026-11-19.csv.gz",  # Thursday: not closed
    "/api/v1/flatfiles/zce/quotes/2026-11-17.csv.gz", "/api/v1/flatfiles/zce/ticks/2026-11-17.zip",
    "/api/v1/flatfiles/shfe/ticks/2026-11-17.csv.gz",  # a trading day, but no rows of its instruments
])
def test_venue_files_that_are_not_there(hub: Hub, path: str) -> None:
    r = hub.get(path)
    assert r.status_code == 404 and r.json()["code"] == "not_found", r.text


def test_bad_venue_and_plan(hub: Hub) -> None:
    for venue in ("nyse", "", "ZCE"):
        r = hub.get("/api/v1/flatfiles", params={"venue": venue})
        assert r.status_code == 400 and r.json()["errors"][0]["field"] == "venue", r.text
    for path in ("/api/v1/flatfiles?venue=zce", "/api/v1/flatfiles/zce/ticks/2026-11-17.csv.gz"):
        r = hub.get(path, key=hub.free)
        assert r.status_code == 403 and r.json()["code"] == "plan_required", r.text


def test_answers_agree_with_the_openapi_document(hub: Hub) -> None:
    spec = httpx.get(hub.srv.base + "/openapi.json").json()
    check = Checker(spec)
    listing, download = "/api/v1/flatfiles", "/api/v1/flatfiles/{venue}/{dataset}/{file}"
    url = check(hub.get(listing, params={**WEEK, "venue": "zce", "dataset": "candles-1m"}), listing).json()
    url = url["files"][0]["url"]
    etag = check(hub.get(url), download).headers["etag"]
    check(hub.get(url, headers={"If-None-Match": etag}), download)
    check(hub.get(url, headers={"Range": "bytes=1-"}), download)
    check(hub.get(url, headers={"Range": "bytes=99999999-"}), download)
    check(hub.get("/api/v1/flatfiles/zce/ticks/2026-11-15.csv.gz"), download)
    check(hub.get(url, params={"x": "1"}), download)
    check(hub.get(listing, params={"venue": "nyse"}), listing)
    check(hub.get(url, key=hub.free), download)
    check(httpx.get(hub.srv.base + url), download)  # no key: 401
    assert check.problems == []


def test_an_import_remakes_the_venues_files(tmp_path: Path) -> None:
    """A late tick of Wednesday imported into a running hub's data dir: ZCE's Wednesday file is made again with it."""
    hub = start_hub(tmp_path, "granian")
    try:
        before = _listing(hub, venue="zce", dataset="ticks", **{"from": "2026-11-18"})[0]
        late = tmp_path / "late.jsonl"
        late.write_text(json.dumps(_line(("urea", _ms(18, 14, 59), 3, 1802.0, 1.0))) + "\n")
        out = run_cli(hub.srv.data_dir, "ticks", "import", str(late), "--clock-start", NOW)
        assert out.returncode == 0 and "ticks flat files of" in out.stdout, out.stdout
        after = _listing(hub, venue="zce", dataset="ticks", **{"from": "2026-11-18"})[0]
        assert after["rows"] == before["rows"] + 1 and after["sha256"] != before["sha256"]
        body = gzip.decompress(hub.get(after["url"]).content).decode()
        assert "urea,2026-11-18T14:59:00.000+08:00,3,1802.0,1.0" in body
    finally:
        assert hub.srv.stop() == 0, hub.srv.output()


def test_a_hub_without_history_knows_the_venues(tmp_path: Path) -> None:
    """The demo feed keeps no durable history: no files, but a venue is still checked."""
    srv = ServerProcess(tmp_path / "demo", "granian")
    try:
        key = {"X-SERVICE-Key": srv.create_key("professional")[1]}
        r = httpx.get(srv.base + "/api/v1/flatfiles", params={"venue": "zce"}, headers=key)
        assert r.status_code == 200 and r.json() == {"files": []}, r.text
        r = httpx.get(srv.base + "/api/v1/flatfiles/nyse/ticks/2026-11-17.csv.gz", headers=key)
        assert r.status_code == 404 and "venue" in r.json()["detail"], r.text
    finally:
        assert srv.stop() == 0, srv.output()
