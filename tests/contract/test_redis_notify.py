"""Two real hubs on one Redis and one PostgreSQL database (SPEC 12): records taken on either hub are
notified exactly once between them (outbox jobs claimed with FOR UPDATE SKIP LOCKED), and pending
evidence is anchored by the feed lease holder only. Real aiosmtpd and a real webhook receiver."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from aiosmtpd.controller import Controller

from server.store.sql.pg import connect
from server.store.sql.pg_sync import PgEvidenceLog
from tests.conftest import ServerProcess, free_port
from tests.contract.test_notify import Inbox, Receiver
from tests.pg_service import pg_schema
from tests.redis_service import redis_prefix, require_redis

RECORDS = 12


@pytest.fixture
def far_sides() -> Iterator[tuple[Inbox, int, Receiver]]:
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    receiver = Receiver()
    yield inbox, port, receiver
    receiver.close()
    controller.stop()


@pytest.fixture
def hubs(tmp_path: Path, far_sides: tuple[Inbox, int, Receiver]) -> Iterator[tuple[ServerProcess, ServerProcess, str]]:
    url = require_redis()
    _, smtp_port, receiver = far_sides
    with pg_schema() as database, redis_prefix(url) as prefix:
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--database-url", database,
                 "--public-rate", "100000", "--smtp-url", f"smtp://127.0.0.1:{smtp_port}",
                 "--notify-email", "ops@example.com", "--mail-from", "noreply@market.example",
                 "--webhook", f"generic={receiver.base}/generic/in")
        a = ServerProcess(tmp_path / "data", "granian", *flags)  # one data dir: the same JWT secret
        b = ServerProcess(tmp_path / "data", "robyn", *flags)
        try:
            yield a, b, database
        finally:
            codes = [hub.stop() for hub in (a, b)]
            assert codes == [0, 0], f"{codes}\n{a.output()}\n{b.output()}"


def _poll(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)  # other processes deliver: nothing to await


def _metric(hub: ServerProcess, line_start: str) -> float:
    for line in httpx.get(hub.base + "/metrics").text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[1])
    return 0.0


def test_inquiries_on_either_hub_are_notified_exactly_once_between_them(
        hubs: tuple[ServerProcess, ServerProcess, str], far_sides: tuple[Inbox, int, Receiver]) -> None:
    a, b, database = hubs
    inbox, _, receiver = far_sides
    with a.client() as ca, b.client() as cb:
        assert ca.post("/api/auth/register", json={"email": "buyer@example.com",
                                                   "password": "long-enough-1"}).status_code == 201
        token = cb.post("/api/auth/login", json={"email": "buyer@example.com",
                                                 "password": "long-enough-1"}).json()["token"]

        def inquire(i: int) -> str:  # alternately: each hub's worker wakes for its own and claims what is due
            resp = (ca if i % 2 == 0 else cb).post(
                "/api/submit-inquiry", headers={"Authorization": f"Bearer {token}"},
                json={"product": f"聚丙烯 PP #{i}", "quantity": 10 + i, "unit": "吨"})
            assert resp.status_code == 201, resp.text
            return str(resp.json()["id"])

        ids = [inquire(i) for i in range(RECORDS)]
        _exactly_once(a, b, database, far_sides, ids)
        # an absence needs a barrier: one more record on each hub, delivered by both workers in a later round
        markers = [inquire(RECORDS), inquire(RECORDS + 1)]

    def subjects() -> list[str]:
        return [m[2]["Subject"] for m in inbox.messages]

    _poll(lambda: set(markers) <= {h.json["id"] for h in receiver.of("generic")}
          and {f"[Inquiry 询价] {i}" for i in markers} <= set(subjects()), "the markers delivered")
    assert sorted(subjects()) == sorted(f"[Inquiry 询价] {i}" for i in ids + markers)
    keys = [h.headers["Idempotency-Key"] for h in receiver.of("generic")]
    assert len(keys) == RECORDS + 2 == len(set(keys))
    assert {h.json["id"] for h in receiver.of("generic")} == set(ids + markers)


def _exactly_once(a: ServerProcess, b: ServerProcess, database: str, far_sides: tuple[Inbox, int, Receiver],
                  ids: list[str]) -> None:
    inbox, _, receiver = far_sides
    _poll(lambda: len(inbox.messages) >= RECORDS and len(receiver.of("generic")) >= RECORDS, "all delivered")

    def outcomes() -> list[tuple[str, str, str, int]]:
        with connect(database) as conn:
            return [(r["record_id"], r["channel"], r["state"], r["attempts"])
                    for r in conn.execute("SELECT record_id, channel, state, attempts FROM outbox_jobs")]

    # a hub records `delivered` after the far side answered: wait for those writes, not for the arrivals
    _poll(lambda: all(r[2] != "sending" for r in outcomes()), "every outcome recorded")
    rows = outcomes()
    assert len(rows) == 2 * RECORDS and {r[0] for r in rows} == set(ids)
    assert [r for r in rows if r[2] != "delivered" or r[3] != 1] == []  # each claimed once, by one hub

    def sent() -> dict[str, list[float]]:  # each hub counts a delivery just after recording it
        return {ch: [_metric(h, f'market_outbox_deliveries_total{{channel="{ch}"}}') for h in (a, b)]
                for ch in ("email", "generic")}

    _poll(lambda: all(sum(per_hub) >= RECORDS for per_hub in sent().values()), "deliveries counted")
    assert all(sum(per_hub) == RECORDS for per_hub in sent().values()), sent()


def test_pending_evidence_is_anchored_by_the_feed_leader_only(hubs: tuple[ServerProcess, ServerProcess, str]) -> None:
    a, b, database = hubs
    leaders = [h for h in (a, b) if _metric(h, "market_feed_leader") == 1]
    assert len(leaders) == 1
    follower = b if leaders[0] is a else a
    with connect(database) as conn:
        digests = [secrets.token_hex(32) for _ in range(3)]
        for digest in digests:
            PgEvidenceLog(conn).submit(digest)

    def anchored() -> bool:
        return all(httpx.get(follower.base + "/api/verify-anchor", params={"hash": d}).json().get("status")
                   == "anchored" for d in digests)

    _poll(anchored, "pending evidence anchored", timeout=12.0)
    lines = [json.loads(line) for line in follower.output().splitlines() if line.startswith("{")]
    assert not [entry for entry in lines if entry["msg"].startswith("evidence anchored")]
    assert "evidence anchored" in leaders[0].output()
