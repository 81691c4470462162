"""Shared test harness: real server processes on free ports, the real CLI, real HTTP clients."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

# every server a test starts moves its demo instruments at any hour (SPEC 16's sessions would make a test's ticks
# depend on the day and time it runs); a test about the hours passes --demo-hours sessions itself
os.environ.setdefault("MARKET_DEMO_HOURS", "always")

from server.store.sql.admin import AdminRepos, open_admin

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ("granian", "robyn")
START_TIMEOUT_S = 30.0
PORT_ATTEMPTS = 3
PORT_TAKEN = re.compile(r"already in use|cannot listen on", re.IGNORECASE)


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """n distinct ports free a moment ago (held together while picked, so the kernel cannot hand one out twice).

    Another process may still bind one before the server does: ServerProcess then starts again on new ports."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


def database_flags(data_dir: Path, args: tuple[str, ...] | list[str] = ()) -> list[str]:
    """With MARKET_TEST_STORAGE=postgresql every data dir of a test also gets a PostgreSQL schema of its own
    (tests/pg_service.py), passed as --database-url to its server and its CLI runs; else nothing."""
    if not ON_POSTGRES or "--database-url" in args:
        return []
    from tests.pg_service import database_for

    return ["--database-url", database_for(data_dir)]


def engine_flags(extra: tuple[str, ...]) -> list[str]:
    """With MARKET_TEST_ENGINE=redis every test server runs `--engine redis` on a Redis prefix of its own
    (tests/redis_service.py; its buckets expire within a minute); else nothing."""
    if os.environ.get("MARKET_TEST_ENGINE") != "redis" or "--engine" in extra:
        return []
    from tests.redis_service import REDIS_URL, fresh_prefix

    return ["--engine", "redis", "--redis-url", REDIS_URL, "--redis-prefix", fresh_prefix()]


ON_POSTGRES = os.environ.get("MARKET_TEST_STORAGE") == "postgresql"
REDIS_PASS = os.environ.get("MARKET_TEST_ENGINE") == "redis"


def engine_variants(servers: list[tuple[str, str]]) -> list[Any]:
    """Parameters of a file that runs each (runtime, engine) itself: ids "granian-memory" etc. The Redis +
    PostgreSQL pass of .ci/run is about the Redis engine, so there the memory variants (which ran in the first
    pass, and keep --engine memory) are skipped: the file's Redis variants run in both passes."""
    return [pytest.param(p, id="-".join(p), marks=[pytest.mark.skip(reason="memory engine: covered by the first "
                                                                     "pass (this pass is about Redis)")]
                         if REDIS_PASS and p[1] == "memory" else []) for p in servers]
