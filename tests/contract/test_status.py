"""SPEC 20 items 1-3 on a real server fed by a JSONL file we control: /api/v1/status, a feed's freshness (degraded
and a `stale` frame when it goes silent in session, cleared when ticks return; nothing on a Saturday), and the data
quality of a trading day with a gap. The server runs on a fake "now" (--clock-start), with --stale-after 2."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.conftest import ServerProcess, run_cli
from tests.redis_service import REDIS_URL, fresh_prefix, require_redis

MONDAY = "2026-11-23T10:00:00+08:00"  # ICE Futures Europe (brent) is in session from 07:00 to 07:00 the next day
SATURDAY = "2026-11-28T10:00:00+08:00"  # every venue is shut
STALE_S = 2
WAIT_S = STALE_S + 8.0


def _append(path: Path, *ticks: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write("".join(json.dumps(t) + "\n" for t in ticks))


FRIDAY_S = datetime.fromisoformat("2026-11-20T20:00:00+08:00").timestamp()  # in ICE's Friday session
FRIDAY = [("brent", FRIDAY_S + dt, i + 1, 79.0 + i, 1.0) for i, dt in enumerate((0, 1, 600))]  # ts: epoch s


def _start(tmp: Path, now: str) -> tuple[ServerProcess, Path]:
    """A hub on the fake clock following a JSONL file, its archive holding Friday's ticks (the CLI's backfill)."""
    (tmp / "data").mkdir()
    backfill = tmp / "friday.jsonl"
    backfill.write_text("".join(json.dumps(dict(zip(("id", "ts", "seq", "price", "volume"), t, strict=True))) + "\n"
                                for t in FRIDAY))
    imported = run_cli(tmp / "data", "ticks", "import", str(backfill), "--clock-start", now)  # the hub's clock
    assert imported.returncode == 0, imported.stdout + imported.stderr
    feed = tmp / "ticks.jsonl"
    feed.write_text("")
    srv = ServerProcess(tmp / "data", "granian", "--feed", f"jsonl:{feed}", "--no-demo-key", "--clock-start", now,
                        "--stale-after", str(STALE_S), "--heartbeat-s", "1", "--engine", "memory")
    return srv, feed


@pytest.fixture(scope="module")
def monday(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path, str]]:
    srv, feed = _start(tmp_path_factory.mktemp("status-monday"), MONDAY)
    try:
        yield srv, feed, srv.create_key("professional")[1]
    finally:
        assert srv.stop() == 0, srv.output()


def _status(srv: ServerProcess) -> dict[str, Any]:
    resp = httpx.get(srv.base + "/api/v1/status")
    assert resp.status_code == 200 and resp.headers["cache-control"] == "no-store", resp.text
    return resp.json()  # type: ignore[no-any-return]


def _component(srv: ServerProcess, cid: str) -> str:
    return next(c["status"] for c in _status(srv)["components"] if c["id"] == cid)  # type: ignore[no-any-return]


def _wait_for(predicate: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)  # the server's stream clock runs each second: poll what it serves
    raise AssertionError(f"not seen within {WAIT_S}s: {what}")


def test_status_lists_every_component_without_a_key(monday: tuple[ServerProcess, Path, str]) -> None:
    srv, _, key = monday
    body = _status(srv)
    ids = [c["id"] for c in body["components"]]
    venues = httpx.get(srv.base + "/api/v1/venues", headers={"X-SERVICE-Key": key}).json()["venues"]
    assert ids[:4] == ["rest", "stream", "storage", "notifications"]
    assert {i for i in ids if i.startswith("feed:")} == {f"feed:{v['id']}" for v in venues}
    assert body["incidents"] == [] and body["scheduledMaintenances"] == []
    statuses = {"operational", "degraded_performance", "partial_outage", "major_outage"}
    assert all(c["status"] in statuses and c["updatedAt"].startswith("2026-11-23T10:") for c in body["components"])
    assert {c["id"]: c["status"] for c in body["components"]}["rest"] == "operational"
    # an assessment venue (no continuously traded instrument) never goes stale
    assert _component(srv, "feed:spot-me") == "operational"


async def _next_status(ws: ClientConnection, venue: str) -> dict[str, Any]:
    while True:
        msg = json.loads(await ws.recv())
        if msg["type"] == "status" and msg["venue"] == venue:
            return msg  # type: ignore[no-any-return]


def test_a_silent_feed_goes_stale_then_clears(monday: tuple[ServerProcess, Path, str]) -> None:
    srv, feed, key = monday
    now = datetime.fromisoformat(MONDAY).timestamp()

    async def scenario() -> None:
        async with connect(f"{srv.ws_base}/ws/quotes?key={key}", max_queue=None) as ws:
            await ws.send(json.dumps({"op": "subscribe", "ids": ["brent"], "reqId": 1}))
            _append(feed, {"id": "brent", "price": 80.0, "ts": now + 1})
            await asyncio.to_thread(_wait_for, lambda: _component(srv, "feed:ice-eu") == "operational", "ticks")
            stale = await asyncio.wait_for(_next_status(ws, "ice-eu"), WAIT_S)  # silence for --stale-after
            if stale["status"] == "open":  # the venue was stale before our tick (the hub had heard none since start)
                stale = await asyncio.wait_for(_next_status(ws, "ice-eu"), WAIT_S)
            assert stale["status"] == "stale" and stale["ts"].startswith("2026-11-23T10:"), stale
            assert _component(srv, "feed:ice-eu") == "degraded_performance"
            assert _status(srv)["status"]["indicator"] in ("minor", "major")
            _append(feed, {"id": "brent", "price": 80.5, "ts": now + 2})
            await asyncio.to_thread(_wait_for, lambda: _component(srv, "feed:ice-eu") == "operational", "ticks back")
            back = await asyncio.wait_for(_next_status(ws, "ice-eu"), WAIT_S)  # buffered if it came first
            assert back["status"] == "open", back

    asyncio.run(scenario())


def test_a_day_with_a_gap_lists_it(monday: tuple[ServerProcess, Path, str]) -> None:
    srv, _, key = monday

    def get(query: str) -> httpx.Response:
        return httpx.get(f"{srv.base}/api/v1/quality?{query}", headers={"X-SERVICE-Key": key})

    def friday_day() -> dict[str, Any] | None:
        days = get("venue=ice-eu&from=2026-11-19&to=2026-11-23").json()["days"]
        found = [d for d in days if d["date"] == "2026-11-20" and d["condition"] != "missing"]
        return found[0] if found else None

    day = friday_day()
    assert day is not None
    assert day["condition"] == "degraded" and day["venue"] == "ice-eu"
    assert {"from": "2026-11-20T20:00:01.000+08:00", "to": "2026-11-20T20:10:00.000+08:00"} in day["gaps"]
    assert day["gaps"][0]["to"] == "2026-11-20T20:00:00.000+08:00"  # from the session's start to the first tick
    assert day["lastModified"] == "2026-11-20T20:10:00.000+08:00"
    days = {d["date"]: d for d in get("venue=ice-eu&from=2026-11-19&to=2026-11-23").json()["days"]}
    assert list(days) == ["2026-11-19", "2026-11-20", "2026-11-23"]  # trading days only, by date
    assert days["2026-11-19"]["condition"] == "missing" and days["2026-11-19"]["lastModified"] is None
    assert days["2026-11-23"]["condition"] == "pending" and days["2026-11-23"]["lastModified"] is None  # not closed
    assert httpx.get(f"{srv.base}/api/v1/quality").status_code == 401


@pytest.mark.parametrize(("query", "field"), [
    ("from=2026-1-20", "from"), ("to=2026-W47-1", "to"), ("from=2026-11-20&to=2026-11-19", "to"),
    ("from=2025-01-01&to=2026-01-02", "to"), ("venue=nope", "venue"), ("day=2026-11-20", "day"),
])
def test_bad_quality_ranges_are_400(monday: tuple[ServerProcess, Path, str], query: str, field: str) -> None:
    srv, _, key = monday
    resp = httpx.get(f"{srv.base}/api/v1/quality?{query}", headers={"X-SERVICE-Key": key})
    assert resp.status_code == 400 and resp.headers["content-type"] == "application/problem+json", resp.text
    assert resp.json()["errors"][0]["field"] == field


def test_on_a_saturday_a_silent_feed_changes_nothing(tmp_path: Path) -> None:
    srv, _ = _start(tmp_path, SATURDAY)
    try:
        key = srv.create_key("professional")[1]

        async def frames_until(ts: str) -> list[dict[str, Any]]:
            """Every frame up to the first heartbeat stamped at or after `ts` (a barrier on the server's clock)."""
            async with connect(f"{srv.ws_base}/ws/quotes?key={key}", max_queue=None) as ws:
                await ws.send(json.dumps({"op": "subscribe", "ids": ["brent", "methanol"], "reqId": 1}))
                seen = []
                while not seen or not (seen[-1]["type"] == "heartbeat" and seen[-1]["ts"] >= ts):
                    seen.append(json.loads(await ws.recv()))
                return seen

        frames = asyncio.run(asyncio.wait_for(frames_until(f"2026-11-28T10:00:{STALE_S + 4:02d}"), WAIT_S + 10))
        assert [f for f in frames if f["type"] == "status"] == []
        feeds = [c for c in _status(srv)["components"] if c["id"].startswith("feed:")]
        assert feeds and all(c["status"] == "operational" for c in feeds), feeds
        assert _status(srv)["status"] == {"indicator": "none", "description": "All Systems Operational"}
    finally:
        assert srv.stop() == 0, srv.output()


def test_the_status_page_is_served_with_its_script(monday: tuple[ServerProcess, Path, str]) -> None:
    srv, _, _ = monday
    page = httpx.get(srv.base + "/status")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<script type="module" src="/static/status.js">' in page.text
    script = httpx.get(srv.base + "/static/status.js")
    assert script.status_code == 200 and "/api/v1/status" in script.text and "服务状态" in script.text


def test_the_redis_engine_is_a_component_of_its_own(tmp_path: Path) -> None:
    require_redis()
    srv = ServerProcess(tmp_path / "data", "granian", "--engine", "redis", "--redis-url", REDIS_URL,
                        "--redis-prefix", fresh_prefix())
    try:
        ids = [c["id"] for c in _status(srv)["components"]]
        assert ids[:5] == ["rest", "stream", "storage", "notifications", "redis"]
        assert _component(srv, "redis") == "operational"
    finally:
        assert srv.stop() == 0, srv.output()
