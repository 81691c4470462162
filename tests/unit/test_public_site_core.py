"""Public-site cores without a server: market snapshots and ETags, strict query integers, records + jobs."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from server.api.core.encoding import etag_matches
from server.api.site.fields import int_params
from server.api.site.market import MarketSnapshots
from server.core.errors import ApiError
from server.market.catalogue import default_catalogue
from server.market.state import build_demo_state
from server.market.tick import Tick
from server.store.site.records import Cooperation, Inquiry, new_record_id
from server.store.sql.db import open_db
from server.store.sql.sqlite_sync import OutboxRepo, RecordRepo

NOW = 1_790_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def test_snapshot_serialised_once_per_refresh_with_max_age_countdown() -> None:
    clock = Clock()
    clock.t = NOW - NOW % 60  # on a refresh boundary
    state, _feed = build_demo_state(default_catalogue(), 1, NOW)
    snaps = MarketSnapshots(state, 60.0, clock)
    first = snaps.current
    doc = orjson.loads(first.whole.data)
    assert doc["refreshSeconds"] == 60 and doc["demo"] is True and len(doc["categories"]) == 8
    assert set(first.categories) == {c["id"] for c in doc["categories"]}
    assert orjson.loads(first.categories["fx"].data)["id"] == "fx"
    assert snaps.max_age() == 60
    clock.t += 59.5
    assert snaps.max_age() == 0
    clock.t += 1
    assert not snaps.refresh() and snaps.current is first  # unchanged market: same bytes, same ETag
    assert snaps.max_age() == 59 and snaps.builds == 1  # counts down to the next boundary
    state.apply([Tick(0, float(state.prices[0]) + 1.0, clock.t)])
    clock.t += 60
    assert snaps.refresh() and snaps.builds == 2
    assert snaps.current.whole.etag != first.whole.etag
    assert orjson.loads(snaps.current.whole.data)["updated"] != doc["updated"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', snaps.current.whole.etag)


@pytest.mark.parametrize(
    ("header", "match"),
    [(None, False), ("", False), ('"abc"', True), ('W/"abc"', True), ('"x", "abc"', True), ("*", True),
     ('"abcd"', False), ("abc", False)],
)
def test_if_none_match(header: str | None, match: bool) -> None:
    assert etag_matches(header, '"abc"') is match


@pytest.mark.parametrize("raw", ["-1", "+5", " 5", "5 ", "1.0", "1e2", "", "0x10", "١٢", "9" * 13, "101"])
def test_int_params_are_strict(raw: str) -> None:
    with pytest.raises(ApiError) as err:
        int_params({"limit": raw}, limit=(20, 1, 100))
    assert err.value.status == 400 and err.value.errors == [
        {"field": "limit", "message": "limit must be an integer from 1 to 100"}]


def test_int_params_defaults_and_all_errors_at_once() -> None:
    assert int_params({}, limit=(20, 1, 100), offset=(0, 0, 10)) == {"limit": 20, "offset": 0}
    assert int_params({"limit": "100", "offset": "007"}, limit=(20, 1, 100), offset=(0, 0, 10)) == {
        "limit": 100, "offset": 7}
    with pytest.raises(ApiError) as err:
        int_params({"limit": "0", "offset": "x"}, limit=(20, 1, 100), offset=(0, 0, 10))
    assert [e["field"] for e in err.value.errors or []] == ["limit", "offset"]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path / "data")
    yield c
    c.close()


def test_record_ids_are_prefixed_and_time_ordered() -> None:
    a, b = new_record_id("inq", NOW), new_record_id("inq", NOW + 0.002)
    assert re.fullmatch(r"inq_[0-9A-HJKMNP-TV-Z]{26}", a)
    assert a < b and a != new_record_id("inq", NOW)


def test_records_and_their_jobs_are_written_together(conn: sqlite3.Connection) -> None:
    channels = (("generic", "https://hooks.example/in"), ("email", "ops@example.com"))
    repo = RecordRepo(conn, lambda: NOW, channels)
    inq = repo.add_inquiry(Inquiry("usr_1", "a@example.com", "甲醇", 100.0, "t", "hi", "宁波", "+86 21 5555 0000"))
    coop = repo.add_cooperation(Cooperation("Acme", "Li Lei", "li@example.com", None, "data"))
    jobs = OutboxRepo(conn).for_record("inquiry", inq.id)
    assert sorted((j.channel, j.target) for j in jobs) == sorted(channels)
    payload = jobs[0].payload
    assert payload["id"] == inq.id and payload["createdAt"] == inq.created_at == "2026-09-21T22:13:20.000+08:00"
    assert payload["product"] == "甲醇" and payload["status"] == "received"
    (coop_job, _) = OutboxRepo(conn).for_record("cooperation", coop.id)
    assert coop_job.payload["email"] == "li@example.com" and coop_job.created_at == NOW
    assert not conn.in_transaction


def test_a_job_that_cannot_be_written_rolls_the_record_back(conn: sqlite3.Connection) -> None:
    repo = RecordRepo(conn, lambda: NOW, [("generic", None)])  # type: ignore[list-item]  # NOT NULL target
    with pytest.raises(sqlite3.IntegrityError):
        repo.add_cooperation(Cooperation("Acme", "Li Lei", None, "+86 10 1234 5678", "other"))
    assert conn.execute("SELECT COUNT(*) FROM cooperations").fetchone()[0] == 0
    assert not conn.in_transaction