# a test about SQLite itself (its file, its write lock, a data dir that holds no database)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A contract module whose answers cannot depend on the engine or the storage says so with a module-level
    `ENGINE_NEUTRAL = "why"`; the second pass of .ci/run (Redis engine, PostgreSQL) skips it, saying why: the
    first pass ran it on the same code (SPEC 12's promise is about what the engines keep, not about /openapi.json).
    """
    if not (REDIS_PASS or ON_POSTGRES):
        return
    for item in items:
        why = getattr(getattr(item, "module", None), "ENGINE_NEUTRAL", None)
        if why:
            item.add_marker(pytest.mark.skip(reason=f"engine- and storage-neutral, run by the first pass: {why}"))


sqlite_only = pytest.mark.skipif(ON_POSTGRES, reason="about SQLite in the data dir (MARKET_TEST_STORAGE=postgresql)")
# a test that runs the outbox worker in-process on the data dir's SQLite next to CLI runs on the same data dir
worker_on_sqlite = pytest.mark.skipif(ON_POSTGRES, reason="in-process outbox worker on SQLite; "
                                      "tests/unit/test_storage_pg.py covers the PostgreSQL outbox")


def database_url(data_dir: Path) -> str | None:
    """What an in-process Hub's Settings(database_url=...) gets for this data dir: None on SQLite."""
    flags = database_flags(data_dir)
    return flags[1] if flags else None


def open_database(data_dir: Path) -> sqlite3.Connection:
    """The database of a data dir's server, for checks the API cannot make (rows by index and by name):
    SQLite in the data dir, or (MARKET_TEST_STORAGE=postgresql) its schema, through the tests' qmark
    adapter (tests/pg_service.py)."""
    url = database_url(data_dir)
    if url is not None:
        from tests.pg_service import QmarkConnection

        return QmarkConnection(url)  # type: ignore[return-value]
    conn = sqlite3.connect(data_dir / "market.sqlite3", timeout=10.0)
    conn.row_factory = sqlite3.Row
    return conn


def admin_repos(data_dir: Path) -> AdminRepos:
    """The repositories a CLI command gets for this data dir (its PostgreSQL schema under
    MARKET_TEST_STORAGE=postgresql), migrated and seeded like a new data dir on first use."""
    return open_admin(data_dir, database_url(data_dir))


def run_cli(data_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `market-server <args> --data-dir DIR` as an operator would."""
    cmd = [sys.executable, "-m", "server", *args, "--data-dir", str(data_dir), *database_flags(data_dir, args)]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60, cwd=ROOT)


NODE = re.compile(r"\bnode[= ](\S+)")  # what `serve` announces (a worker: "pid N node X")


class ServerProcess:
    """`market-server serve` in a child process; `stop()` sends SIGTERM and returns the exit code."""

    def __init__(self, data_dir: Path, runtime: str = "granian", *extra: str, stdin: int | None = None,
                 log_dir: Path | None = None) -> None:
        """`log_dir`: where the server's log goes (default: beside the data dir; elsewhere when that disk is meant
        to fill)."""
        self.data_dir = data_dir
        self.runtime = runtime
        data_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port, self.ws_port = free_ports(2)
            self.base = f"http://127.0.0.1:{self.port}"
            self.ws_base = f"ws://127.0.0.1:{self.ws_port}"
            self.log_path = (log_dir or data_dir.parent) / f"server-{self.port}.log"
            cmd = [
                sys.executable, "-m", "server", "serve", "--data-dir", str(data_dir), "--runtime", runtime,
                "--port", str(self.port), "--ws-port", str(self.ws_port), *extra, *database_flags(data_dir, extra),
                *engine_flags(extra),
            ]
            self._log = open(self.log_path, "wb")  # noqa: SIM115
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
                                         stdin=stdin, env=env)
            if self._wait_ready(may_retry=attempt < PORT_ATTEMPTS):
                return

    def _wait_ready(self, may_retry: bool = False) -> bool:
        """True once /readyz answers 200; False if the ports were taken meanwhile (start again on new ones)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if may_retry and PORT_TAKEN.search(self.output()):
                    self._log.close()
                    return False
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                resp = httpx.get(self.base + "/readyz", timeout=1.0)
            except httpx.TransportError:
                resp = None
            if resp is not None and resp.status_code == 200:
                # Both runtimes bind with SO_REUSEPORT and `serve` checks the port only as it starts, so a server of
                # another test that took the same free port in that window shares it, and may answer this /readyz
                # while ours is still starting (a SIGTERM then finds no handler yet: exit -15, an empty log). Ours
                # is the one whose announced node answers.
                ours = set(NODE.findall(self.output()))
                if resp.json().get("node") in ours:
                    return True
                if may_retry:
                    self.kill()
                    self._log.close()
                    return False
                raise RuntimeError(f"another server answers on port {self.port}:\n{self.output()}")
            time.sleep(0.05)  # polling a port that is not open yet: nothing to await
        self.kill()
        raise RuntimeError(f"server not ready within {START_TIMEOUT_S}s:\n{self.output()}")

    @property
    def demo_key(self) -> str:
        return (self.data_dir / "demo-key.txt").read_text().strip()

    def output(self) -> str:
        """What the server wrote so far; also after `stop()` (a failed stop's message shows the log)."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=10.0, **kw)  # type: ignore[arg-type]

    def create_key(self, plan: str, *extra: str) -> tuple[str, str]:
        out = run_cli(self.data_dir, "keys", "create", "--plan", plan, "--json", *extra)
        assert out.returncode == 0, out.stderr
        import json

        data = json.loads(out.stdout)
        return data["id"], data["key"]

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
        return int(self.proc.returncode)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module", params=RUNTIMES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server per runtime per test module; a generous public rate so tests don't trip it."""
    data_dir = tmp_path_factory.mktemp(f"data-{request.param}") / "data"
    srv = ServerProcess(data_dir, request.param, "--public-rate", "100000")
    yield srv
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


@pytest.fixture(scope="module")
def pro_key(server: ServerProcess) -> str:
    return server.demo_key
