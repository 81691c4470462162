"""WebSocket clients of the checker in a process of their own, light enough for 1,000 clients at 200 ticks/s on
a few cores (bench/netsim_soak.py spreads them over several processes). Runs until SIGTERM, writes its status
every 0.5 s to OUT.status and, at the end, everything the checker needs to OUT:

    python -m tests.netsim.clients --hubs '[["hub1", "ws://10.77.5.2:8001"]]' --key KEY --clients 250 --out F

`RawClient` follows exactly the protocol of `tests.netsim.checker.Client` (subscribe to every instrument;
at a live gap resume on the same connection with `since`/`epoch`; after a drop, a failed handshake or STALL_S
without a byte, the next hub round robin and resume there; a snapshot sets the seqs only when it answers a
subscribe that did not recover) and records the same things, but on an `asyncio.Protocol` (uvloop) that
splits the frames itself (no per-message queue, future or task of a WebSocket library: the clients of the
previous version built a backlog of 51 s at 100 clients per hub). Tick frames are byte-identical on every
connection of a hub, so a tick's payload is parsed (orjson) and its price checked once per process (a cache
keyed by the payload's bytes); each client then only compares seqs. A payload with another price for the same
(id, seq) is other bytes, so it is parsed and checked: the checker's guarantees are unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from server.engine.redis_ticks import SEQ_JUMP
from tests.netsim.checker import STALL_S, Checker, Gap

DRAIN_S = 30.0  # at SIGTERM, how long clients may finish the resumes they started
HANDSHAKE_S = 10.0  # a connection not upgraded by then is given up (the next hub)
RECONNECT_S = 0.2
TICK = b'{"type":"tick"'
CACHE_MAX = 50_000  # parsed tick payloads kept (~200 new ones a second)


def dump(checker: Checker, clients: list[RawClient], extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "prices": [[inst, seq, price] for (inst, seq), price in checker.prices.items()],
        "conflicts": checker.conflicts, "violations": checker.violations,
        "gaps": [g.__dict__ for g in checker.gaps], "ticks": dict(checker.ticks),
        "latencies": {hub: dict(hist) for hub, hist in checker.latencies.items()},
        "resumes": dict(checker.resumes),
        "connected": sum(c.connected for c in clients), **extra,
    }


def merge(into: Checker, part: dict[str, Any]) -> None:
    """One process's record into the bench's checker: prices are checked across processes too."""
    for inst, seq, price in part["prices"]:
        seen = into.prices.setdefault((inst, seq), price)
        if seen != price:
            into.conflicts.append(f"{inst} seq {seq}: {seen} and {price} (across client processes)")
    into.conflicts += part["conflicts"]
    into.violations += part["violations"]
    into.gaps += [Gap(**g) for g in part["gaps"]]
    for hub, n in part["ticks"].items():
        into.ticks[hub] += n
    for hub, hist in part["latencies"].items():
        for tenth, n in hist.items():
            into.latencies[hub][int(tenth)] += n
    for outcome, n in part.get("resumes", {}).items():
        into.resumes[outcome] += n


def masked_text(payload: bytes) -> bytes:
    """A client text frame (a zero mask: the payload unchanged)."""
    n = len(payload)
    if n < 126:
        head = bytes([0x81, 0x80 | n])
    elif n < 65536:
        head = bytes([0x81, 0x80 | 126]) + n.to_bytes(2)
    else:
        head = bytes([0x81, 0x80 | 127]) + n.to_bytes(8)
    return head + b"\0\0\0\0" + payload


class Ticks:
    """What a process's clients share: the checker, the parsed tick payloads, when each hub's clients first got
    a tick past the failover's jump, the newest latencies (a backlog shows there first)."""

    def __init__(self, checker: Checker) -> None:
        self.checker = checker
        self.parsed: dict[bytes, tuple[str, int, float]] = {}  # payload -> (id, seq, ts as Unix time)
        self.jumped: dict[str, float] = {}  # hub -> arrival of its clients' first tick with seq >= SEQ_JUMP
        self.recent_ms = 0.0  # the latency of the newest tick frame any client handled
        self.failures: Counter[str] = Counter()  # connections that never got to subscribe, by reason

    def parse(self, payload: bytes, hub: str) -> tuple[str, int, float]:
        msg = orjson.loads(payload)
        inst, seq, price = msg["id"], int(msg["seq"]), float(msg["price"])
        key = (inst, seq)
        checker = self.checker
        seen = checker.prices.setdefault(key, price)
        if seen != price and len(checker.conflicts) < 1000:
            checker.conflicts.append(f"{inst} seq {seq}: {seen} and {price} (the second on {hub})")
        if len(self.parsed) >= CACHE_MAX:
            self.parsed.clear()
        parsed = self.parsed[payload] = (inst, seq, datetime.fromisoformat(msg["ts"]).timestamp())
        return parsed


