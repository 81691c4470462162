"""The project's servers on the simulated network (tests/netsim/net.py), each in its own host namespace:
Redis (a master and a replica), three Sentinels, a throwaway PostgreSQL cluster and hubs.

Each listens on its host's address only; every check a test makes goes from another host through the
router (`call_in`), so a cut link looks to the test as it looks to a hub.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import pytest

from tests.netsim.net import Host, Network, Proc

T = TypeVar("T")
REDIS_PORT = 6379
SENTINEL_PORT = 26379
PG_PORT = 5432
HTTP_PORT, WS_PORT = 8000, 8001
SERVICE = "market"  # the Sentinel service name
JWT_SECRET = secrets.token_hex(32)


def call_in(net: Network, host: Host, fn: Callable[[], T]) -> T:
    """Run `fn` on a thread inside `host`'s namespace (the caller's thread stays where it is)."""
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            with net.inside(host):
                result.append(fn())
        except BaseException as exc:  # handed to the caller
            error.append(exc)

    thread = threading.Thread(target=target, name=f"in-{host.name}")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0, every: float = 0.05) -> float:
    """Poll another process's state until `condition()`; the seconds it took."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(every)  # another process's state: nothing to await
    return time.monotonic() - started


def _binary(name: str, package: str) -> str:
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/lib/postgresql/15/bin/{name}")
                                       if os.path.exists(p)), None)
    if path is None:
        pytest.skip(f"{name} is not installed (apt-get install {package})")
    return path


class RedisNode:
    """redis-server on its host, no persistence; `replica_of` makes it a replica."""

    def __init__(self, net: Network, host: Host, replica_of: RedisNode | None = None) -> None:
        self.net, self.host, self.port = net, host, REDIS_PORT
        self.binary = _binary("redis-server", "redis-server")
        self.replica_of = replica_of
        self.proc: Proc | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://{self.host.ip}:{self.port}/0"

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", self.host.ip, "--save", "", "--appendonly", "no",
                "--dir", str(self.net.workdir), "--protected-mode", "no"]
        if self.replica_of is not None:
            args += ["--replicaof", self.replica_of.host.ip, str(self.replica_of.port)]
        self.proc = self.host.popen(args, self.net.workdir / f"redis-{self.host.name}.log")
        wait_until(lambda: self.cli("PING").strip() == "PONG", f"redis on {self.host}", 15)

    def cli(self, *args: str) -> str:
        """redis-cli on this host (loopback is not bound: through its own address)."""
        out = self.host.run("redis-cli", "-h", self.host.ip, "-p", str(self.port), *args, timeout=10)
        return out.stdout

    def role(self) -> str:
        return self.cli("ROLE").split("\n", 1)[0].strip()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()


class Sentinel:
    def __init__(self, net: Network, host: Host, master: RedisNode, quorum: int = 2,
                 down_after_ms: int = 1000, failover_timeout_ms: int = 3000) -> None:
        self.net, self.host, self.port = net, host, SENTINEL_PORT
        conf = net.workdir / f"sentinel-{host.name}.conf"
        conf.write_text(
            f"port {SENTINEL_PORT}\nbind {host.ip}\nprotected-mode no\ndir {net.workdir}\n"
            f"sentinel monitor {SERVICE} {master.host.ip} {master.port} {quorum}\n"
            f"sentinel down-after-milliseconds {SERVICE} {down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} {failover_timeout_ms}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n")
        binary = _binary("redis-server", "redis-server")
        self.proc = host.popen([binary, str(conf), "--sentinel"], net.workdir / f"sentinel-{host.name}.log")
        wait_until(lambda: self.cli("PING").strip() == "PONG", f"sentinel on {host}", 15)

    def cli(self, *args: str) -> str:
        return self.host.run("redis-cli", "-h", self.host.ip, "-p", str(self.port), *args, timeout=10).stdout

    def master(self) -> str:
        """The master's address as this Sentinel knows it."""
        return self.cli("SENTINEL", "get-master-addr-by-name", SERVICE).split("\n", 1)[0].strip()

    def log(self) -> str:
        return self.proc.output()


