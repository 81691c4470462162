"""A dedicated data source's own flat files (SPEC 20 with SPEC 18, docs/ingest.md "Flat files") on real hubs over one
data dir with a live feed's durable history.

At 14:50 Shanghai on Wednesday 2026-11-18 (hidden --clock-start) the account publishes ticks of its declared ZCE
instrument stamped minutes or hours ago, in three requests: each lands in its own minute's bar, and a line that
would not (stamped before a bar already published, or in a closed trading day) is refused with its reason. The hub
stops; a hub started at 15:03 (ZCE closed at 15:00, its files exist from 15:02) makes the source's day files ahead,
with no request (polled on disk); the 1m file's rows are the ticks sent, minute by minute; the owner's read key lists
and downloads them (ETag, 304, Range), any other key gets 404 and the shared files never hold them. A later
declaration leaves the day's files as they were; `ticks import` drops them and the next listing has the new rows (a
new sha256). A hub started a week later with a 5-day ticks retention deletes the source's ticks files, not its
candles."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.market.timefmt import TZ
from tests import poll
from tests.conftest import ServerProcess, run_cli
from tests.contract.test_ingest import INSTRUMENT, PASSWORD, account, ingest, key

DAY = "2026-11-18"
PUBLISH_AT = "2026-11-18T14:50:00+08:00"
NOW = "2026-11-18T15:03:00+08:00"
WEEK = {"from": "2026-11-16", "to": DAY}


def _ts(hh: int, mm: int, ss: int = 0, day: int = 18) -> float:
    return datetime(2026, 11, day, hh, mm, ss, tzinfo=TZ).timestamp()


def _line(ts: float, price: float, volume: float) -> dict[str, Any]:
    return {"id": "acme.blend", "ts": ts, "price": price, "volume": volume}


# (the lines of each request, the 1-based numbers of the lines refused as late)
BATCHES = [
    ([_line(_ts(9, 30, 5), 100.0, 1), _line(_ts(9, 30, 20), 103.5, 2), _line(_ts(9, 30, 50), 99.25, 1),
      _line(_ts(9, 31, 10), 101.0, 4), _line(_ts(10, 5), 102.0, 1), _line(_ts(10, 5, 59), 102.5, 3)], ()),
    ([_line(_ts(9, 45), 150.0, 1),  # before the 10:05 bar published in the request before
      _line(_ts(10, 0, day=17), 90.0, 1),  # Tuesday's trading day closed
      _line(_ts(13, 45, 10), 104.0, 2), _line(_ts(13, 45, 40), 105.0, 1), _line(_ts(13, 50, 30), 106.0, 1),
      _line(_ts(13, 49), 50.0, 1)], (1, 2, 6)),  # before the 13:50 line of this same request
    ([_line(_ts(14, 40), 107.0, 5)], ()),
]
TAKEN = [line for lines, late in BATCHES for n, line in enumerate(lines, 1) if n not in late]


until = partial(poll.until, every=0.1)  # this module's wait and polling interval


def _hub(data: Path, runtime: str, clock: str, *extra: str) -> ServerProcess:
    return ServerProcess(data, runtime, "--feed", f"jsonl:{data.parent / 'feed.jsonl'}", "--clock-start", clock,
                         "--engine", "memory", *extra)


def _sidecars(data: Path, dataset: str) -> list[Path]:
    return [data / "flatfiles" / "sources" / "acme" / dataset / f"{DAY}.{fmt}.json" for fmt in ("csv.gz", "parquet")]


@pytest.fixture(scope="module", params=["granian", "robyn"])
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp: Path = tmp_path_factory.mktemp(f"source-files-{request.param}")
    (tmp / "feed.jsonl").write_text("")
    data = tmp / "data"
    first = _hub(data, request.param, PUBLISH_AT)
    acme = account(first, "acme@example.com", namespace="acme")
    assert acme.post("/api/console/instruments", json={**INSTRUMENT, "id": "acme.blend", "venue": "zce"}
                     ).status_code == 201
    publisher, reader = key(acme, "ingest"), key(acme)
    other = key(account(first, "other@example.com", namespace="other"))
    answers = [until(lambda lines=lines: (r := ingest(first, publisher, lines)).status_code == 200 and r.json())
               for lines, _late in BATCHES]  # the first waits for the key's first refresh
    assert first.stop() == 0, first.output()
    srv = _hub(data, request.param, NOW)
    held = {"srv": srv, "data": data, "answers": answers, "reader": reader, "other": other,
            "pro": srv.create_key("professional")[1], "runtime": request.param}
    yield held
    assert held["srv"].stop() == 0, held["srv"].output()  # the last test's hub, when it started one


def _get(hub: dict[str, Any], who: str, path: str, **kw: Any) -> httpx.Response:
    headers = {"X-SERVICE-Key": hub[who], **kw.pop("headers", {})}
    return httpx.get(hub["srv"].base + path, headers=headers, timeout=10.0, **kw)


def _files(hub: dict[str, Any], **params: str) -> list[dict[str, Any]]:
    r = _get(hub, "reader", "/api/v1/flatfiles", params={**WEEK, "source": "acme", **params})
    assert r.status_code == 200, r.text
    return r.json()["files"]  # type: ignore[no-any-return]


def _rows(hub: dict[str, Any], url: str) -> list[dict[str, str]]:
    r = _get(hub, "reader", url)
    assert r.status_code == 200, r.text
    return list(csv.DictReader(io.StringIO(gzip.decompress(r.content).decode())))


def test_late_lines_are_refused_with_their_reason_and_the_others_kept(hub: dict[str, Any]) -> None:
    for (lines, late), answer in zip(BATCHES, hub["answers"], strict=True):
        assert answer["accepted"] == len(lines) - len(late), answer
        assert [r["line"] for r in answer["rejected"]] == list(late), answer
        assert all(r["error"].startswith("late tick: ") for r in answer["rejected"]), answer
    reasons = [r["error"] for r in hub["answers"][1]["rejected"]]
    assert "newest 1m bar (2026-11-18T10:05:00.000+08:00)" in reasons[0]
    assert "trading day 2026-11-17" in reasons[1] and "2026-11-18T13:50:00.000+08:00" in reasons[2]


def test_the_files_are_made_ahead_and_the_1m_rows_are_the_ticks_sent(hub: dict[str, Any]) -> None:
    data = hub["data"]
    made = [*_sidecars(data, "ticks"), *_sidecars(data, "candles-1m"), *_sidecars(data, "candles-1d")]
    assert until(lambda: all(p.exists() for p in made)), [p for p in made if not p.exists()]  # no request made them
    sidecar = json.loads(_sidecars(data, "candles-1m")[0].read_text())
    files = {(e["dataset"], e["date"]): e for e in _files(hub)}
    assert files[("candles-1m", DAY)]["sha256"] == sidecar["sha256"]  # the listing serves the file made ahead
    bars: dict[float, list[float]] = {}
    for t in TAKEN:  # each minute's open, high, low, close, volume from the ticks sent (in time order)
        start = t["ts"] // 60 * 60
        bar = bars.setdefault(start, [t["price"], t["price"], t["price"], t["price"], 0.0])
        bar[1:] = max(bar[1], t["price"]), min(bar[2], t["price"]), t["price"], bar[4] + t["volume"]
    rows = _rows(hub, files[("candles-1m", DAY)]["url"])
    assert len(rows) == len(bars) == 6, rows
    for row, (start, want) in zip(rows, sorted(bars.items()), strict=True):
        assert row["id"] == "acme.blend" and datetime.fromisoformat(row["t"]).timestamp() == start, row
        assert [float(row[c]) for c in "ohlcv"] == want, (row, want)
    ticks = _rows(hub, files[("ticks", DAY)]["url"])
    assert [(float(r["price"]), float(r["volume"])) for r in ticks] == [(t["price"], t["volume"]) for t in TAKEN]
    daily = _rows(hub, files[("candles-1d", DAY)]["url"])
    assert [[float(daily[0][c]) for c in "ohlcv"]] == [[100.0, 107.0, 99.25, 107.0, 21.0]] and len(daily) == 1


def test_the_owner_downloads_its_own_files(hub: dict[str, Any]) -> None:
    files = _files(hub)
    assert {e["source"] for e in files} == {"acme"}
    entry = next(e for e in files if e["dataset"] == "ticks" and e["date"] == DAY)
    assert entry["url"] == f"/api/v1/flatfiles/source/acme/ticks/{DAY}.csv.gz" and entry["rows"] == len(TAKEN)
    whole = _get(hub, "reader", entry["url"])
    assert whole.status_code == 200 and whole.headers["etag"] == f'"{entry["sha256"]}"'
    assert f'filename="acme-ticks-{DAY}.csv.gz"' in whole.headers["content-disposition"]
    assert _get(hub, "reader", entry["url"], headers={"If-None-Match": whole.headers["etag"]}).status_code == 304
    part = _get(hub, "reader", entry["url"], headers={"Range": "bytes=10-"})
    assert part.status_code == 206 and part.content == whole.content[10:]
    assert _get(hub, "reader", entry["url"].replace(".csv.gz", ".parquet")).status_code == 200


def test_any_other_key_gets_404_and_the_shared_files_hold_none_of_it(hub: dict[str, Any]) -> None:
    url = f"/api/v1/flatfiles/source/acme/ticks/{DAY}.csv.gz"
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
    assert _get(hub, "reader", f"/api/v1/flatfiles/source/other/ticks/{DAY}.csv.gz").status_code == 404
    assert json.loads(_get(hub, "reader", "/api/v1/flatfiles/source/acme/ticks/2026-11-19.csv.gz").text)["code"] \
        == "not_found"  # not closed yet


def test_a_declaration_keeps_the_days_made_and_an_import_remakes_them(hub: dict[str, Any]) -> None:
    srv, data = hub["srv"], hub["data"]
    before = {(e["dataset"], e["date"]): e["sha256"] for e in _files(hub)}
    acme = srv.client()
    token = acme.post("/api/auth/login", json={"email": "acme@example.com", "password": PASSWORD}).json()["token"]
    acme.headers["Authorization"] = "Bearer " + token
    assert acme.post("/api/console/instruments", json={**INSTRUMENT, "id": "acme.second", "venue": "zce"}
                     ).status_code == 201
    assert {(e["dataset"], e["date"]): e["sha256"] for e in _files(hub)} == before  # days made: as they were
    feed = data.parent / "import.jsonl"
    feed.write_text(json.dumps(_line(_ts(14, 55), 108.0, 2)) + "\n")
    out = run_cli(data, "ticks", "import", str(feed), "--clock-start", NOW)
    assert out.returncode == 0 and "ticks flat files of" in out.stdout, out.stdout + out.stderr
    assert not any(p.exists() for p in _sidecars(data, "ticks"))  # the source's too
    assert all(p.exists() for p in _sidecars(data, "candles-1m"))  # another dataset: kept
    after = {(e["dataset"], e["date"]): e for e in _files(hub)}
    assert after[("ticks", DAY)]["sha256"] != before[("ticks", DAY)] and after[("ticks", DAY)]["rows"] == len(TAKEN) + 1
    assert after[("candles-1m", DAY)]["sha256"] == before[("candles-1m", DAY)]


def test_the_retention_deletes_them(hub: dict[str, Any]) -> None:
    assert hub["srv"].stop() == 0, hub["srv"].output()
    data = hub["data"]
    assert _sidecars(data, "ticks")[0].exists()  # the csv.gz made again by the import test's listing
    hub["srv"] = _hub(data, hub["runtime"], "2026-11-25T12:00:00+08:00", "--retention", "ticks=5")
    assert until(lambda: not any(p.exists() for p in _sidecars(data, "ticks")))
    assert all(p.exists() for p in _sidecars(data, "candles-1m"))  # 1m's retention: a year
    files = _files(hub, to="2026-11-25")
    assert {(e["dataset"], e["date"]) for e in files} == {("candles-1m", DAY), ("candles-1d", DAY)}, files
    assert _get(hub, "other", "/api/v1/flatfiles", params={"source": "acme"}).status_code == 404
