"""Each flat-file listing entry carries its day's data-quality condition (SPEC 20, issue 42 item 3) on a real hub
with stored history: ZCE's Thursday, ticked every 20 minutes of its sessions, is `available`; its Friday, silent
from Thursday night's 22:40 to 13:30 (155 minutes of session against --stale-after 3600 s), is `degraded` with one
gap, exactly as GET /api/v1/quality reports those days (one definition). The all-venue Thursday is `missing`: the
worst over the venues trading that date, and no other venue's feed ticked.

The hub runs on a fake clock (hidden --clock-start, Friday 2026-11-20 15:03 in Shanghai: ZCE closed at 15:00, so
its Thursday and Friday files are listed; the all-venue Friday waits for ICE's close). Granian only: the listing is
framework-neutral code (the runtimes are compared by test_flatfile_venues.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from server.market.timefmt import TZ
from tests.conftest import ServerProcess, run_cli
from tests.contract.test_flatfile_routes import Hub, _line

NOW = "2026-11-20T15:03:00+08:00"
RANGE = {"from": "2026-11-19", "to": "2026-11-20", "dataset": "ticks"}
SESSIONS = [((18, 21, 0), (18, 23, 0)), ((19, 9, 0), (19, 10, 15)), ((19, 10, 30), (19, 11, 30)),
            ((19, 13, 30), (19, 15, 0))]  # ZCE's Thursday trading day (Wednesday's night first)


def _at(day: int, hh: int, mm: int) -> datetime:
    return datetime(2026, 11, day, hh, mm, tzinfo=TZ)


def _every_20_min(shift_days: int, skip: tuple[datetime, datetime] | None = None) -> list[datetime]:
    """A tick every 20 minutes inside ZCE's sessions of Thursday's trading day moved by `shift_days`, none in
    `skip` (from, to)."""
    out = []
    for start, end in SESSIONS:
        t, stop = _at(*start) + timedelta(days=shift_days), _at(*end) + timedelta(days=shift_days)
        while t < stop:
            if skip is None or not skip[0] <= t < skip[1]:
                out.append(t)
            t += timedelta(minutes=20)
    return out


THURSDAY = _every_20_min(0)
FRIDAY = _every_20_min(1, skip=(_at(20, 9, 0), _at(20, 13, 30)))  # Friday morning: nothing


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    tmp = tmp_path_factory.mktemp("flat-quality")
    data = tmp / "data"
    data.mkdir()
    ticks = tmp / "ticks.jsonl"
    ticks.write_text("".join(json.dumps(_line(("methanol", int(t.timestamp() * 1000), k + 1, 2400.0 + k, 1.0)))
                             + "\n" for k, t in enumerate(THURSDAY + FRIDAY)))
    imported = run_cli(data, "ticks", "import", str(ticks), "--clock-start", NOW)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    feed = tmp / "feed.jsonl"
    feed.write_text("")
    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{feed}", "--clock-start", NOW, "--engine", "memory",
                        "--stale-after", "3600")
    started = Hub(srv, srv.create_key("professional")[1], srv.create_key("free")[1])
    yield started
    assert srv.stop() == 0, srv.output()


def _files(hub: Hub, **params: str) -> list[dict[str, Any]]:
    r = hub.get("/api/v1/flatfiles", params={**RANGE, **params})
    assert r.status_code == 200, r.text
    return r.json()["files"]  # type: ignore[no-any-return]


def _quality(hub: Hub) -> dict[str, dict[str, Any]]:
    r = hub.get("/api/v1/quality", params={"venue": "zce", "from": RANGE["from"], "to": RANGE["to"]})
    assert r.status_code == 200, r.text
    return {d["date"]: d for d in r.json()["days"]}


def test_a_venues_listing_carries_each_days_condition(hub: Hub) -> None:
    files = _files(hub, venue="zce")
    assert [(f["date"], f["condition"], f["gaps"]) for f in files] == [
        ("2026-11-19", "available", 0), ("2026-11-20", "degraded", 1)]
    assert files[1]["rows"] == len(FRIDAY)
    assert set(files[0]) == {"venue", "dataset", "date", "format", "url", "bytes", "sha256", "rows", "condition",
                             "gaps"}
    # the same days as /api/v1/quality reports them (the same code), asked before or after the listing
    days = _quality(hub)
    assert {d: (q["condition"], len(q["gaps"])) for d, q in days.items()} == {
        f["date"]: (f["condition"], f["gaps"]) for f in files}
    assert days["2026-11-20"]["gaps"] == [{"from": "2026-11-19T22:40:00.000+08:00",
                                           "to": "2026-11-20T13:30:00.000+08:00"}]
    assert _files(hub, venue="zce", format="parquet")[1]["condition"] == "degraded"  # asked again: kept


def test_the_all_venue_listing_carries_the_worst_condition(hub: Hub) -> None:
    files = _files(hub)
    assert [f["date"] for f in files] == ["2026-11-19"]  # Friday's waits for ICE's close
    # ZCE's Thursday is available, but every other venue trading that date has no tick at all: missing
    assert files[0]["condition"] == "missing" and files[0]["gaps"] == 0 and "venue" not in files[0]


def test_a_dce_listing_has_no_files_and_a_free_key_none(hub: Hub) -> None:
    assert _files(hub, venue="dce") == []  # no rows: no entries (and no condition asked)
    r = hub.get("/api/v1/flatfiles", key=hub.free, params=RANGE)
    assert r.status_code == 403 and r.json()["code"] == "plan_required", r.text


def test_an_import_measures_a_kept_day_again(hub: Hub) -> None:
    """A closed day's condition is kept in memory, but an import moves the data version: Friday's silent morning,
    imported while the hub runs, makes that day `available` with no gap on the next listing and quality read,
    without a restart. (Last in the module: it changes Friday.)"""
    assert _quality(hub)["2026-11-20"]["condition"] == "degraded"  # kept from the tests above
    morning = [t for t in _every_20_min(1) if _at(20, 9, 0) <= t < _at(20, 13, 30)]
    lines = hub.srv.data_dir.parent / "morning.jsonl"
    lines.write_text("".join(json.dumps(_line(("methanol", int(t.timestamp() * 1000), 1000 + k, 2450.0, 1.0)))
                             + "\n" for k, t in enumerate(morning)))
    imported = run_cli(hub.srv.data_dir, "ticks", "import", str(lines), "--clock-start", NOW)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    friday = _quality(hub)["2026-11-20"]
    assert (friday["condition"], friday["gaps"]) == ("available", [])
    files = _files(hub, venue="zce")
    assert [(f["date"], f["condition"], f["gaps"]) for f in files] == [
        ("2026-11-19", "available", 0), ("2026-11-20", "available", 0)]
    assert files[1]["rows"] == len(FRIDAY) + len(morning)
