"""The checker of the network tests (issue 21 item 2): what every client of every hub received, every
accepted write and every notification delivered, and the properties that must hold whatever failed:

- no `(id, seq)` was delivered with two prices (anywhere: any client, any hub, any session);
- no client saw a seq twice or going back within a session;
- every gap (a seq jump, live or across a reconnect) was resumed over: either `recovered: true` and the
  missed ticks arrived in order, or `recovered: false` and a snapshot (reported, counted);
- no accepted (2xx) write is missing from storage at the end;
- no notification was delivered twice (and each accepted record's was delivered, when asked).

`Client` is a WebSocket client that follows the protocol as a careful application would: it resumes (same
connection) at a live gap and resumes (another connection, round robin over the hubs) when its
connection drops or stalls. `Receiver` is a webhook endpoint counting deliveries by `Idempotency-Key`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

STALL_S = 3.0  # a connection that brings nothing for this long (ticks flow several times a second) is dead


@dataclass
class Gap:
    client: str
    hub: str
    inst: str
    after: int  # the last seq seen before the gap
    got: int  # the seq that showed it (0: the connection dropped)
    outcome: str = ""  # "recovered" | "not recovered" | "" (never resolved: a violation)


@dataclass
class Checker:
    prices: dict[tuple[str, int], float] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)  # (id, seq) with two prices
    violations: list[str] = field(default_factory=list)  # anything else that must not happen
    gaps: list[Gap] = field(default_factory=list)
    ticks: Counter[str] = field(default_factory=Counter)  # ticks delivered, per hub
    # per hub: tick latency (a tick's `ts` to its arrival) in tenths of a millisecond -> ticks
    latencies: defaultdict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    accepted: list[tuple[str, str]] = field(default_factory=list)  # (kind, record id) answered 2xx
    refused: Counter[int] = field(default_factory=Counter)  # statuses of writes not accepted
    resumes: Counter[str] = field(default_factory=Counter)  # "recovered" / "not recovered"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tick(self, hub: str, inst: str, seq: int, price: float, ts: str, now: float) -> None:
        key = (inst, seq)
        seen = self.prices.setdefault(key, price)
        if seen != price and len(self.conflicts) < 1000:
            self.conflicts.append(f"{inst} seq {seq}: {seen} and {price} (the second on {hub})")
        self.ticks[hub] += 1
        self.latencies[hub][int((now - datetime.fromisoformat(ts).timestamp()) * 10_000)] += 1

    def write(self, kind: str, status: int, record_id: str | None) -> None:
        with self.lock:
            if 200 <= status < 300 and record_id:
                self.accepted.append((kind, record_id))
            else:
                self.refused[status] += 1

    def assert_holds(self, stored: set[str] | None = None, delivered: Receiver | None = None,
                     every_record_notified: bool = False) -> None:
        """Every property at once; the message lists everything found."""
        problems = list(dict.fromkeys(self.conflicts))[:20] + list(dict.fromkeys(self.violations))[:20]
        unresolved = [g for g in self.gaps if not g.outcome]
        problems += [f"gap never resumed: {g}" for g in unresolved[:20]]
        if stored is not None:
            lost = [rid for _, rid in self.accepted if rid not in stored]
            problems += [f"accepted record lost: {rid}" for rid in lost[:20]]
        if delivered is not None:
            twice = {k: n for k, n in delivered.by_key().items() if n > 1}
            problems += [f"notification sent {n} times: {k}" for k, n in list(twice.items())[:20]]
            if every_record_notified:
                ids = delivered.record_ids()
                problems += [f"accepted record never notified: {rid}" for _, rid in self.accepted if rid not in ids]
        assert not problems, "checker:\n" + "\n".join(problems)

    def summary(self) -> dict[str, Any]:
        def pct(hist: Counter[int], q: float) -> float:
            total, rank = sum(hist.values()), 0
            at = min(total - 1, int(q * total))
            for tenth in sorted(hist):
                rank += hist[tenth]
                if rank > at:
                    return tenth / 10
            return 0.0

        return {
            "ticks": dict(self.ticks), "distinct (id, seq)": len(self.prices), "conflicts": len(self.conflicts),
            "violations": len(self.violations), "gaps": len(self.gaps),
            "gaps recovered": sum(g.outcome == "recovered" for g in self.gaps),
            "gaps not recovered": sum(g.outcome == "not recovered" for g in self.gaps),
            "latency ms p50/p99": {h: [pct(v, 0.5), pct(v, 0.99)] for h, v in self.latencies.items()},
            "writes accepted": len(self.accepted), "writes refused": dict(self.refused),
        }


class Client:
    """One WebSocket client: follows every instrument, resumes over every gap, reconnects over `hubs`
    (round robin from `first`) when its connection drops or stalls."""

    def __init__(self, checker: Checker, name: str, hubs: list[tuple[str, str]], key: str, ids: list[str],
                 first: int = 0, stall_s: float = STALL_S) -> None:
        self.checker, self.name, self.hubs, self.key, self.ids = checker, name, hubs, key, sorted(ids)
        self.stall_s = stall_s
        self.at = first % len(hubs)
        self.last: dict[str, int] = {}
        self.epoch: str | None = None
        self.open_gaps: list[Gap] = []
        self.connected = asyncio.Event()
        self.sessions = 0
        self.hub = ""
        self._stop = False

    def stop(self) -> None:
        self._stop = True

    async def run(self) -> None:
        while not self._stop:
            self.hub, url = self.hubs[self.at]
            try:
                async with connect(url + "/ws/quotes", additional_headers={"X-SERVICE-Key": self.key},
                                   max_queue=None, open_timeout=3, ping_interval=None, close_timeout=1) as ws:
                    self.sessions += 1
                    await self._session(ws)
            except (OSError, TimeoutError, ConnectionClosed, InvalidHandshake, InvalidStatus):
                pass
            if self._stop:
                return
            self.connected.clear()
            if self.last and not self.open_gaps:  # whatever comes next is after a drop: a gap until resumed
                gap = Gap(self.name, self.hub, "*", 0, 0)
                self.open_gaps.append(gap)
                self.checker.gaps.append(gap)
            self.at = (self.at + 1) % len(self.hubs)
            await asyncio.sleep(0.2)

    async def _recv(self, ws: ClientConnection) -> dict[str, Any]:
        return json.loads(await asyncio.wait_for(ws.recv(), self.stall_s))  # type: ignore[no-any-return]

    async def _subscribe(self, ws: ClientConnection) -> None:
        body: dict[str, Any] = {"op": "subscribe", "ids": self.ids, "reqId": "s"}
        if self.last and self.epoch:
            body |= {"since": dict(self.last), "epoch": self.epoch}
        await ws.send(json.dumps(body))

    async def _session(self, ws: ClientConnection) -> None:
        # until the answer to our subscribe, ticks count for prices only; a snapshot sets the seqs only when
        # it answers a subscribe that did not recover (the one every connection opens with is skipped)
        answered = awaiting_snapshot = False
        await self._subscribe(ws)
        while not self._stop:
            msg = await self._recv(ws)
            kind = msg.get("type")
            if kind == "subscribed":
                recovered = msg.get("recovered")
                if recovered is not None:
                    self._resolve("recovered" if recovered else "not recovered")
                answered, awaiting_snapshot = True, recovered is not True
                self.connected.set()
            elif kind == "snapshot":
                if awaiting_snapshot:
                    self.last = {k: int(v) for k, v in msg["seqs"].items()}
                    self.epoch = msg.get("epoch", self.epoch)
                    awaiting_snapshot = False
                elif answered:
                    self.checker.violations.append(f"{self.name} on {self.hub}: a snapshot nobody asked for")
            elif kind == "tick":
                now = time.time()
                inst, seq = msg["id"], int(msg["seq"])
                self.checker.tick(self.hub, inst, seq, float(msg["price"]), msg["ts"], now)
                if not answered or awaiting_snapshot or inst not in self.last:
                    continue
                last = self.last[inst]
                if seq <= last:
                    self.checker.violations.append(f"{self.name} on {self.hub}: {inst} seq {seq} after {last}")
                    continue
                if seq > last + 1:  # a live gap: resume over it on this connection
                    gap = Gap(self.name, self.hub, inst, last, seq)
                    self.open_gaps.append(gap)
                    self.checker.gaps.append(gap)
                    answered = False
                    await self._subscribe(ws)
                    continue
                self.last[inst] = seq

    def _resolve(self, outcome: str) -> None:
        for gap in self.open_gaps:
            gap.outcome = outcome
        if self.open_gaps:
            self.checker.resumes[outcome] += 1
        self.open_gaps = []


class Receiver:
    """A webhook endpoint on `host:port` (bind it from inside the host that should own it): records each
    delivery's `Idempotency-Key` and body, answers 200."""

    def __init__(self, host: str, port: int) -> None:
        self.hits: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock, contextlib.suppress(json.JSONDecodeError):
                    receiver.hits.append((self.headers.get("Idempotency-Key", ""), json.loads(body)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{port}/generic/in"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def by_key(self) -> Counter[str]:
        with self.lock:
            return Counter(key for key, _ in self.hits)

    def record_ids(self) -> set[str]:
        with self.lock:
            return {str(body.get("id")) for _, body in self.hits}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
