"""The deployment of docs/scaling.md on the simulated network: hubs, Redis (a master, optionally a replica
and three Sentinels), PostgreSQL, and a `clients` host for the test's own clients, webhook receiver and
probes. `Load` runs WebSocket clients and a writer from the clients host and feeds the checker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from server.market.catalogue import default_catalogue
from tests.netsim.checker import STALL_S, Checker, Client, Receiver
from tests.netsim.clients import merge
from tests.netsim.net import Host, Network, Proc
from tests.netsim.services import SERVICE, Hub, Postgres, RedisNode, Sentinel, call_in, create_key, wait_until

IDS = [inst.id for inst in default_catalogue().instruments]
WEBHOOK_PORT = 9000


@dataclass
class Topology:
    net: Network
    clients: Host
    pg: Postgres
    master: RedisNode
    hubs: list[Hub]
    database_url: str
    receiver: Receiver
    replica: RedisNode | None = None
    sentinels: list[Sentinel] = field(default_factory=list)
    key: str = ""

    @property
    def redis_hosts(self) -> list[Host]:
        return [n.host for n in (self.master, self.replica) if n is not None] + [s.host for s in self.sentinels]

    def redis_url(self, prefix_db: int = 0) -> str:
        if not self.sentinels:
            return self.master.url
        hosts = ",".join(f"{s.host.ip}:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{prefix_db}"


@contextlib.contextmanager
def deployment(hubs: int = 2, sentinel: bool = False, tick_interval_ms: int = 100,
               runtimes: tuple[str, ...] = ("granian", "robyn"), extra: tuple[str, ...] = (),
               shape: tuple[float, float, float] | None = None) -> Iterator[Topology]:
    """The whole deployment, started; everything removed afterwards (also on failure). `shape`: (delay ms,
    jitter ms, loss) on every link, from before anything starts."""
    with Network() as net:
        clients = net.host("clients")
        pg_host = net.host("pg")
        redis_hosts = [net.host("redis1")] + ([net.host("redis2")] if sentinel else [])
        sentinel_hosts = [net.host(f"sentinel{i}") for i in (1, 2, 3)] if sentinel else []
        hub_hosts = [net.host(f"hub{i + 1}") for i in range(hubs)]
        if shape is not None:
            net.shape(*shape)
        pg = Postgres(net, pg_host)
        master = RedisNode(net, redis_hosts[0])
        replica = RedisNode(net, redis_hosts[1], replica_of=master) if sentinel else None
        sentinels = [Sentinel(net, h, master) for h in sentinel_hosts]
        receiver = call_in(net, clients, lambda: Receiver(clients.ip, WEBHOOK_PORT))
        database_url = pg.schema_url()
        topo = Topology(net, clients, pg, master, [], database_url, receiver, replica, sentinels)
        flags = ("--engine", "redis", "--redis-url", topo.redis_url(), "--redis-prefix", "market:",
                 "--database-url", database_url, "--public-rate", "100000",
                 "--tick-interval-ms", str(tick_interval_ms), "--webhook", f"generic={receiver.url}", *extra)
        try:
            for i, host in enumerate(hub_hosts):
                topo.hubs.append(Hub(net, host, runtimes[i % len(runtimes)], *flags))
            topo.hubs[0].start()  # the first seeds the database; the others start together
            for hub in topo.hubs[1:]:
                hub.start(wait=False)
            for hub in topo.hubs[1:]:
                hub.wait_ready()
            topo.key = create_key(net, topo.hubs[0], database_url)
            if replica is not None:  # the deployment of docs/scaling.md: a replica in sync (its first sync waits
                # repl-diskless-sync-delay, 5 s; a master killed before has a promoted replica with no keys at all)
                wait_until(lambda: "master_link_status:up" in replica.cli("INFO", "replication"),
                           "the replica's first sync with the master", 30)
            yield topo
        finally:
            for hub in topo.hubs:
                if hub.proc is not None:
                    hub.stop()
            receiver.close()


class Load:
    """Clients on every hub and a writer, run on an event loop in a thread inside the clients host."""

    def __init__(self, topo: Topology, clients_per_hub: int, write_every_s: float = 0.2,
                 patient: bool = False, procs: int = 0) -> None:
        """`patient`: every other client waits out a silent connection for a minute (stays on its hub through
        a partition) instead of reconnecting elsewhere after STALL_S. `procs`: run the clients in that many
        processes of their own (tests/netsim/clients.py) instead of this one's thread; merged at `stop()`."""
        self.topo, self.checker = topo, Checker()
        hubs = [(h.host.name, h.ws_base) for h in topo.hubs]
        self.total = clients_per_hub * len(hubs)
        self.clients = [] if procs else [
            Client(self.checker, f"c{i}", hubs, topo.key, IDS, first=i % len(hubs),
                   stall_s=60.0 if patient and (i // len(hubs)) % 2 == 0 else STALL_S) for i in range(self.total)]
        self.procs: list[tuple[Proc, Path]] = []
        for n in range(procs):
            share = self.total // procs + (1 if n < self.total % procs else 0)
            out = topo.net.workdir / f"clients-{n}.json"
            self.procs.append((topo.clients.popen(
                [sys.executable, "-m", "tests.netsim.clients", "--hubs", json.dumps(hubs), "--ids", json.dumps(IDS),
                 "--key", topo.key, "--clients", str(share), "--first", str(n * self.total), "--out", str(out)],
                topo.net.workdir / f"clients-{n}.log"), out))
        self.write_every_s = write_every_s
        self.writes: list[tuple[str, int, str]] = []  # (hub, status, problem type or record id)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self.error: BaseException | None = None

    def __enter__(self) -> Load:
        self._thread = threading.Thread(target=self._main, name="load", daemon=True)
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _main(self) -> None:
        try:
            with self.topo.net.inside(self.topo.clients):
                asyncio.run(self._run())
        except BaseException as exc:  # reported by stop()
            self.error = exc

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        tasks = [asyncio.create_task(c.run()) for c in self.clients]
        writer = asyncio.create_task(self._write()) if self.write_every_s else None
        self._started.set()
        await self._stopping.wait()
        for c in self.clients:
            c.stop()
        for task in [*tasks, *([writer] if writer else [])]:
            task.cancel()
        await asyncio.gather(*tasks, *([writer] if writer else []), return_exceptions=True)

    async def _write(self) -> None:
        """Inquiries, round robin over the hubs, one every `write_every_s`; each answer recorded."""
        bases = [(h.host.name, h.base) for h in self.topo.hubs]
        async with httpx.AsyncClient(timeout=10.0) as http:
            email = "netsim@example.com"
            token = ""
            while not token:
                for _, base in bases:
                    with contextlib.suppress(httpx.HTTPError):
                        await http.post(base + "/api/auth/register", json={"email": email, "password": "long-enough-1"})
                        resp = await http.post(base + "/api/auth/login", json={"email": email,
                                                                                "password": "long-enough-1"})
                        if resp.status_code == 200:
                            token = resp.json()["token"]
                            break
                else:
                    await asyncio.sleep(0.5)
            n = 0
            while True:
                name, base = bases[n % len(bases)]
                n += 1
                try:
                    resp = await http.post(base + "/api/submit-inquiry", headers={"Authorization": f"Bearer {token}"},
                                           json={"product": f"netsim #{n}", "quantity": n, "unit": "吨"})
                    body: Any = resp.json() if resp.headers.get("content-type", "").endswith("json") else {}
                    status = resp.status_code
                except httpx.HTTPError:
                    status, body = 0, {}
                record = str(body.get("id", "")) if 200 <= status < 300 else str(body.get("type", ""))
                self.writes.append((name, status, record))
                self.checker.write("inquiry", status, record if 200 <= status < 300 else None)
                await asyncio.sleep(self.write_every_s)

    def statuses(self) -> list[dict[str, Any]]:
        """What each client process wrote last (tests/netsim/clients.py: connected, ticks per hub, CPU, ...)."""
        out = []
        for _, path in self.procs:
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                out.append(json.loads(Path(str(path) + ".status").read_text()))
        return out

    def stop(self) -> None:
        for proc, _ in self.procs:
            proc.signal(signal.SIGTERM)
        for proc, out in self.procs:
            proc.proc.wait(90)
            merge(self.checker, json.loads(out.read_text()))
        self.procs = []
        if self._loop is not None and self._stopping is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(15)
        if self.error is not None:
            raise self.error

    def connected(self) -> int:
        return sum(c.connected.is_set() for c in self.clients) + sum(s["connected"] for s in self.statuses())

    def ticks_on(self, hub: Hub) -> int:
        return self.checker.ticks[hub.host.name] + sum(s["ticks"].get(hub.host.name, 0) for s in self.statuses())


def switched_at(sentinels: list[Sentinel], after: float) -> float | None:
    """When a Sentinel first logged +switch-master (the promotion) after `after`, as a Unix time."""
    times = []
    for s in sentinels:
        for line in s.log().splitlines():
            if "+switch-master" in line:
                # 1234:X 26 Nov 2026 12:40:01.123 # +switch-master market 10.77.3.2 6379 10.77.4.2 6379
                found = re.search(r"(\d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2}\.\d{3})", line)
                if found:
                    at = datetime.strptime(found.group(1), "%d %b %Y %H:%M:%S.%f").timestamp()
                    if at >= after - 1:
                        times.append(at)
    return min(times) if times else None


def promoted(topo: Topology, killed_at: float) -> float:
    """When Sentinel promoted a replica after the master was killed at `killed_at` (waits for it)."""
    wait_until(lambda: switched_at(topo.sentinels, killed_at) is not None, "Sentinel promotes the replica", 30)
    at = switched_at(topo.sentinels, killed_at)
    assert at is not None
    return at


def fed_again(load: Load, hubs: list[Hub]) -> dict[str, float]:
    """When each hub's clients got 20 more ticks (Unix time)."""
    ticks = {h.host.name: load.ticks_on(h) for h in hubs}
    fed: dict[str, float] = {}

    def check() -> bool:
        for h in hubs:
            if h.host.name not in fed and load.ticks_on(h) > ticks[h.host.name] + 20:
                fed[h.host.name] = time.time()
        return len(fed) == len(hubs)

    wait_until(check, "ticks again after the promotion", 30)
    return fed
