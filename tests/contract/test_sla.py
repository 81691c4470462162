"""SPEC 20's availability, measured and kept (issue 42 item 4; docs/sla.md), on real hubs over HTTP.

The hubs run on their own clock (`--clock-start`: a fixed day, advancing in real time), so a hub killed with SIGKILL
"for two minutes" is a hub restarted with its clock two minutes further on: no test waits for real minutes to pass.
The rows are checked through `GET /api/console/sla`; a barrier waits for the row the hub writes at a minute's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from server.market.timefmt import iso
from tests import poll
from tests.conftest import ServerProcess, open_database, run_cli

PASSWORD = "correct horse"
START = datetime.fromisoformat("2026-03-10T10:00:50+00:00").timestamp()  # a Tuesday; 18:00:50 in Shanghai
MONTH = "2026-03"
MINUTE = 60


def minute_of(ts: float) -> int:
    return int(ts // MINUTE)


until = partial(poll.until, every=0.2)  # this module's wait and polling interval


def minutes_recorded(data_dir: Path) -> set[int]:
    conn = open_database(data_dir)
    try:
        return {int(row[0]) for row in conn.execute("SELECT minute FROM availability_minutes")}
    finally:
        conn.close()


def account(srv: ServerProcess, email: str, plan: str | None = None, operator: bool = False,
            db: tuple[str, ...] = ()) -> httpx.Client:
    """A signed-in console client of a new account (its plan set with the operator CLI; `db`: its --database-url)."""
    extra = ["--operator"] if operator else []
    out = run_cli(srv.data_dir, "users", "create", "--email", email, "--password", PASSWORD, *extra, *db)
    assert out.returncode == 0, out.stderr
    if plan is not None:
        rate = ["--rate", "1000"] if plan == "enterprise" else []
        out = run_cli(srv.data_dir, "users", "plan", email, plan, *rate, *db)
        assert out.returncode == 0, out.stderr
    return login(srv, email)


def login(srv: ServerProcess, email: str) -> httpx.Client:
    c = srv.client()
    resp = c.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert resp.status_code == 200, resp.text
    c.headers["Authorization"] = "Bearer " + resp.json()["token"]
    return c


def sla(c: httpx.Client, month: str = MONTH) -> dict[str, Any]:
    resp = c.get("/api/console/sla", params={"month": month})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def ranges_of(report: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    return {c["id"]: c["downRanges"] for c in report["components"]}


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, int]]:
    """A hub killed with SIGKILL after its clock entered 10:01, and started again with its clock at 10:04: minutes
    10:02 and 10:03 had no hub. Yields the second hub and the first minute any hub recorded."""
    data_dir = tmp_path_factory.mktemp("sla") / "data"
    first = ServerProcess(data_dir, "granian", "--clock-start", iso(START))
    try:
        keyed = first.client(headers={"X-SERVICE-Key": first.demo_key})
        for _ in range(20):  # keyed requests in the first minute: its row carries them
            assert keyed.get("/api/v1/quotes").status_code == 200
        entered = minute_of(START) + 1  # 10:01: the barrier is its heartbeat row, written as the minute starts
        assert until(lambda: entered in minutes_recorded(data_dir), timeout=40), first.output()
    finally:
        first.kill()  # SIGKILL: nothing written at exit
    second = ServerProcess(data_dir, "granian", "--clock-start", iso(START - 50 + 4 * MINUTE))  # 10:04:00
    try:
        yield second, min(minutes_recorded(data_dir))
    finally:
        assert second.stop() == 0, second.output()


def test_a_hub_killed_for_two_minutes_shows_exactly_those_minutes_down(
        restarted: tuple[ServerProcess, int]) -> None:
    srv, first_minute = restarted
    report = sla(account(srv, "acme@example.com", "enterprise"))
    gone = {"from": iso(minute_of(START) * MINUTE + 2 * MINUTE), "to": iso(minute_of(START) * MINUTE + 4 * MINUTE)}
    ranges = ranges_of(report)
    for component in ("rest", "stream", "storage"):
        assert ranges[component] == [gone], component
    # a venue's feed is down in those minutes only if the venue was in session then; never at any other minute
    assert all(found in ([], [gone]) for found in ranges.values()), ranges
    counted = minute_of(START) + 4 - first_minute  # from the first start to the minute in progress (10:04)
    assert report["minutes"] == counted
    rest = next(c for c in report["components"] if c["id"] == "rest")
    assert rest["downMinutes"] == 2
    assert rest["availability"] == round(100 * (counted - 2) / counted, 3)
    assert rest["target"] == 99.9 and rest["met"] is False
    assert report["latency"]["requests"] >= 20 and report["latency"]["errors"] == 0
    assert report["latency"]["p99Ms"] is not None
    assert report["supportResponse"] == []
    days = {d["date"]: d for d in report["days"]}
    assert len(days) == 31 and days["2026-03-10"]["minutes"] == counted
    assert days["2026-03-10"]["availability"]["rest"] == rest["availability"]
    assert days["2026-03-11"]["minutes"] == 0 and days["2026-03-11"]["availability"]["rest"] is None


def test_only_enterprise_accounts_and_operators_read_the_report(restarted: tuple[ServerProcess, int]) -> None:
    srv, _ = restarted
    plain = account(srv, "plain@example.com")
    resp = plain.get("/api/console/sla", params={"month": MONTH})
    assert resp.status_code == 403 and resp.json()["code"] == "forbidden"
    pro = account(srv, "pro@example.com", "professional")
    assert pro.get("/api/console/sla", params={"month": MONTH}).status_code == 403
    assert srv.client().get("/api/console/sla", params={"month": MONTH}).status_code == 401
    ops = account(srv, "ops@example.com", operator=True)  # a free-plan operator
    assert ranges_of(sla(ops))["rest"] != []


def test_a_bad_month_is_400_and_months_outside_the_service_count_nothing(
        restarted: tuple[ServerProcess, int]) -> None:
    srv, _ = restarted
    c = login(srv, "acme@example.com") if _exists(srv, "acme@example.com") else account(
        srv, "acme@example.com", "enterprise")
    for bad in ("2026-13", "2026-3", "202603", "2026-03-01", "abcd-ef", "0999-01", "9999-12"):
        resp = c.get("/api/console/sla", params={"month": bad})
        assert resp.status_code == 400, bad
        body = resp.json()
        assert body["code"] == "invalid_parameter" and body["errors"][0]["field"] == "month", body
    resp = c.get("/api/console/sla", params={"month": MONTH, "monthh": "x"})
    assert resp.status_code == 400 and resp.json()["code"] == "unknown_parameter"
    for month in ("2026-04", "2025-12"):  # after the minute in progress; before the data dir's first start
        report = sla(c, month)
        assert report["minutes"] == 0 and report["from"] is None
        assert all(x["availability"] is None and x["downRanges"] == [] for x in report["components"])


def _exists(srv: ServerProcess, email: str) -> bool:
    c = srv.client()
    return c.post("/api/auth/login", json={"email": email, "password": PASSWORD}).status_code == 200


class RefusingProxy:
    """A TCP relay to PostgreSQL that the test can take down: `down()` aborts every relayed connection and refuses
    new ones until `up()`, as a storage outage does to the hub. Runs its own loop in a thread."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.refusing = False
        self.loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        self._writers.discard(writer)
        writer.transport.abort()

    def down(self) -> None:
        def cut() -> None:
            self.refusing = True
            for w in list(self._writers):
                w.transport.abort()
        self.loop.call_soon_threadsafe(cut)

    def up(self) -> None:
        self.loop.call_soon_threadsafe(lambda: setattr(self, "refusing", False))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def hub_clock(srv: ServerProcess) -> Callable[[], float]:
    """The hub's clock as seen from here: /api/v1/status's first answer dates every component at the hub's now."""
    before = time.time()
    body = httpx.get(srv.base + "/api/v1/status", timeout=5).json()
    after = time.time()
    offset = datetime.fromisoformat(body["components"][0]["updatedAt"]).timestamp() - (before + after) / 2
    return lambda: time.time() + offset