class Postgres:
    """A throwaway PostgreSQL cluster (initdb into the network's work dir, as the postgres user), listening
    on its host's address; trust auth from the 10.77/16 network. Not the machine's service."""

    def __init__(self, net: Network, host: Host) -> None:
        self.net, self.host = net, host
        initdb, self.postgres = _binary("initdb", "postgresql"), _binary("postgres", "postgresql")
        self.dir = net.workdir / "pg"
        self.dir.mkdir()
        shutil.chown(self.dir, "postgres")
        out = subprocess.run(["runuser", "-u", "postgres", "--", initdb, "-D", str(self.dir / "data"),
                              "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"],
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"initdb: {out.stderr}")
        with open(self.dir / "data" / "pg_hba.conf", "a") as hba:
            hba.write("host all all 10.77.0.0/16 trust\n")
        self.proc: Proc | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host.ip}:{PG_PORT}/postgres"

    def start(self) -> None:
        self.proc = self.host.popen(
            [self.postgres, "-D", str(self.dir / "data"), "-c", f"listen_addresses={self.host.ip}",
             "-c", f"port={PG_PORT}", "-c", f"unix_socket_directories={self.dir}", "-c", "fsync=off",
             "-c", "synchronous_commit=off", "-c", "max_connections=200"],
            self.net.workdir / "postgres.log", user="postgres")
        wait_until(lambda: self.host.run("pg_isready", "-h", self.host.ip, "-p", str(PG_PORT),
                                         timeout=10).returncode == 0, "postgres ready", 30)

    def schema_url(self) -> str:
        """A URL whose tables live in a new schema of their own (several tests share one cluster)."""
        schema = f"t_{secrets.token_hex(6)}"
        out = self.host.run("psql", "-h", self.host.ip, "-U", "postgres", "-d", "postgres", "-qc",
                            f"CREATE SCHEMA {schema}")
        assert out.returncode == 0, out.stderr
        return f"{self.url}?options=-csearch_path%3D{schema}"

    def query(self, url: str, sql: str) -> list[list[str]]:
        """Rows of `sql` (psql on this host), each a list of text fields."""
        out = self.host.run("psql", url, "-AtF", "\t", "-c", sql)
        assert out.returncode == 0, out.stderr
        return [line.split("\t") for line in out.stdout.splitlines() if line]


class Hub:
    """`market-server serve` on its host, ports 8000 (HTTP) and 8001 (WebSocket) on its address."""

    def __init__(self, net: Network, host: Host, runtime: str, *flags: str) -> None:
        self.net, self.host, self.runtime, self.flags = net, host, runtime, flags
        self.data_dir = net.workdir / f"data-{host.name}"
        self.base = f"http://{host.ip}:{HTTP_PORT}"
        self.ws_base = f"ws://{host.ip}:{WS_PORT}"
        self.proc: Proc | None = None
        self.started = 0

    def start(self, wait: bool = True) -> Hub:
        self.data_dir.mkdir(exist_ok=True)
        self.started += 1
        self.proc = self.host.popen(
            [sys.executable, "-m", "server", "serve", "--host", self.host.ip, "--port", str(HTTP_PORT),
             "--ws-port", str(WS_PORT), "--runtime", self.runtime, "--data-dir", str(self.data_dir),
             "--jwt-secret", JWT_SECRET, "--no-demo-key", "--log-level", "info", *self.flags],
            self.net.workdir / f"hub-{self.host.name}.log", env={"PYTHONUNBUFFERED": "1"})
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 40.0) -> None:
        def ready() -> bool:
            assert self.proc is not None
            if not self.proc.alive():
                raise RuntimeError(f"hub {self.host.name} exited:\n{self.output()}")
            return self.readyz()[0] == 200

        wait_until(ready, f"hub {self.host.name} ready", timeout)

    def readyz(self) -> tuple[int, dict[str, Any]]:
        """(status, body) of /readyz, asked from the `clients` host; (0, {}) when unreachable."""
        def ask() -> tuple[int, dict[str, Any]]:
            try:
                resp = httpx.get(self.base + "/readyz", timeout=5.0)
                return resp.status_code, resp.json()
            except (httpx.TransportError, json.JSONDecodeError):
                return 0, {}

        return call_in(self.net, self.net.hosts["clients"], ask)

    def metric(self, name: str) -> float | None:
        def ask() -> float | None:
            for line in httpx.get(self.base + "/metrics", timeout=5.0).text.splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
            return None

        return call_in(self.net, self.net.hosts["clients"], ask)

    def output(self) -> str:
        return self.proc.output() if self.proc is not None else ""

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.output().splitlines() if line.startswith("{")]

    def stop(self) -> int:
        assert self.proc is not None
        return self.proc.stop()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()


def create_key(net: Network, hub: Hub, database_url: str, plan: str = "enterprise") -> str:
    """A key made by the CLI on the hub's host (storage is PostgreSQL, shared by every hub)."""
    out = hub.host.run(sys.executable, "-m", "server", "keys", "create", "--plan", plan, "--json",
                       "--data-dir", str(hub.data_dir), "--database-url", database_url)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["key"])
