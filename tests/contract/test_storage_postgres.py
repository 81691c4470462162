"""A real server on `--database-url postgresql://...` (a fresh schema of the machine's PostgreSQL): keys made
by the CLI, a cooperation and its notification job, news, receipts imported by the CLI, and a restart that
keeps all of it. Nothing lands in the data dir's SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import ROOT, RUNTIMES, ServerProcess, free_port, free_ports, run_cli
from tests.pg_service import PG_URL, pg_schema

RECEIPT = {
    "receiptNo": "WR-PG-000001", "commodity": "甲醇", "grade": "优等品", "quantity": 1200, "unit": "t",
    "warehouse": "宁波镇海港 3 号库", "holder": "上海远东石化贸易有限公司", "status": "active",
    "issuedAt": "2026-03-02T09:00:00+08:00",
}


@pytest.fixture
def database_url() -> Iterator[str]:
    with pg_schema() as url:
        yield url


def _terminate_backends(pid: int) -> int:
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                             (f"market-server/{pid}",)).fetchall()
    return len(rows)


def _cli(data_dir: Path, url: str, *args: str) -> str:
    out = run_cli(data_dir, *args, "--database-url", url)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_server_on_postgresql_keeps_everything_across_a_restart(tmp_path: Path, database_url: str,
                                                                runtime: str) -> None:
    data_dir = tmp_path / "data"
    down = free_port()  # the webhook's receiver is down: the job stays stored, failed and retried
    flags = ("--database-url", database_url, "--webhook", f"generic=http://127.0.0.1:{down}/hook")
    srv = ServerProcess(data_dir, runtime, *flags)
    try:
        created = json.loads(_cli(data_dir, database_url, "keys", "create", "--plan", "free", "--json"))
        with srv.client() as c:
            assert c.get("/api/v1/quotes", headers={"X-SERVICE-Key": created["key"]}).status_code == 200
            coop = c.post("/api/cooperation", json={"company": "Acme", "contactName": "Li",
                                                    "email": "li@example.cn", "type": "data"})
            assert coop.status_code == 201, coop.text
            news = c.get("/api/news", params={"limit": 5}).json()
            assert len(news["items"]) == 5 and news["total"] >= 5  # seeded into the empty database
        jobs = json.loads(_cli(data_dir, database_url, "outbox", "list", "--json"))
        assert [j["recordId"] for j in jobs] == [coop.json()["id"]]

        receipts_file = tmp_path / "receipts.json"
        receipts_file.write_text(json.dumps([RECEIPT], ensure_ascii=False), encoding="utf-8")
        imported = json.loads(_cli(data_dir, database_url, "receipts", "import", str(receipts_file)))
        assert imported["inserted"] == 1 and imported["anchored"] is not None
        evidence_hash = imported["receipts"][0]["evidenceHash"]
        with srv.client() as c:
            view = c.get("/api/receipt/WR-PG-000001").json()
        assert view["holder"] == "上海******有限公司" and view["evidenceHash"] == evidence_hash
        assert view["anchored"] is True

        # PostgreSQL drops every connection of this server (a restart, a failover): the next calls reconnect
        assert _terminate_backends(srv.proc.pid) > 0
        with srv.client() as c:
            assert c.get("/api/receipt/WR-PG-000001").status_code == 200
            assert c.get("/api/news", params={"limit": 1}).status_code == 200
            assert c.get("/readyz").json()["checks"]["storage"] is True
        demo_key = srv.demo_key
    finally:
        assert srv.stop() == 0, srv.output()

    again = ServerProcess(data_dir, runtime, *flags)
    try:
        with again.client() as c:
            for key in (created["key"], demo_key):  # the CLI's key and the first start's demo key
                assert c.get("/api/v1/quotes", headers={"X-SERVICE-Key": key}).status_code == 200
            assert c.get("/api/receipt/WR-PG-000001").json()["evidenceHash"] == evidence_hash
            assert c.get("/api/news", params={"limit": 5}).json()["total"] == news["total"]  # seeded once
            assert c.get("/readyz").json()["checks"]["storage"] is True
        assert "demo key" not in again.output()  # not created twice
        jobs = json.loads(_cli(data_dir, database_url, "outbox", "list", "--json"))
        assert [j["recordId"] for j in jobs] == [coop.json()["id"]]
    finally:
        assert again.stop() == 0, again.output()
    assert not (data_dir / "market.sqlite3").exists()


def test_unreachable_postgresql_is_one_line_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://market:s3cret-pw@127.0.0.1:{free_port()}/market"
    (tmp_path / "data").mkdir()
    out = run_cli(tmp_path / "data", "keys", "list", "--database-url", url)
    assert out.returncode == 1
    assert out.stderr.startswith("market-server: PostgreSQL error at postgresql://market:***@127.0.0.1:")
    assert "s3cret-pw" not in out.stderr + out.stdout and "Traceback" not in out.stderr
    port, ws_port = free_ports(2)
    serve = subprocess.run(  # serve stops before it listens, with the same line
        [sys.executable, "-m", "server", "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port),
         "--ws-port", str(ws_port), "--database-url", url],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert serve.returncode == 1 and "market-server: PostgreSQL error at" in serve.stderr
    assert "s3cret-pw" not in serve.stderr + serve.stdout and "Traceback" not in serve.stderr