def test_a_minute_with_over_5_percent_5xx_is_down_for_rest(tmp_path: Path) -> None:
    """Storage away under keyed requests of keys the hub has not cached: each is a 503; that minute is down for
    `rest` (its rows wait in the hub's memory and reach storage when it is back), and no other minute is."""
    from tests.pg_service import pg_schema

    with pg_schema() as url:
        parts = urlsplit(url)
        proxy = RefusingProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        proxied = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"
                                            if parts.username else f"127.0.0.1:{proxy.port}"))
        srv = ServerProcess(tmp_path / "data", "granian", "--clock-start", iso(START), "--database-url", proxied)
        try:
            c = account(srv, "acme@example.com", "enterprise", db=("--database-url", url))
            now = hub_clock(srv)
            until(lambda: 5 <= now() % MINUTE <= 30, timeout=70, every=0.05)  # room for the outage in one minute
            outage = minute_of(now())
            proxy.down()
            with httpx.Client(base_url=srv.base, timeout=20) as keyed:
                answers = [keyed.get("/api/v1/quotes", headers={"X-SERVICE-Key": f"mk_{uuid.uuid4().hex}"})
                           for _ in range(3)]
            assert [a.status_code for a in answers] == [503] * 3, [a.text for a in answers]
            assert minute_of(now()) == outage, "the outage ran past its minute"
            proxy.up()
            gone = [{"from": iso(outage * MINUTE), "to": iso((outage + 1) * MINUTE)}]
            report = until(lambda: (r := _try_sla(c)) is not None and ranges_of(r)["rest"] and r, timeout=90)
            assert report, srv.output()
            assert ranges_of(report)["rest"] == gone
            assert report["latency"]["errors"] >= 3
            assert ranges_of(report)["stream"] == []
        finally:
            assert srv.stop() == 0, srv.output()
            proxy.close()


def _try_sla(c: httpx.Client) -> dict[str, Any] | None:
    resp = c.get("/api/console/sla", params={"month": MONTH})
    return resp.json() if resp.status_code == 200 else None
