"""The daily uptime behind /api/v1/status/uptime (SPEC 20, docs/status.md): the SLA report's rules per Shanghai
day over rows in a real SQLite file, refreshed incrementally, and the last copy served once storage is gone."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from server.api.ops.uptime import MAX_DAYS, UptimeApi
from server.core.availability import MinuteRecord
from server.store.availability.store import AvailabilityStore
from server.store.sql.storage import SqliteStorage, StorageClosed

COMPONENTS = ["rest", "stream", "storage", "feed:ice-eu"]


def minute(shanghai: str) -> int:
    return int(datetime.fromisoformat(shanghai + "+08:00").timestamp() // 60)


def day_of(view: dict[str, Any], component: str, date: str) -> dict[str, Any]:
    comp = next(c for c in view["components"] if c["id"] == component)
    found: dict[str, Any] = next(d for d in comp["days"] if d["date"] == date)
    return found


def test_days_follow_the_sla_rules_and_the_copy_outlives_storage(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path / "data")
    store = AvailabilityStore(storage)
    now = [minute("2026-03-12T12:00") * 60 + 30.0]  # 12:00:30 in Shanghai: 12:00 is in progress
    gap = range(minute("2026-03-11T10:00"), minute("2026-03-11T10:30"))  # no hub: down for all but a shut feed
    rows = [MinuteRecord("h:1", m) for m in range(minute("2026-03-11T00:00"), minute("2026-03-12T12:00"))
            if m not in gap]
    rows[100].requests, rows[100].errors = 100, 6  # over 5% 5xx: rest down that minute only
    api = UptimeApi(store, COMPONENTS, lambda venue, m: False, lambda: now[0])

    async def run() -> None:
        await store.add(rows)
        await api.refresh()
        view = api.view(MAX_DAYS)
        assert view["asOf"] == "2026-03-12T12:00:30.000+08:00" and view["days"] == 90
        rest = next(c for c in view["components"] if c["id"] == "rest")
        assert len(rest["days"]) == 90 and rest["days"][0]["date"] == "2025-12-13"
        assert rest["days"][-1]["date"] == "2026-03-12"
        assert day_of(view, "rest", "2026-03-10") == {"date": "2026-03-10", "availability": None, "downMinutes": 0}
        assert day_of(view, "rest", "2026-03-11") == {"date": "2026-03-11", "availability": 97.847,
                                                       "downMinutes": 31}
        assert day_of(view, "storage", "2026-03-11")["downMinutes"] == 30
        assert day_of(view, "feed:ice-eu", "2026-03-11") == {"date": "2026-03-11", "availability": 100.0,
                                                              "downMinutes": 0}
        assert day_of(view, "rest", "2026-03-12") == {"date": "2026-03-12", "availability": 100.0,
                                                       "downMinutes": 0}
        assert rest["availability"] == round(100 * (2160 - 31) / 2160, 3) and rest["downMinutes"] == 31
        short = api.view(2)
        assert [d["date"] for d in short["components"][0]["days"]] == ["2026-03-11", "2026-03-12"]
        # the next day: the copy moves on a day, 12 March is read again and its afternoon without rows is down
        now[0] = minute("2026-03-13T00:00") * 60 + 30.0
        await api.refresh()
        view = api.view(MAX_DAYS)
        assert view["components"][0]["days"][-1] == {"date": "2026-03-13", "availability": None, "downMinutes": 0}
        assert day_of(view, "stream", "2026-03-12") == {"date": "2026-03-12", "availability": 50.0,
                                                         "downMinutes": 720}
        assert day_of(view, "stream", "2026-03-11")["downMinutes"] == 30  # kept from the first read
        storage.close()
        with pytest.raises(StorageClosed):  # storage is gone: the refresh fails, the copy stays
            await api.refresh()
        assert api.view(MAX_DAYS) == view

    asyncio.run(run())
