"""SPEC 18's flat files on a real server, both runtimes: the list, a closed trading day's file as CSV.gz and
Parquet with its size, sha256 ETag and rows, a broken download resumed with Range, 304/206/416, the venues'
trading days (a night session's tick is in the next day's file), plans, and bad input.

The hub runs on a fake clock (hidden --clock-start, Wednesday 2026-11-18 14:20 in Shanghai); Tuesday's history is
imported with the CLI before it starts, as an operator backfills."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import random
import re
import shutil
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from server.http.robyn_app import INLINE_MAX
from server.market.timefmt import TZ
from server.store.flatfiles.files import day_file
from tests.conftest import ServerProcess, run_cli
from tests.contract.test_schemas import Checker

NOW = "2026-11-18T14:20:00+08:00"
MEMORY = ("--engine", "memory")  # the history is written on the memory engine (SPEC 18: the lease holder's on Redis)


def _ms(day: int, hh: int, mm: int) -> int:
    return int(datetime(2026, 11, day, hh, mm, tzinfo=TZ).timestamp() * 1000)


TICKS = [  # (id, ts, seq, price, volume)
    ("methanol", _ms(16, 21, 30), 1, 2400.0, 3.0),  # Monday's night session: Tuesday's trading day (SPEC 16)
    ("methanol", _ms(17, 10, 0), 2, 2401.5, 1.0),
    ("methanol", _ms(17, 14, 0), 3, 2402.0, 2.0),
    ("methanol", _ms(17, 21, 30), 4, 2403.0, 1.0),  # Tuesday night: Wednesday's (not closed at NOW)
    ("brent", _ms(17, 16, 0), 1, 80.25, 5.0),
    ("brent", _ms(17, 16, 1), 2, 80.5, 1.0),
]
FIELDS = ("id", "ts", "seq", "price", "volume")
TUESDAY = [t for t in TICKS if t[1] != _ms(17, 21, 30)]
BIG_DAY = "2026-11-13"  # a closed Friday, outside the listings below
BIG_ROWS = 380_000


def _line(tick: tuple) -> dict:
    """A tick as a JSONL line: `ts` in epoch seconds, as the feed reads it (docs/storage.md)."""
    return {**dict(zip(FIELDS, tick, strict=True)), "ts": tick[1] / 1000}


class Hub:
    def __init__(self, srv: ServerProcess, key: str, free: str) -> None:
        self.srv, self.key, self.free = srv, key, free

    def get(self, path: str, key: str | None = None, **kw: object) -> httpx.Response:
        headers = {"X-SERVICE-Key": key or self.key, **kw.pop("headers", {})}  # type: ignore[dict-item]
        return httpx.get(self.srv.base + path, headers=headers, timeout=30, **kw)  # type: ignore[arg-type]


def start_hub(tmp: Path, runtime: str, files: Path | None = None) -> Hub:
    """A hub on the fake clock whose data dir holds Tuesday's imported ticks and candles (the CLI's backfill), and
    `files` (flat files made already) as its flat-file cache."""
    data = tmp / "data"
    data.mkdir()
    if files is not None:
        shutil.copytree(files, data / "flatfiles")
    ticks = tmp / "ticks.jsonl"
    ticks.write_text("".join(json.dumps(_line(t)) + "\n" for t in TICKS))
    assert run_cli(data, "ticks", "import", str(ticks), "--clock-start", NOW).returncode == 0
    bars = tmp / "bars.csv"
    bars.write_text(f"id,t,o,h,l,c,v\nbrent,{_ms(17, 16, 0)},80,81,79,80.5,6\n"
                    f"methanol,{_ms(16, 21, 30)},2400,2401,2399,2400,3\n"
                    f"methanol,{_ms(17, 21, 30)},2403,2403,2403,2403,1\n")
    assert run_cli(data, "candles", "import", "--interval", "1m", str(bars), "--clock-start", NOW).returncode == 0
    daily = tmp / "daily.csv"
    daily.write_text("brent,2026-11-17,80,81,79,80.5,6\nmethanol,2026-11-17,2400,2402,2399,2402,6\n"
                     "methanol,2026-11-16,2390,2400,2380,2395,9\n")
    assert run_cli(data, "candles", "import", str(daily), "--clock-start", NOW).returncode == 0
    feed = tmp / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, runtime, "--feed", f"jsonl:{feed}", "--clock-start", NOW, *MEMORY)
    return Hub(srv, srv.create_key("professional")[1], srv.create_key("free")[1])


@pytest.fixture(scope="module")
def big_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat file over Robyn's INLINE_MAX (8 MiB: bigger ones are streamed chunked), made once by the hub's own
    writer from BIG_ROWS ticks of a closed Friday (prices and volumes with every digit, so gzip leaves them big)."""
    root = tmp_path_factory.mktemp("big-flatfiles")
    rng = random.Random(46)
    start = _ms(13, 9, 0)
    rows = [("brent", start + k * 37, k + 1, 70 + rng.random() * 20, rng.random() * 1000) for k in range(BIG_ROWS)]
    made = day_file(root, "ticks", date.fromisoformat(BIG_DAY), "csv.gz", lambda: rows)
    assert made.bytes > INLINE_MAX + (1 << 20), made  # the part resumed after the first MiB is still over it
    return root


