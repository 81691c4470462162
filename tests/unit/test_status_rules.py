"""SPEC 20's pure rules (market/freshness.py, market/quality.py) and /api/v1/status answering while storage hangs."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import date, datetime

import orjson

from server.api.core.types import Request
from server.api.ops.status import Component, StatusApi, StorageProbe, up_down
from server.market.freshness import MAJOR_S, Freshness, Level, freshness_of, in_session_ms
from server.market.quality import Condition, day_quality, silences, worst
from server.market.venues.book import VenueBook


@dataclass(frozen=True)
class W:
    start_ms: int
    end_ms: int


S = 1000
DAY = [W(0, 100 * S), W(200 * S, 300 * S)]  # a session, a 100 s break, a session


def test_in_session_time_skips_the_break() -> None:
    assert in_session_ms(DAY, 50 * S, 250 * S) == 100 * S
    assert in_session_ms(DAY, 120 * S, 180 * S) == 0
    assert in_session_ms(DAY, -5 * S, 400 * S) == 200 * S


def test_silences_run_from_the_last_tick_before_to_the_first_after() -> None:
    ticks = [1 * S, 2 * S, 95 * S, 205 * S, 299 * S]
    # 2 -> 95: 93 s; 95 -> 205: 5 + 5 s in session (the break does not count); 205 -> 299: 94 s
    assert silences(ticks, DAY, 60 * S) == [(2 * S, 95 * S), (205 * S, 299 * S)]
    assert silences(ticks, DAY, 100 * S) == []
    assert silences([], DAY, 150 * S) == [(0, 300 * S)]  # no tick: the day's sessions as one silence


def test_a_days_condition() -> None:
    assert day_quality([1 * S], DAY, 60 * S, closed=False, continuous=True).condition is Condition.PENDING
    missing = day_quality([], DAY, 60 * S, closed=True, continuous=True)
    assert (missing.condition, missing.last_ms) == (Condition.MISSING, None)
    gappy = day_quality([1 * S, 99 * S, 201 * S, 299 * S], DAY, 60 * S, closed=True, continuous=True)
    assert (gappy.condition, gappy.gaps, gappy.last_ms) == (Condition.DEGRADED, ((1 * S, 99 * S), (201 * S, 299 * S)),
                                                            299 * S)
    dense = [t * S for t in range(0, 300, 30)]
    assert day_quality(dense, DAY, 60 * S, closed=True, continuous=True).condition is Condition.AVAILABLE
    # an assessment venue prints once: available with one tick, never degraded
    assert day_quality([50 * S], DAY, 60 * S, closed=True, continuous=False).condition is Condition.AVAILABLE


def test_the_worst_of_a_dates_venues_is_the_all_venue_files_condition() -> None:
    a, d, p, m = Condition.AVAILABLE, Condition.DEGRADED, Condition.PENDING, Condition.MISSING
    assert worst([a, a]) is a
    assert worst([a, p]) is p and worst([p, d, a]) is d and worst([d, m, p]) is m and worst([m]) is m


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def _fresh(now_ms: int) -> Freshness:
    book = VenueBook.load(None)
    ids = ["brent", "methanol"]
    return freshness_of([book.for_instrument(i) for i in ids], ["continuous", "continuous"], 60, now_ms)


def test_a_venue_is_degraded_after_stale_after_and_major_after_five_minutes_in_session() -> None:
    start = _ms("2026-11-23T09:00:00+08:00")  # ZCE (methanol) opens at 09:00, breaks 10:15-10:30
    fresh = _fresh(start)
    assert fresh.level("zce", start + 59 * S, True) is Level.OPERATIONAL
    assert fresh.level("zce", start + 60 * S, True) is Level.DEGRADED and fresh.stale("zce", start + 60 * S)
    assert fresh.level("zce", start + MAJOR_S * S, True) is Level.MAJOR
    assert fresh.level("zce", start + MAJOR_S * S, False) is Level.OPERATIONAL  # shut: never stale
    fresh.on_ticks([1], start + 100 * S)  # row 1 is methanol
    assert fresh.level("zce", start + 150 * S, True) is Level.OPERATIONAL
    assert fresh.level("ice-eu", start + 150 * S, True) is Level.DEGRADED  # brent's venue heard nothing
    # the break does not count: a tick at 10:14:30 is 30 s of session old at 10:30:30
    fresh.on_ticks([1], _ms("2026-11-23T10:14:30+08:00"))
    assert fresh.silence_ms("zce", _ms("2026-11-23T10:30:30+08:00")) == 60 * S


def test_a_saturday_is_never_stale() -> None:
    start = _ms("2026-11-28T10:00:00+08:00")
    fresh = _fresh(start)
    assert fresh.silence_ms("zce", start + 3600 * S) == 0  # no session on a Saturday


class HangingStorage:
    """Storage that never answers (a lost PostgreSQL connection, a locked disk)."""

    async def ping(self) -> bool:
        await asyncio.Event().wait()
        return True


def test_status_answers_at_once_while_storage_hangs() -> None:
    now = _ms("2026-11-23T10:00:00+08:00") / 1000
    probe = StorageProbe(HangingStorage())  # type: ignore[arg-type]
    fresh = _fresh(int(now * 1000))
    book = VenueBook.load(None)
    venues = {vid: (book.venues[vid].name["en"], clock) for vid, clock in fresh.clocks.items()}
    api = StatusApi([Component("rest", "REST API", lambda: Level.OPERATIONAL),
                     Component("storage", "Storage", probe.level),
                     Component("stream", "WebSocket stream", up_down(lambda: True))], fresh, venues, lambda: now)

    async def run() -> dict[str, object]:
        await probe.probe()  # bounded: PROBE_TIMEOUT_S, then storage counts as out
        started = time.perf_counter()
        resp = api.status(Request("GET", "/api/v1/status", ""))
        assert time.perf_counter() - started < 0.2
        return orjson.loads(resp.body)  # type: ignore[no-any-return]

    body = asyncio.run(asyncio.wait_for(run(), 5))
    statuses = {c["id"]: c["status"] for c in body["components"]}  # type: ignore[attr-defined]
    assert statuses["storage"] == "major_outage" and statuses["rest"] == "operational"
    assert statuses["feed:ice-eu"] == "operational" and statuses["feed:zce"] == "operational"
    assert body["status"] == {"indicator": "critical", "description": "Major Service Outage"}
    assert date.fromisoformat(str(body["components"][0]["updatedAt"])[:10]) == date(2026, 11, 23)  # type: ignore[index]
