"""A real server on `--database-url postgresql://...` (a fresh schema of the machine's PostgreSQL): keys made
and revoked by the CLI, an account made by the CLI logging in, a cooperation and an inquiry with their
notification jobs, news, receipts imported by the CLI, dropped connections, and a restart that keeps all of
it. Nothing lands in the data dir's SQLite file. Every admin command runs on PostgreSQL without a data dir."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
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
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name LIKE %s", (f"market-server/{pid}-%",)).fetchall()
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
        _cli(data_dir, database_url, "users", "create", "--email", "li@example.cn", "--password", "long enough pw")
        with srv.client() as c:
            login = c.post("/api/auth/login", json={"email": "li@example.cn", "password": "long enough pw"})
            assert login.status_code == 200, login.text
            inquiry = c.post("/api/submit-inquiry", headers={"Authorization": f"Bearer {login.json()['token']}"},
                             json={"product": "聚丙烯 PP", "quantity": 120, "unit": "吨"})
            assert inquiry.status_code == 201, inquiry.text
        records = [coop.json()["id"], inquiry.json()["id"]]
        jobs = json.loads(_cli(data_dir, database_url, "outbox", "list", "--json"))
        assert sorted(j["recordId"] for j in jobs) == sorted(records)

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
        assert sorted(j["recordId"] for j in jobs) == sorted(records)

        _cli(data_dir, database_url, "keys", "revoke", created["id"])
        with again.client() as c:  # the key refresh (every second) finds the revocation in PostgreSQL
            for _ in range(100):  # bounded: 100 x 50 ms
                if c.get("/api/v1/quotes", headers={"X-SERVICE-Key": created["key"]}).status_code == 401:
                    break
                time.sleep(0.05)  # waiting for the server's next refresh: nothing to await from here
            assert c.get("/api/v1/quotes", headers={"X-SERVICE-Key": created["key"]}).status_code == 401
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


ADMIN_COMMANDS = [
    ("keys", "create", "--plan", "free"),
    ("keys", "list"),
    ("users", "create", "--email", "ops@example.com", "--password", "long enough pw"),
    ("users", "disable", "ops@example.com"),
    ("content", "import", "{content}"),
    ("evidence", "anchor", "--hash", "ab" * 32),
    ("candles", "import", "{csv}"),
    ("outbox", "list"),
    ("db", "migrate"),
]


def test_every_admin_command_runs_on_postgresql_without_a_data_dir(tmp_path: Path, database_url: str) -> None:
    content = tmp_path / "content.json"
    content.write_text(json.dumps([{"kind": "news", "title": "PG", "summary": "on PostgreSQL",
                                    "publishedAt": "2026-03-02T09:00:00+08:00"}]))
    candles = tmp_path / "candles.csv"
    candles.write_text("id,t,o,h,l,c,v\nbrent,2026-03-02,80,81,79,80.5,100\n")
    files = {"{content}": str(content), "{csv}": str(candles)}
    missing = tmp_path / "no-such-dir"
    for command in ADMIN_COMMANDS:
        out = run_cli(missing, *(files.get(a, a) for a in command), "--database-url", database_url)
        assert out.returncode == 0, (command, out.stderr)
    assert not missing.exists()
    with psycopg.connect(database_url) as conn:
        counts = conn.execute("SELECT (SELECT COUNT(*) FROM api_keys), (SELECT COUNT(*) FROM candles), "
                              "(SELECT COUNT(*) FROM users WHERE disabled_at IS NOT NULL), "
                              "(SELECT COUNT(*) FROM content_items WHERE title_en = 'PG')").fetchone()
    assert counts == (1, 1, 1, 1)
    retry = run_cli(missing, "outbox", "retry", "job_0", "--database-url", database_url)
    assert retry.returncode == 1 and retry.stderr.strip() == "market-server: no outbox job with id job_0"


class _Relay:
    """A TCP relay between the hub and PostgreSQL that the test can take down (every connection shut, new
    ones closed at once: PostgreSQL gone, as a crash or a network cut looks to the hub) and bring back."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.up = target, True
        self._socks: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self._listener.accept()
            except OSError:
                return
            if not self.up:
                down.close()
                continue
            up = socket.create_connection(self.target)
            with self._lock:
                self._socks |= {down, up}
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        self._shut({src, dst})

    def _shut(self, socks: set[socket.socket]) -> None:
        for s in socks:
            with self._lock:
                self._socks.discard(s)
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def set_up(self, up: bool) -> None:
        self.up = up
        if not up:
            with self._lock:
                socks = set(self._socks)
            self._shut(socks)

    def close(self) -> None:
        self.set_up(False)
        self._listener.close()


def test_postgresql_away_is_a_503_to_retry_and_the_hub_recovers_without_a_restart(tmp_path: Path,
                                                                                   database_url: str) -> None:
    """Storage requests while PostgreSQL is unreachable answer 503 storage_unavailable with Retry-After within the
    pool's wait (not a 500 after 10 s); market data keeps being served; when it is back, writes work again."""
    from urllib.parse import urlsplit

    target = urlsplit(PG_URL)
    relay = _Relay((target.hostname or "127.0.0.1", target.port or 5432))
    via_relay = database_url.replace(f"{target.hostname}:{target.port or 5432}", f"127.0.0.1:{relay.port}", 1)
    assert via_relay != database_url
    srv = ServerProcess(tmp_path / "data", "granian", "--database-url", via_relay)
    coop = {"company": "Acme", "contactName": "Li", "email": "li@example.cn", "type": "data"}
    try:
        with httpx.Client(base_url=srv.base, timeout=30.0) as c:
            assert c.post("/api/cooperation", json=coop).status_code == 201
            relay.set_up(False)
            started = time.monotonic()
            refused = c.post("/api/cooperation", json=coop)
            waited = time.monotonic() - started
            assert refused.status_code == 503, refused.text
            problem = refused.json()
            assert problem["code"] == "storage_unavailable" and problem["type"] == "/problems/storage_unavailable"
            assert int(refused.headers["retry-after"]) > 0
            assert waited < 8.0, waited  # the pool's 3 s wait (+ slack for a loaded machine), not 10 s
            assert c.get("/api/v1/quotes", headers={"X-SERVICE-Key": srv.demo_key}).status_code == 200
            assert c.get("/readyz").status_code == 503
            relay.set_up(True)
            deadline = time.monotonic() + 20
            while c.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "the hub did not see PostgreSQL back within 20 s"
                time.sleep(0.2)
            assert c.post("/api/cooperation", json=coop).status_code == 201
        assert srv.stop() == 0
        out = srv.output()
        assert "storage unavailable" in out and "Traceback" not in out, out[-3000:]
    finally:
        srv.kill()
        relay.close()