@pytest.fixture(scope="module", params=["granian", "robyn"])
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, big_files: Path) -> Iterator[Hub]:
    started = start_hub(tmp_path_factory.mktemp(f"flat-{request.param}"), request.param, big_files)
    yield started
    assert started.srv.stop() == 0, started.srv.output()


def _listing(hub: Hub, dataset: str, fmt: str = "csv.gz") -> list[dict]:
    r = hub.get("/api/v1/flatfiles", params={"dataset": dataset, "from": "2026-11-16", "to": "2026-11-18",
                                             "format": fmt})
    assert r.status_code == 200, r.text
    return r.json()["files"]


def test_a_closed_days_ticks_as_csv_gz(hub: Hub) -> None:
    files = _listing(hub, "ticks")
    assert [f["date"] for f in files] == ["2026-11-17"]  # Monday had no rows; Wednesday has not closed
    entry = files[0]
    assert entry["url"] == "/api/v1/flatfiles/ticks/2026-11-17.csv.gz" and entry["rows"] == len(TUESDAY)
    r = hub.get(entry["url"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    assert int(r.headers["content-length"]) == entry["bytes"] == len(r.content)
    assert r.headers["etag"] == f'"{entry["sha256"]}"' and hashlib.sha256(r.content).hexdigest() == entry["sha256"]
    assert r.headers["accept-ranges"] == "bytes" and "attachment" in r.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(gzip.decompress(r.content).decode())))
    assert rows[0] == ["id", "ts", "seq", "price", "volume"]
    want = sorted(TUESDAY, key=lambda t: (t[0], t[1]))
    assert [(r[0], int(r[2]), float(r[3])) for r in rows[1:]] == [(t[0], t[2], t[3]) for t in want]
    assert rows[3][1] == "2026-11-16T21:30:00.000+08:00"  # the night tick, in Tuesday's file
    assert hub.get(entry["url"], headers={"If-None-Match": r.headers["etag"]}).status_code == 304


def test_a_broken_download_resumes_with_range(hub: Hub) -> None:
    entry = _listing(hub, "ticks")[0]
    whole = hub.get(entry["url"]).content
    part = hub.get(entry["url"], headers={"Range": "bytes=0-19"})
    assert part.status_code == 206 and part.content == whole[:20]
    rest = hub.get(entry["url"], headers={"Range": "bytes=20-", "If-Range": f'"{entry["sha256"]}"'})
    assert rest.status_code == 206 and rest.headers["content-range"] == f"bytes 20-{len(whole) - 1}/{len(whole)}"
    assert part.content + rest.content == whole
    stale = hub.get(entry["url"], headers={"Range": "bytes=20-", "If-Range": '"another"'})
    assert stale.status_code == 200 and stale.content == whole  # the file changed: the whole of it
    past = hub.get(entry["url"], headers={"Range": f"bytes={len(whole)}-"})
    assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{len(whole)}"
    assert past.json()["code"] == "range_not_satisfiable"


