"""`serve --workers N` (SPEC 12): N whole hubs on the same HTTP and WebSocket ports (SO_REUSEPORT),
on both runtimes, under one supervisor that forwards SIGTERM; refused without `--engine redis`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import ROOT, RUNTIMES, ServerProcess, free_ports
from tests.redis_service import redis_prefix, require_redis

WORKER_LINE = re.compile(r"market-server\[worker (\d)\]: pid (\d+) node ([0-9a-f]+)")


def test_several_workers_need_the_redis_engine_and_say_so_in_one_line(tmp_path: Path) -> None:
    port, ws_port = free_ports(2)
    out = subprocess.run(
        [sys.executable, "-m", "server", "serve", "--workers", "2", "--engine", "memory", "--port", str(port),
         "--ws-port", str(ws_port), "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "--workers" in out.stderr and "--engine redis" in out.stderr, out.stderr
    bad = subprocess.run([sys.executable, "-m", "server", "serve", "--workers", "0", "--data-dir",
                          str(tmp_path / "data")], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert bad.returncode == 2 and "--workers: must be from 1 to 64" in bad.stderr


@pytest.fixture(scope="module", params=RUNTIMES)
def workers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        srv = ServerProcess(tmp_path_factory.mktemp(f"workers-{request.param}") / "data", request.param,
                            "--workers", "2", "--engine", "redis", "--redis-url", url, "--redis-prefix", prefix,
                            "--public-rate", "100000")
        yield srv
        srv.stop()


def _pids(srv: ServerProcess) -> dict[int, int]:
    """worker id -> pid, from the children's start lines (both started: bounded wait)."""
    deadline = time.monotonic() + 30
    while True:
        found = {int(w): int(p) for w, p, _ in WORKER_LINE.findall(srv.output())}
        if len(found) == 2 or time.monotonic() > deadline:
            return found
        time.sleep(0.05)  # another process's log: nothing to await


def test_both_workers_answer_on_the_shared_ports_and_ticks_reach_websocket_clients(workers: ServerProcess) -> None:
    pids = _pids(workers)
    assert sorted(pids) == [1, 2] and pids[1] != pids[2] and workers.proc.pid not in pids.values()
    seen: dict[int, str] = {}
    deadline = time.monotonic() + 30
    while len(seen) < 2:  # a new connection each time: the kernel spreads them over both listeners
        assert time.monotonic() < deadline, f"only workers {sorted(seen)} answered"
        resp = httpx.get(workers.base + "/readyz", timeout=5.0)
        if resp.status_code == 200:
            body = resp.json()
            seen[body["worker"]] = body["node"]
    assert seen.keys() == {1, 2} and seen[1] != seen[2]
    out = workers.output()
    assert out.count("demo key (professional, shown once") == 1  # created (and shown) by one worker only
    logged = {json.loads(line).get("worker") for line in out.splitlines() if line.startswith("{")}
    assert {1, 2} <= logged

    async def ticks() -> list[int]:
        async def one() -> int:
            async with connect(f"{workers.ws_base}/ws/quotes?key={workers.demo_key}") as ws:
                assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "snapshot"
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 5))
                    if msg["type"] == "tick":
                        return int(msg["seq"])
        return list(await asyncio.gather(*(one() for _ in range(4))))

    assert all(seq >= 1 for seq in asyncio.run(ticks()))


def test_a_killed_worker_is_started_again_and_answers_on_the_shared_port(workers: ServerProcess) -> None:
    pids = _pids(workers)
    os.kill(pids[2], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:  # its start line again, with a new pid
        again = [int(p) for w, p, _ in WORKER_LINE.findall(workers.output()) if w == "2"]
        if again[-1] != pids[2]:
            break
        assert time.monotonic() < deadline, workers.output()
        time.sleep(0.05)  # another process starting: nothing to await
    seen: set[int] = set()
    while seen != {1, 2}:
        assert time.monotonic() < deadline, f"only workers {sorted(seen)} answered after the restart"
        resp = httpx.get(workers.base + "/readyz", timeout=5.0)
        if resp.status_code == 200:
            seen.add(resp.json()["worker"])
    assert workers.proc.poll() is None and "worker 2 (pid" in workers.output()


def test_sigterm_stops_every_worker_and_the_supervisor_exits_0(workers: ServerProcess) -> None:
    pids = {w: int(p) for w, p, _ in WORKER_LINE.findall(workers.output())}  # the latest pid of each
    assert workers.stop() == 0, workers.output()
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert workers.output().count('"msg":"hub stopped"') == 2  # the killed one never logged it
