"""Storage is off the event loop (SPEC 11), and every accepted record has its notification jobs (SPEC 9).

The lock test holds SQLite's write lock from the test process (as a CLI import does, one chunk at a
time) while a POST needs it: the POST must wait on the storage thread while /healthz, the keyed
quotes and a page of news keep answering. Before storage moved off the loop, the POST's INSERT
waited for the lock on the loop's own thread and every other request waited with it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.api.core.types import Request
from server.config import Settings, Webhook
from server.root import build
from server.store.sql.db import DB_NAME
from tests.conftest import RUNTIMES, ServerProcess, database_url, free_port, run_cli, sqlite_only

COOPERATION = {"company": "宁波某化工有限公司", "contactName": "李四", "email": "li@example.cn", "type": "data"}
GET_ROUNDS = 20  # reads made while the lock is held; the first POST is dispatched long before the last
READ_TIMEOUT_S = 3.0


def dead_webhook() -> str:
    return f"generic=http://127.0.0.1:{free_port()}/hook"  # nothing listens: jobs stay stored


@pytest.fixture(scope="module", params=RUNTIMES)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"storage-{request.param}") / "data"
    server = ServerProcess(data_dir, request.param, "--public-rate", "100000", "--webhook", dead_webhook())
    yield server
    assert server.stop() == 0, server.output()


def jobs_for(data_dir: Path, record_id: str) -> list[dict[str, object]]:
    out = run_cli(data_dir, "outbox", "list", "--json")
    assert out.returncode == 0, out.stderr
    return [j for j in json.loads(out.stdout) if j["recordId"] == record_id]


@sqlite_only
def test_reads_answer_while_a_write_waits_for_the_lock(srv: ServerProcess) -> None:
    lock = sqlite3.connect(srv.data_dir / DB_NAME, isolation_level=None, timeout=10.0)
    lock.execute("BEGIN IMMEDIATE")  # the write lock, as a CLI import's chunk holds it
    posted: list[httpx.Response] = []
    post_done = threading.Event()

    def post() -> None:
        with srv.client() as c:
            posted.append(c.post("/api/cooperation", json=COOPERATION))
        post_done.set()

    poster = threading.Thread(target=post, daemon=True)
    try:
        poster.start()
        with httpx.Client(base_url=srv.base, timeout=READ_TIMEOUT_S) as c:
            for _ in range(GET_ROUNDS):
                assert c.get("/healthz").status_code == 200
                assert c.get("/api/v1/quotes", headers={"X-SERVICE-Key": srv.demo_key}).status_code == 200
                news = c.get("/api/news", params={"limit": 1})
                assert news.status_code == 200 and news.json()["total"] >= 1
        assert not post_done.is_set()  # all of that was answered while the POST still waited for the lock
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert post_done.wait(10.0)
    (resp,) = posted
    assert resp.status_code == 201, resp.text
    record_id = resp.json()["id"]
    jobs = jobs_for(srv.data_dir, record_id)
    assert [j["channel"] for j in jobs] == ["generic"] and jobs[0]["recordKind"] == "cooperation"


def test_every_accepted_post_has_its_jobs(srv: ServerProcess) -> None:
    with srv.client() as c:
        ids = [c.post("/api/cooperation", json=COOPERATION | {"message": f"n{i}"}).json()["id"] for i in range(5)]
    for record_id in ids:
        assert len(jobs_for(srv.data_dir, record_id)) == 1


def test_a_post_after_the_worker_stopped_still_stores_its_jobs(tmp_path: Path) -> None:
    """The shutdown window: the outbox worker has stopped, HTTP still answers; the 201 must carry jobs."""
    settings = Settings(data_dir=tmp_path / "data", webhooks=(Webhook("generic", "http://127.0.0.1:9/hook"),),
                        port=0, ws_port=free_port(), feed="demo", database_url=database_url(tmp_path / "data"))

    async def scenario() -> tuple[int, str]:
        hub = build(settings)
        await hub.start()
        try:
            await hub.outbox.stop()  # as the shutdown sequence does before HTTP stops accepting
            resp = await hub.app.handle(Request("POST", "/api/cooperation", body=json.dumps(COOPERATION).encode(),
                                                headers={"content-type": "application/json"}, client_ip="127.0.0.1"))
            return resp.status, json.loads(resp.body)["id"]
        finally:
            await hub.stop()

    status, record_id = asyncio.run(scenario())
    assert status == 201
    jobs = jobs_for(settings.data_dir, record_id)
    assert [(j["channel"], j["status"]) for j in jobs] == [("generic", "pending")]
