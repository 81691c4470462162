"""Open-loop HTTP/1.1 load at a fixed rate, latency measured from each request's intended start.

wrk is closed-loop (a connection sends its next request when the last one is answered) and
Debian has no wrk2, so latency "at 50% of peak throughput" comes from this client: request
i is due at t0 + i/rate whether or not earlier ones were answered; it goes out on an idle
keep-alive connection, or waits for one, and its latency runs from its due time. A server
that stalls is therefore charged for every request that queued behind the stall (no
coordinated omission). Between loop passes the generator naps with the OS's microsecond sleep
until the next request is due (libuv timers have 1 ms resolution, which would send requests in
1 ms bursts; spinning would take a core from the server). `lag` (when
this client noticed a request was due, minus its due time) shows whether the client itself
kept up: if its p99 is large, latencies include its own delay.

    python bench/openloop.py --url http://127.0.0.1:8000/api/v1/quotes --rate 15000 --duration 10 \\
        -H "X-SERVICE-Key: KEY"
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import uvloop

HEADER_END = b"\r\n\r\n"
CONTENT_LENGTH = b"\r\ncontent-length:"
MAX_NAP_S = 0.0005


@dataclass(slots=True)
class Result:
    rate: float
    achieved: float
    sent: int
    completed: int
    errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    lag_p99_ms: float
    unfinished: int = 0

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


@dataclass(slots=True)
class Samples:
    measure_from: float
    latencies: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    errors: int = 0
    completed: int = 0


class Connection(asyncio.Protocol):
    """One keep-alive connection with at most one request in flight."""

    def __init__(self, gen: OpenLoop) -> None:
        self.gen = gen
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.due = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.gen.lost(self)

    def send(self, due: float) -> None:
        self.due = due
        self.transport.write(self.gen.request)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        end = buf.find(HEADER_END)
        if end < 0:
            self.buf = buf
            return
        at = buf.find(CONTENT_LENGTH, 0, end)  # servers here send it lower-case; fall back for others
        head = buf if at >= 0 else buf[:end].lower()
        if at < 0 and (at := head.find(CONTENT_LENGTH)) < 0:
            raise RuntimeError("response without content-length")
        stop = head.find(b"\r\n", at + 2, end + 2)
        total = end + 4 + int(head[at + len(CONTENT_LENGTH): stop])
        if len(buf) < total:
            self.buf = buf
            return
        self.buf = buf[total:]
        self.gen.done(self, int(buf[9:12]))


class OpenLoop:
    def __init__(self, url: str, headers: list[str], rate: float, duration: float, connections: int,
                 warmup: float) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"GET {path} HTTP/1.1", f"Host: {parts.netloc}", *headers]
        self.request = ("\r\n".join(lines) + "\r\n\r\n").encode()
        self.rate, self.duration, self.n_conn, self.warmup = rate, duration, connections, warmup
        self.idle: list[Connection] = []
        self.backlog: collections.deque[float] = collections.deque()
        self.samples = Samples(0.0)
        self.in_flight = 0
        self.sent = 0
        self.closed = 0

    def done(self, conn: Connection, status: int) -> None:
        now = time.perf_counter()
        self.in_flight -= 1
        if conn.due >= self.samples.measure_from:
            self.samples.latencies.append(now - conn.due)
            self.samples.completed += 1
            if not 200 <= status < 300:
                self.samples.errors += 1
        if self.backlog:
            self._send(conn, self.backlog.popleft())
        else:
            self.idle.append(conn)

    def lost(self, conn: Connection) -> None:
        self.closed += 1
        if conn in self.idle:
            self.idle.remove(conn)

    def _send(self, conn: Connection, due: float) -> None:
        self.in_flight += 1
        self.sent += 1
        conn.send(due)

    async def run(self) -> Result:
        loop = asyncio.get_running_loop()
        for _ in range(self.n_conn):
            _, conn = await loop.create_connection(lambda: Connection(self), self.host, self.port)
            self.idle.append(conn)
        t0 = time.perf_counter()
        self.samples.measure_from = t0 + self.warmup
        issued = 0
        end = t0 + self.warmup + self.duration
        while (now := time.perf_counter()) < end:
            due_count = int((now - t0) * self.rate) + 1  # request i is due at t0 + i / rate
            while issued < due_count:
                due = t0 + issued / self.rate
                issued += 1
                if due >= self.samples.measure_from:
                    self.samples.lags.append(now - due)  # this client's own lateness, not the server's
                if self.idle:
                    self._send(self.idle.pop(), due)
                else:
                    self.backlog.append(due)
            # libuv timers have 1 ms resolution (requests would go out in 1 ms bursts) and spinning
            # would take a core from the server: nap with the OS's microsecond sleep until the
            # next request is due (answers wait in the socket at most that long), then poll I/O
            gap = t0 + issued / self.rate - time.perf_counter()
            if gap > 0:
                time.sleep(min(gap, MAX_NAP_S))
            await asyncio.sleep(0)
        drain_until = time.perf_counter() + 5.0
        while (self.in_flight or self.backlog) and time.perf_counter() < drain_until:
            await asyncio.sleep(0.005)
        for conn in self.idle:
            conn.transport.close()  # type: ignore[union-attr]
        return self.result(issued)

    def result(self, issued: int) -> Result:
        lat = sorted(self.samples.latencies)
        lags = sorted(self.samples.lags)

        def pct(values: list[float], q: float) -> float:
            return values[min(len(values) - 1, int(q * len(values)))] * 1000.0 if values else float("nan")

        return Result(
            rate=self.rate, achieved=self.samples.completed / self.duration, sent=self.sent,
            completed=self.samples.completed, errors=self.samples.errors,
            p50_ms=pct(lat, 0.5), p90_ms=pct(lat, 0.9), p99_ms=pct(lat, 0.99), p999_ms=pct(lat, 0.999),
            max_ms=lat[-1] * 1000.0 if lat else float("nan"), lag_p99_ms=pct(lags, 0.99),
            unfinished=issued - self.sent + self.in_flight,
        )


def measure(url: str, rate: float, duration: float, headers: list[str] | None = None, connections: int = 64,
            warmup: float = 1.0) -> Result:
    """Run one open-loop measurement in a fresh uvloop loop."""
    return uvloop.run(OpenLoop(url, headers or [], rate, duration, connections, warmup).run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--rate", type=float, required=True, help="requests per second")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds (after the warm-up)")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("-H", "--header", action="append", default=[])
    args = parser.parse_args()
    result = measure(args.url, args.rate, args.duration, args.header, args.connections, args.warmup)
    print(json.dumps(result.as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
