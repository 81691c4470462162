"""SPEC 20's 90 days of daily uptime (`GET /api/v1/status/uptime`, docs/status.md) on a real hub with its own clock.

As in tests/contract/test_sla.py, a hub runs on `--clock-start` (a fixed instant advancing in real time): a first hub
starts ten minutes before a Shanghai midnight and is killed with SIGKILL once its second minute is recorded; a
second hub starts on the same data dir with its clock a day and a half later. The days in between had no hub, so
they are down, and the route says so per Shanghai day with the SLA report's rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import partial
from typing import Any

import httpx
import pytest

from server.market.timefmt import iso
from tests import poll
from tests.conftest import ServerProcess, open_database

FIRST = datetime.fromisoformat("2026-03-10T23:50:50+08:00").timestamp()  # a Tuesday, 10 minutes before midnight
SECOND = datetime.fromisoformat("2026-03-12T10:00:00+08:00").timestamp()
MINUTE = 60


until = partial(poll.until, every=0.2)  # this module's wait and polling interval


def recorded(srv: ServerProcess) -> set[int]:
    conn = open_database(srv.data_dir)
    try:
        return {int(row[0]) for row in conn.execute("SELECT minute FROM availability_minutes")}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, set[int]]]:
    """The second hub, and the minutes the first one recorded before it was killed."""
    data_dir = tmp_path_factory.mktemp("uptime") / "data"
    first = ServerProcess(data_dir, "granian", "--clock-start", iso(FIRST))
    try:
        entered = int(FIRST // MINUTE) + 1  # 23:51's heartbeat, written as the minute starts
        assert until(lambda: entered in recorded(first), timeout=40), first.output()
    finally:
        first.kill()
    before = recorded(first)
    second = ServerProcess(data_dir, "granian", "--clock-start", iso(SECOND))
    try:
        yield second, before
    finally:
        assert second.stop() == 0, second.output()


def uptime(c: httpx.Client, **params: str) -> dict[str, Any]:
    body: dict[str, Any] = until(lambda: (r := c.get("/api/v1/status/uptime", params=params).json())["asOf"] and r,
                                 timeout=20)
    assert body, "the first copy was never computed"
    return body


def test_days_without_a_hub_are_down_per_shanghai_day(hub: tuple[ServerProcess, set[int]]) -> None:
    srv, before = hub
    resp = srv.client().get("/api/v1/status/uptime")
    assert resp.status_code == 200 and resp.headers["cache-control"] == "no-store"
    body = uptime(srv.client())
    assert body["days"] == 90 and body["timezone"] == "Asia/Shanghai"
    assert body["asOf"].startswith("2026-03-12T10:0")  # the hub's clock, not the machine's
    ids = [c["id"] for c in body["components"]]
    assert ids[:3] == ["rest", "stream", "storage"] and "feed:ice-eu" in ids and "notifications" not in ids
    for comp in body["components"]:
        days = {d["date"]: d for d in comp["days"]}
        assert len(comp["days"]) == 90 and comp["days"][-1]["date"] == "2026-03-12"
        assert days["2026-03-09"] == {"date": "2026-03-09", "availability": None, "downMinutes": 0}  # before start
        if comp["id"].startswith("feed:"):  # down only in the venue's session minutes
            assert 0 <= days["2026-03-11"]["downMinutes"] <= 1440
            continue
        # the first day counts from the first start (23:50): its minutes without a row are down
        down = 10 - len(before)
        assert days["2026-03-10"] == {"date": "2026-03-10", "availability": round(100 * (10 - down) / 10, 3),
                                      "downMinutes": down}, comp["id"]
        assert days["2026-03-11"] == {"date": "2026-03-11", "availability": 0.0, "downMinutes": 1440}
        assert days["2026-03-12"]["downMinutes"] == 600  # midnight to 10:00, when the second hub started
        assert comp["downMinutes"] == down + 1440 + 600
    short = uptime(srv.client(), days="2")
    assert short["days"] == 2 and [d["date"] for d in short["components"][0]["days"]] == ["2026-03-11", "2026-03-12"]


@pytest.mark.parametrize("query", [{"days": "0"}, {"days": "91"}, {"days": "-1"}, {"days": "1.5"}, {"days": "ten"},
                                   {"days": ""}])
def test_a_bad_days_is_a_400_naming_it(hub: tuple[ServerProcess, set[int]], query: dict[str, str]) -> None:
    srv, _ = hub
    resp = srv.client().get("/api/v1/status/uptime", params=query)
    assert resp.status_code == 400 and resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == "invalid_parameter" and body["errors"][0]["field"] == "days", body


def test_an_unknown_parameter_is_a_400(hub: tuple[ServerProcess, set[int]]) -> None:
    srv, _ = hub
    resp = srv.client().get("/api/v1/status/uptime", params={"day": "5"})
    assert resp.status_code == 400 and resp.json()["code"] == "unknown_parameter"