def test_a_big_file_resumes_with_range_and_if_range(hub: Hub) -> None:
    """Over 8 MiB (Robyn streams it chunked): the whole, a first MiB, the rest resumed with If-Range, a suffix;
    a stale If-Range or several ranges give the whole file again."""
    url, meta = f"/api/v1/flatfiles/ticks/{BIG_DAY}.csv.gz", hub.srv.data_dir / "flatfiles" / "ticks"
    info = json.loads((meta / f"{BIG_DAY}.csv.gz.json").read_text())
    whole = hub.get(url)
    assert whole.status_code == 200 and len(whole.content) == info["bytes"] > INLINE_MAX
    assert hashlib.sha256(whole.content).hexdigest() == info["sha256"]
    assert whole.headers["etag"] == f'"{info["sha256"]}"'
    size, mib = info["bytes"], 1 << 20
    part = hub.get(url, headers={"Range": f"bytes=0-{mib - 1}"})
    assert part.status_code == 206 and part.headers["content-range"] == f"bytes 0-{mib - 1}/{size}"
    rest = hub.get(url, headers={"Range": f"bytes={mib}-", "If-Range": whole.headers["etag"]})
    assert rest.status_code == 206 and rest.headers["content-range"] == f"bytes {mib}-{size - 1}/{size}"
    assert part.content + rest.content == whole.content
    middle = hub.get(url, headers={"Range": f"bytes={mib}-{9 * mib + 1}"})
    assert middle.status_code == 206 and middle.content == whole.content[mib:9 * mib + 2]
    tail = hub.get(url, headers={"Range": "bytes=-100"})
    assert tail.status_code == 206 and tail.content == whole.content[-100:]
    assert tail.headers["content-range"] == f"bytes {size - 100}-{size - 1}/{size}"
    for headers in ({"Range": f"bytes={mib}-", "If-Range": '"another"'}, {"Range": "bytes=0-9,20-29"}):
        again = hub.get(url, headers=headers)
        assert again.status_code == 200 and again.content == whole.content, headers


def test_parquet_and_candles(hub: Hub) -> None:
    entry = _listing(hub, "ticks", "parquet")[0]
    body = hub.get(entry["url"]).content
    assert hashlib.sha256(body).hexdigest() == entry["sha256"]
    table = pq.read_table(io.BytesIO(body))
    assert table.column_names == ["id", "ts", "seq", "price", "volume"] and table.num_rows == len(TUESDAY)
    minutes = _listing(hub, "candles-1m")
    # Tuesday's: the imported bars (the night one with them) and those the hub rebuilt from the imported ticks of
    # Tuesday's session that no stored bar covers (brent 16:01, methanol 10:00 and 14:00: SPEC 18, never lose a bar)
    assert [(f["date"], f["rows"]) for f in minutes] == [("2026-11-17", 5)]
    text = gzip.decompress(hub.get(minutes[0]["url"]).content).decode().splitlines()
    assert text[0] == "id,t,o,h,l,c,v" and text[3].startswith("methanol,2026-11-16T21:30:00.000+08:00,")
    daily = _listing(hub, "candles-1d")
    assert [(f["date"], f["rows"]) for f in daily] == [("2026-11-16", 1), ("2026-11-17", 2)]
    text = gzip.decompress(hub.get(daily[1]["url"]).content).decode().splitlines()
    assert text[1:] == ["brent,2026-11-17,80.0,81.0,79.0,80.5,6.0",
                        "methanol,2026-11-17,2400.0,2402.0,2399.0,2402.0,6.0"]


def test_a_listing_without_dataset_has_every_dataset(hub: Hub) -> None:
    r = hub.get("/api/v1/flatfiles", params={"from": "2026-11-16", "to": "2026-11-18"})
    assert r.status_code == 200, r.text
    assert [(f["date"], f["dataset"]) for f in r.json()["files"]] == [
        ("2026-11-16", "candles-1d"), ("2026-11-17", "ticks"), ("2026-11-17", "candles-1m"),
        ("2026-11-17", "candles-1d")]


def test_free_keys_are_told_which_plan(hub: Hub) -> None:
    for path in ("/api/v1/flatfiles?dataset=ticks", "/api/v1/flatfiles/ticks/2026-11-17.csv.gz"):
        r = hub.get(path, key=hub.free)
        assert r.status_code == 403 and r.json()["code"] == "plan_required", r.text
        assert r.json()["requiredPlan"] == "professional"


@pytest.mark.parametrize(("query", "field"), [
    ({"dataset": ""}, "dataset"), ({"dataset": "ticks", "from": ""}, "from"),
    ({"dataset": "ticks", "format": ""}, "format"),
    ({"dataset": "quotes"}, "dataset"), ({"dataset": "ticks", "format": "xlsx"}, "format"),
    ({"dataset": "ticks", "from": "2026-13-01"}, "from"), ({"dataset": "ticks", "to": "yesterday"}, "to"),
    ({"dataset": "ticks", "from": "2026-11-18", "to": "2026-11-01"}, "to"),
    ({"dataset": "ticks", "from": "2024-01-01", "to": "2026-01-01"}, "to"),
])
def test_bad_listing_queries(hub: Hub, query: dict[str, str], field: str) -> None:
    r = hub.get("/api/v1/flatfiles", params=query)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == field, r.text