class RawClient:
    """One client: the state of `checker.Client` (seqs, epoch, open gaps) across its connections."""

    def __init__(self, shared: Ticks, name: str, hubs: list[tuple[str, str]], key: str, ids: list[str],
                 first: int = 0, stall_s: float = STALL_S) -> None:
        self.shared, self.checker, self.name, self.hubs, self.key = shared, shared.checker, name, hubs, key
        self.ids = sorted(ids)
        self.stall_s = stall_s
        self.at = first % len(hubs)
        self.last: dict[str, int] = {}
        self.epoch: str | None = None
        self.open_gaps: list[Gap] = []
        self.connected = False
        self.sessions = 0
        self.hub = ""
        self.stopped = False
        self.conn: Connection | None = None

    def connect(self) -> None:
        if self.stopped:
            return
        self.hub, url = self.hubs[self.at]
        parts = urlsplit(url)
        self.conn = conn = Connection(self)
        loop = asyncio.get_running_loop()
        task = loop.create_task(asyncio.wait_for(
            loop.create_connection(lambda: conn, parts.hostname or "", parts.port or 80), HANDSHAKE_S))
        task.add_done_callback(self._connected)

    def _connected(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is not None:
            self.shared.failures[repr(task.exception())[:80] if not task.cancelled() else "cancelled"] += 1
            self.dropped()

    def dropped(self) -> None:
        """The connection is gone (or never was): a gap until resumed, then the next hub."""
        self.conn = None
        if self.stopped:
            return
        self.connected = False
        if self.last and not self.open_gaps:  # whatever comes next is after a drop: a gap until resumed
            gap = Gap(self.name, self.hub, "*", 0, 0)
            self.open_gaps.append(gap)
            self.checker.gaps.append(gap)
        self.at = (self.at + 1) % len(self.hubs)
        asyncio.get_running_loop().call_later(RECONNECT_S, self.connect)

    def subscribe(self) -> bytes:
        body: dict[str, Any] = {"op": "subscribe", "ids": self.ids, "reqId": "s"}
        if self.last and self.epoch:
            body |= {"since": self.last, "epoch": self.epoch}
        return masked_text(orjson.dumps(body))

    def resolve(self, outcome: str) -> None:
        for gap in self.open_gaps:
            gap.outcome = outcome
        if self.open_gaps:
            self.checker.resumes[outcome] += 1
        self.open_gaps = []

    def stop(self) -> None:
        self.stopped = True
        if self.conn is not None and self.conn.transport is not None:
            self.conn.transport.abort()


class Connection(asyncio.Protocol):
    """One connection of a `RawClient`: the handshake, then frames split by hand (the server never masks or
    fragments; a ping gets its pong)."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.open = False
        self.opened_at = self.data_at = time.monotonic()
        # until the answer to our subscribe, ticks count for prices only; a snapshot sets the seqs only when it
        # answers a subscribe that did not recover (the one every connection opens with is skipped)
        self.answered = self.awaiting_snapshot = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        c = self.client
        host = c.hubs[c.at][1].split("//", 1)[1]
        nonce = base64.b64encode(os.urandom(16)).decode()
        transport.write((f"GET /ws/quotes HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"  # type: ignore[attr-defined]
                         f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
                         f"X-SERVICE-Key: {c.key}\r\n\r\n").encode())

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client.conn is self:
            self.client.dropped()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self.data_at = time.monotonic()
        buf = self.buf + data if self.buf else data
        if not self.open:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.buf = buf
                return
            if not buf.startswith(b"HTTP/1.1 101"):
                self.client.shared.failures[buf[:buf.find(b"\r\n")].decode(errors="replace")] += 1
                self.buf = b""
                self.abort()
                return
            self.open = True
            self.client.sessions += 1
            assert self.transport is not None
            self.transport.write(self.client.subscribe())
            buf = buf[end + 4:]
        self.buf = self._frames(buf)

    def _frames(self, buf: bytes) -> bytes:
        i, size = 0, len(buf)
        now = time.time()
        c = self.client
        shared = c.shared
        parsed = shared.parsed
        checker = c.checker
        hub = c.hub
        hist = checker.latencies[hub]
        last = c.last
        ticks = 0
        lat_ms = 0.0
        while size - i >= 2:
            n = buf[i + 1] & 0x7F
            head = 2
            if n == 126:
                if size - i < 4:
                    break
                n, head = int.from_bytes(buf[i + 2:i + 4]), 4
            elif n == 127:
                if size - i < 10:
                    break
                n, head = int.from_bytes(buf[i + 2:i + 10]), 10
            if size - i < head + n:
                break
            start = i + head
            i = end = start + n
            opcode = buf[start - head] & 0x0F
            if opcode != 1:
                if opcode == 9 and self.transport is not None:  # ping: a masked pong, zero mask
                    payload = buf[start:end]
                    self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
                elif opcode == 8:
                    self.abort()
                    return b""
                continue
            if buf.startswith(TICK, start):
                payload = buf[start:end]
                known = parsed.get(payload)
                inst, seq, ts = known if known is not None else shared.parse(payload, hub)
                ticks += 1
                lat_ms = (now - ts) * 1000.0
                hist[int(lat_ms * 10)] += 1
                if seq >= SEQ_JUMP and hub not in shared.jumped:
                    shared.jumped[hub] = now
                if not self.answered or self.awaiting_snapshot:
                    continue
                prev = last.get(inst)
                if prev is None or seq == prev + 1:
                    if prev is not None:
                        last[inst] = seq
                    continue
                if seq <= prev:
                    checker.violations.append(f"{c.name} on {hub}: {inst} seq {seq} after {prev}")
                    continue
                gap = Gap(c.name, hub, inst, prev, seq)  # a live gap: resume over it on this connection
                c.open_gaps.append(gap)
                checker.gaps.append(gap)
                self.answered = False
                assert self.transport is not None
                self.transport.write(c.subscribe())
                continue
            msg = orjson.loads(buf[start:end])
            kind = msg.get("type")
            if kind == "subscribed":
                recovered = msg.get("recovered")
                if recovered is not None:
                    c.resolve("recovered" if recovered else "not recovered")
                self.answered, self.awaiting_snapshot = True, recovered is not True
                c.connected = True
            elif kind == "snapshot":
                if self.awaiting_snapshot:
                    c.last = last = {k: int(v) for k, v in msg["seqs"].items()}
                    c.epoch = msg.get("epoch", c.epoch)
                    self.awaiting_snapshot = False
                elif self.answered:
                    checker.violations.append(f"{c.name} on {hub}: a snapshot nobody asked for")
        if ticks:
            checker.ticks[hub] += ticks
            shared.recent_ms = lat_ms
        return buf[i:]


async def run(args: argparse.Namespace) -> None:
    hubs = [tuple(h) for h in json.loads(args.hubs)]
    checker = Checker()
    shared = Ticks(checker)
    clients = [RawClient(shared, f"p{args.first}-{i}", hubs, args.key, json.loads(args.ids),  # type: ignore[arg-type]
                         first=args.first + i) for i in range(args.clients)]
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    for i, c in enumerate(clients):  # spread the handshakes a little
        loop.call_later(i * 0.002, c.connect)
    status = Path(args.out + ".status")
    cpu0 = time.process_time()

    def watch() -> None:
        """Connections silent for STALL_S after their upgrade, or not upgraded after HANDSHAKE_S: dropped."""
        now = time.monotonic()
        for c in clients:
            conn = c.conn
            if conn is not None and conn.transport is not None and (
                    (conn.open and now - conn.data_at > c.stall_s)
                    or (not conn.open and now - conn.opened_at > HANDSHAKE_S)):
                shared.failures["stalled" if conn.open else "no upgrade"] += 1
                conn.abort()

    while not stop.is_set():
        watch()
        tmp = status.with_suffix(".tmp")
        tmp.write_text(json.dumps({"connected": sum(c.connected for c in clients), "ticks": dict(checker.ticks),
                                   "jumped": shared.jumped, "cpu_s": round(time.process_time() - cpu0, 2),
                                   "recent_ms": round(shared.recent_ms, 1), "at": time.time(),
                                   "failures": shared.failures}))
        tmp.replace(status)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)
    drain = loop.time() + DRAIN_S  # resumes in flight get their answer
    while any(c.open_gaps for c in clients) and loop.time() < drain:
        watch()
        await asyncio.sleep(0.1)
    for c in clients:
        c.stop()
    await asyncio.sleep(0)
    extra = {"cpu_s": round(time.process_time() - cpu0, 2), "jumped": shared.jumped,
             "sessions": sum(c.sessions for c in clients), "failures": shared.failures}
    Path(args.out).write_text(json.dumps(dump(checker, clients, extra)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hubs", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--out", required=True)
    import uvloop

    uvloop.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
