"""compose.yaml's topology as plain processes: deploy/haproxy.cfg (the very file) as the one entry point
for HTTP and WebSocket in front of two hubs (granian and robyn) on one Redis and one store. Any hub
answers any request through it; a login made on one hub works on the other; a hub killed with -9 is
routed around without a failed request. Skipped where HAProxy is not installed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import ROOT, ServerProcess, free_ports
from tests.redis_service import redis_prefix, require_redis


class Entry:
    def __init__(self, hubs: tuple[ServerProcess, ServerProcess], log: Path) -> None:
        binary = shutil.which("haproxy")
        if binary is None:
            pytest.skip("haproxy is not installed (apt-get install haproxy) to run the entry-point test")
        self.http_port, self.ws_port = free_ports(2)
        a, b = hubs
        env = {**os.environ, "ENTRY_BIND": "127.0.0.1", "ENTRY_MAXCONN": "2000", "ENTRY_HTTP_PORT": str(self.http_port),
               "ENTRY_WS_PORT": str(self.ws_port), "HUB1_HOST": "127.0.0.1", "HUB2_HOST": "127.0.0.1",
               "HUB_HTTP_PORT": str(a.port), "HUB_WS_PORT": str(a.ws_port),
               "HUB2_HTTP_PORT": str(b.port), "HUB2_WS_PORT": str(b.ws_port)}
        self._log = open(log, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([binary, "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.http_port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                if httpx.get(self.base + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)  # the proxy's port is not open yet: nothing to await

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        self._log.close()


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[tuple[Entry, ServerProcess, ServerProcess]]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--public-rate", "100000",
                 "--trusted-proxies", "127.0.0.1")
        a = ServerProcess(tmp_path / "data", "granian", *flags)
        b = ServerProcess(tmp_path / "data", "robyn", *flags)
        entry = None
        try:
            entry = Entry((a, b), tmp_path / "haproxy.log")
            yield entry, a, b
        finally:
            if entry is not None:
                entry.stop()
            for hub in (a, b):
                hub.stop()


def test_one_entry_point_spreads_http_and_websockets_over_both_hubs_and_routes_around_a_dead_one(
        topology: tuple[Entry, ServerProcess, ServerProcess]) -> None:
    entry, a, b = topology
    nodes = {httpx.get(entry.base + "/readyz").json()["node"] for _ in range(6)}  # round robin
    assert len(nodes) == 2
    with httpx.Client(base_url=entry.base, timeout=10) as c:  # a login from one hub used on the other
        assert c.post("/api/auth/register", json={"email": "lb@example.com",
                                                  "password": "long-enough-1"}).status_code == 201
        token = c.post("/api/auth/login", json={"email": "lb@example.com", "password": "long-enough-1"}).json()["token"]
        for i in range(4):  # round robin: two on each hub
            resp = c.post("/api/submit-inquiry", headers={"Authorization": f"Bearer {token}"},
                          json={"product": f"PTA #{i}", "quantity": 5, "unit": "吨"})
            assert resp.status_code == 201, resp.text
        first = c.get("/api/market")
        assert c.get("/api/market", headers={"If-None-Match": first.headers["etag"]}).status_code in (200, 304)

    async def ticks() -> list[dict[str, object]]:
        async def one() -> dict[str, object]:
            async with connect(f"ws://127.0.0.1:{entry.ws_port}/ws/quotes?key={a.demo_key}") as ws:
                assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "snapshot"
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 5))
                    if msg["type"] == "tick":
                        return dict(msg)
        return list(await asyncio.gather(*(one() for _ in range(4))))

    assert all(int(str(t["seq"])) >= 1 for t in asyncio.run(ticks()))
    a.kill()  # kill -9: not one request through the entry point fails
    statuses = [httpx.get(entry.base + "/api/v1/quotes", headers={"X-SERVICE-Key": b.demo_key}).status_code
                for _ in range(20)]
    assert statuses == [200] * 20
    assert {httpx.get(entry.base + "/readyz").json()["node"] for _ in range(4)} == {
        httpx.get(b.base + "/readyz").json()["node"]}