@pytest.mark.parametrize("path", [
    "/api/v1/flatfiles/quotes/2026-11-17.csv.gz", "/api/v1/flatfiles/ticks/2026-11-17.zip",
    "/api/v1/flatfiles/ticks/2026-02-30.csv.gz", "/api/v1/flatfiles/ticks/17-11-2026.csv.gz",
    "/api/v1/flatfiles/ticks/2026-11-18.csv.gz",  # Wednesday: not closed yet
    "/api/v1/flatfiles/ticks/2026-11-16.csv.gz",  # Monday: no rows
    "/api/v1/flatfiles/ticks/2026-11-15.csv.gz",  # a Sunday: no venue trades
])
def test_files_that_are_not_there(hub: Hub, path: str) -> None:
    r = hub.get(path)
    assert r.status_code == 404 and r.json()["code"] == "not_found", r.text


def test_answers_agree_with_the_openapi_document(hub: Hub) -> None:
    """Every documented answer of the two routes, checked against /openapi.json (test_schemas.py's hub has no
    history, so it cannot cause the file answers)."""
    spec = httpx.get(hub.srv.base + "/openapi.json").json()
    check = Checker(spec)
    listing, download = "/api/v1/flatfiles", "/api/v1/flatfiles/{dataset}/{file}"
    url = check(hub.get(listing, params={"dataset": "candles-1m"}), listing).json()["files"][0]["url"]
    etag = check(hub.get(url), download).headers["etag"]
    check(hub.get(url, headers={"If-None-Match": etag}), download)
    check(hub.get(url, headers={"Range": "bytes=1-"}), download)
    check(hub.get(url, headers={"Range": "bytes=99999999-"}), download)
    check(hub.get("/api/v1/flatfiles/ticks/2026-11-15.csv.gz"), download)
    check(hub.get(url, params={"x": "1"}), download)  # a query parameter it does not define
    check(hub.get(listing, params={"dataset": "ticks", "from": "2026-11-18", "to": "2026-11-17"}), listing)
    check(hub.get(listing, params={"source": "acme"}), listing)  # SPEC 20: not this key's account's source: 404
    for path, route in ((listing + "?dataset=ticks", listing), (url, download)):
        check(hub.get(path, key=hub.free), route)
        check(httpx.get(hub.srv.base + path), route)  # no key: 401
    assert check.problems == []
    documented = {(p, s) for p in (listing, download) for s in spec["paths"][p]["get"]["responses"]}
    seen = {(p, s) for p, _m, s in check.seen}
    assert documented - seen <= {(listing, "405"), (download, "405"), (listing, "429"), (download, "429"),
                                 (listing, "500"), (download, "500")}


def test_an_import_into_a_day_makes_its_files_again(tmp_path: Path) -> None:
    """A day's files are made once; `ticks import` of rows of that day deletes them (the CLI says so), so the next
    listing makes them from the new rows. A day the listing found empty (and remembers so) is read again after an
    import too: the import moves the flat files' data version (issue 45)."""
    hub = start_hub(tmp_path, "granian")
    try:
        before = _listing(hub, "ticks")[0]
        week = {"dataset": "ticks", "from": "2026-11-12", "to": "2026-11-18"}
        assert [f["date"] for f in hub.get("/api/v1/flatfiles", params=week).json()["files"]] == ["2026-11-17"]
        late = tmp_path / "late.jsonl"
        late.write_text(json.dumps(_line(("brent", _ms(17, 16, 2), 3, 80.75, 2.0))) + "\n"
                        + json.dumps(_line(("brent", _ms(12, 16, 0), 1, 79.5, 1.0))) + "\n")
        out = run_cli(hub.srv.data_dir, "ticks", "import", str(late), "--clock-start", NOW)
        # Tuesday's (and Monday's, if the hub's job was between making its empty file and dropping it)
        assert out.returncode == 0 and re.search(r"ticks flat files of [12] days deleted", out.stdout), out.stdout
        after = _listing(hub, "ticks")[0]
        assert after["rows"] == before["rows"] + 1 and after["sha256"] != before["sha256"]
        body = gzip.decompress(hub.get(after["url"]).content).decode()
        assert "brent,2026-11-17T16:02:00.000+08:00,3,80.75,2.0" in body
        files = hub.get("/api/v1/flatfiles", params=week).json()["files"]
        assert [(f["date"], f["rows"]) for f in files] == [("2026-11-12", 1), ("2026-11-17", after["rows"])]
    finally:
        assert hub.srv.stop() == 0, hub.srv.output()
