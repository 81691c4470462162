"""SPEC 20's availability rules (server/core/availability.py), the recorder's minutes (server/api/ops/availability.py)
and the table's repository on both databases (server/store/availability/minutes.py). docs/sla.md states the rules."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from server.api.ops.availability import AvailabilityRecorder, Readings, hub_id
from server.core.availability import (
    MinuteRecord,
    Span,
    availability,
    counted_span,
    down_minutes,
    month_span,
    percentile,
    ranges,
)
from server.core.metrics import LATENCY_BUCKETS, HttpMetrics, Registry
from server.market.freshness import Level
from server.store.accounts.console import Db, PgDb, SqliteDb
from server.store.availability.minutes import PG_MIGRATION, SQLITE_TABLE, MinutesRepo

ALL = ["rest", "stream", "storage", "feed:shfe"]
SPAN = Span(100, 110)


def never_open(venue: str, minute: int) -> bool:
    return False


def rows(*records: MinuteRecord) -> list[MinuteRecord]:
    return list(records)


def test_a_minute_no_hub_recorded_is_down_for_all_and_for_a_feed_only_in_session() -> None:
    recorded = [MinuteRecord("a", m) for m in range(100, 110) if m not in (103, 104)]
    down = down_minutes(recorded, SPAN, ALL, never_open)
    assert down == {"rest": [103, 104], "stream": [103, 104], "storage": [103, 104], "feed:shfe": []}
    down = down_minutes(recorded, SPAN, ALL, lambda venue, minute: venue == "shfe" and minute == 104)
    assert down["feed:shfe"] == [104]
    assert ranges([103, 104, 107]) == [(103, 105), (107, 108)]


def test_rest_is_down_over_5_percent_5xx_summed_over_hubs() -> None:
    def at(errors: int, requests: int, other: int = 0) -> list[int]:
        recs = rows(MinuteRecord("a", 100, requests=requests, errors=errors), MinuteRecord("b", 100, requests=other))
        return down_minutes(recs, Span(100, 101), ["rest"], never_open)["rest"]
    assert at(1, 20) == []  # exactly 5%: up
    assert at(2, 20) == [100]
    assert at(2, 20, other=30) == []  # 2 of 50 over both hubs
    assert at(0, 0) == []  # no requests: up


def test_a_component_is_up_when_any_hub_served_it_half_the_minute() -> None:
    def down(*outs: tuple[int, int]) -> list[int]:
        recs = [MinuteRecord(f"h{i}", 100, samples=s, outages={"stream": o} if o else {}) for i, (o, s) in
                enumerate(outs)]
        return down_minutes(recs, Span(100, 101), ["rest", "stream", "storage"], never_open)["stream"]
    assert down((31, 60)) == [100]
    assert down((30, 60)) == []  # half: up
    assert down((60, 60), (0, 60)) == []  # another hub served it
    assert down((60, 60), (45, 60)) == [100]
    assert down((0, 0)) == []  # a heartbeat without samples: up


def test_counted_minutes_start_at_the_first_start_and_stop_before_the_minute_in_progress() -> None:
    march = month_span(2026, 3)
    assert march.first * 60 == int(datetime.fromisoformat("2026-03-01T00:00:00+08:00").timestamp())
    assert march.end * 60 == int(datetime.fromisoformat("2026-04-01T00:00:00+08:00").timestamp())
    assert counted_span(march.first, march.end, None, march.end + 5).minutes == 0  # nothing ever recorded
    assert counted_span(march.first, march.end, march.end + 10, march.end + 20).minutes == 0  # before the start
    assert counted_span(march.first, march.end, march.first - 10, march.first - 5).minutes == 0  # future month
    span = counted_span(march.first, march.end, march.first + 100, march.first + 160)
    assert (span.first, span.end) == (march.first + 100, march.first + 160)
    assert availability(0, 0) is None and availability(1000, 1) == 99.9


def test_percentiles_are_the_bucket_bounds_holding_them() -> None:
    buckets = [0] * (len(LATENCY_BUCKETS) + 1)
    buckets[0], buckets[3] = 98, 2  # 98 at <= 0.5 ms, 2 at <= 5 ms
    assert percentile(buckets, LATENCY_BUCKETS, 0.5) == 0.0005
    assert percentile(buckets, LATENCY_BUCKETS, 0.99) == 0.005
    buckets[-1] = 1000  # over the last bound: reads as the last bound
    assert percentile(buckets, LATENCY_BUCKETS, 0.99) == LATENCY_BUCKETS[-1]
    assert percentile([0] * 13, LATENCY_BUCKETS, 0.5) is None


class Levels:
    def __init__(self) -> None:
        self.storage = Level.OPERATIONAL

    def __call__(self, now: float) -> list[tuple[str, str, Level]]:
        return [("rest", "REST", Level.OPERATIONAL), ("storage", "Storage", self.storage)]


def test_the_recorder_writes_a_heartbeat_then_each_finished_minute_from_the_counters() -> None:
    registry = Registry()
    http = HttpMetrics(registry)
    frames = registry.counter("frames", "f")
    feed = registry.histogram("feed", "f")
    levels = Levels()
    readings = Readings(http, lambda: {"quotes"}, [frames], feed)
    rec = AvailabilityRecorder(hub_id("h", 8000, 0), None, readings, levels, lambda: 0.0)  # type: ignore[arg-type]
    http.requests.inc((("route", "quotes"), ("status", "200")), 7)  # before the start: not this hub's minutes
    rec.begin(6000.5)  # minute 100
    assert [(r.minute, r.samples) for r in rec.pending] == [(100, 0)]
    cell = http.requests.cell((("route", "quotes"), ("status", "200")))
    cell[0] += 18  # the hot path's count
    http.requests.inc((("route", "quotes"), ("status", "503")), 2)
    http.requests.inc((("route", "news"), ("status", "500")), 5)  # not a keyed route
    http.latency.observe(0.002, (("route", "quotes"),))
    frames.inc(amount=40)
    for second in range(1, 60):
        levels.storage = Level.MAJOR if second <= 40 else Level.OPERATIONAL
        rec.second(6000.0 + second)
    rec.second(6060.2)  # minute 101 begins
    heartbeat, done, nxt = rec.pending
    assert (done.minute, done.requests, done.errors, done.frames, done.samples) == (100, 20, 2, 40, 59)
    assert done.outages == {"storage": 40} and sum(done.latency) == 1 and done.latency[2] == 1
    assert (nxt.minute, nxt.requests, nxt.samples) == (101, 0, 0) and heartbeat.minute == 100
    assert rec.current.minute == 101 and rec.current.samples == 1


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Db]:
    if request.param == "sqlite":
        conn = sqlite3.connect(tmp_path / "m.sqlite3", isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute(SQLITE_TABLE)
        yield SqliteDb(conn)
        conn.close()
        return
    from tests.pg_service import pg_schema

    with pg_schema() as url, psycopg.connect(url, autocommit=True, row_factory=dict_row) as pg:
        pg.execute(PG_MIGRATION)
        yield PgDb(pg)


def test_rows_are_added_to_never_replaced_on_both_databases(db: Db) -> None:
    repo = MinutesRepo(db)
    assert repo.first_minute() is None
    lat = [0] * 13
    lat[1] = 4
    repo.add([MinuteRecord("h:1", 100), MinuteRecord("h:1", 100, requests=4, errors=1, latency=lat, samples=30,
                                                     outages={"storage": 3})])
    repo.add([MinuteRecord("h:1", 100, requests=6, latency=lat, samples=20, outages={"storage": 2, "stream": 1}),
              MinuteRecord("h:2", 101, frames=9)])
    got = repo.between(100, 102)
    assert [(r.hub, r.minute) for r in got] == [("h:1", 100), ("h:2", 101)]
    one = got[0]
    assert (one.requests, one.errors, one.samples, one.latency[1]) == (10, 1, 50, 8)
    assert one.outages == {"storage": 5, "stream": 1} and got[1].frames == 9
    assert repo.first_minute() == 100 and repo.between(101, 102)[0].hub == "h:2"
