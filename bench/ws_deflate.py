"""permessage-deflate on /ws/quotes: bytes on the wire per connection and server CPU per delivered frame, with and
without (issue 22 item 4).

Two runs of `market-server serve` (demo feed, default 250 ms ticks unless --tick-interval-ms), each with --conns
connections that all offer permessage-deflate: ``deflate`` (the default, negotiated) and ``raw``
(`--no-ws-deflate`: the same offer is declined). The clients run in this process on a raw asyncio protocol (the
handshake, then they only split frames and count wire bytes, inflating nothing). Per run:
- the snapshot frame's bytes on the wire (header included) and its JSON size;
- the bytes received per connection over --seconds (default 60) of ticks and heartbeats, frames, bytes per frame;
- the server's utime+stime over that window per delivered frame (µs), from /proc/<pid>/stat.

Byte counts do not depend on machine load (they depend on the feed: the demo feed is seeded); CPU figures do, so
run them on a quiet machine:

    .venv/bin/python bench/ws_deflate.py                         # 100 connections, 60 s each way
    .venv/bin/python bench/ws_deflate.py --conns 1000 --seconds 60 --json
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ws_fanout import cpu_times, raise_nofile  # noqa: E402

OFFER = "permessage-deflate; client_max_window_bits"


class Client(asyncio.Protocol):
    """Handshake, then count bytes and frames; the first frame is the snapshot."""

    def __init__(self, request: bytes, opened: asyncio.Future[None]) -> None:
        self.request = request
        self.opened = opened
        self.head = b""
        self.buf = b""
        self.open = False
        self.snapshot: int | None = None  # wire bytes of the first frame
        self.snapshot_rsv1 = False
        self.bytes = 0  # after the snapshot
        self.frames = 0
        self.rsv1 = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        if not self.open:
            self.head += data
            if b"\r\n\r\n" not in self.head:
                return
            head, data = self.head.split(b"\r\n\r\n", 1)
            if not head.startswith(b"HTTP/1.1 101"):
                self.opened.set_exception(RuntimeError(head[:200].decode(errors="replace")))
                return
            self.open = True
            self.opened.set_result(None)
        buf = self.buf + data
        at = 0
        while len(buf) - at >= 2:
            n = buf[at + 1] & 0x7F
            start = at + 2 if n < 126 else at + 4 if n == 126 else at + 10
            if len(buf) < start:
                break
            if n == 126:
                n = int.from_bytes(buf[at + 2:at + 4], "big")
            elif n == 127:
                n = int.from_bytes(buf[at + 2:at + 10], "big")
            end = start + n
            if len(buf) < end:
                break
            if self.snapshot is None:
                self.snapshot, self.snapshot_rsv1 = end - at, bool(buf[at] & 0x40)
            else:
                self.bytes += end - at
                self.frames += 1
                self.rsv1 += bool(buf[at] & 0x40)
            at = end
        self.buf = buf[at:]


def _request(key: str) -> bytes:
    nonce = base64.b64encode(os.urandom(16)).decode()
    return (f"GET /ws/quotes HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\nX-SERVICE-Key: {key}\r\n"
            f"Sec-WebSocket-Extensions: {OFFER}\r\n\r\n").encode()


async def measure(port: int, key: str, pid: int, conns: int, seconds: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    clients: list[Client] = []
    for _ in range(conns):
        opened: asyncio.Future[None] = loop.create_future()
        client = Client(_request(key), opened)
        await loop.create_connection(lambda c=client: c, "127.0.0.1", port)  # type: ignore[misc]
        await asyncio.wait_for(opened, 10)
        clients.append(client)
    while any(c.snapshot is None for c in clients):
        await asyncio.sleep(0.05)
    for c in clients:
        c.bytes = c.frames = c.rsv1 = 0
    u0, s0 = cpu_times(pid)
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    u1, s1 = cpu_times(pid)
    elapsed = time.monotonic() - t0
    frames = sum(c.frames for c in clients)
    total = sum(c.bytes for c in clients)
    cpu = (u1 - u0) + (s1 - s0)
    return {
        "conns": conns, "seconds": round(elapsed, 1),
        "snapshot_bytes": clients[0].snapshot, "snapshot_compressed": clients[0].snapshot_rsv1,
        "bytes_per_conn": round(total / conns), "frames_per_conn": round(frames / conns, 1),
        "bytes_per_frame": round(total / frames, 1) if frames else None,
        "compressed_frames_pct": round(100 * sum(c.rsv1 for c in clients) / frames, 1) if frames else None,
        "server_cpu_s": round(cpu, 3), "cpu_us_per_frame": round(cpu / frames * 1e6, 2) if frames else None,
    }


def run(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    from tests.conftest import ServerProcess, run_cli

    data = Path(tempfile.mkdtemp(prefix="bench-deflate-")) / "data"
    flags = ["--no-ws-deflate"] if mode == "raw" else []
    srv = ServerProcess(data, "granian", "--tick-interval-ms", str(args.tick_interval_ms), "--ws-max-conn",
                        "enterprise=100000", "--ws-handshake-rate", "1000000000", "--log-level", "warning", *flags)
    try:
        key = json.loads(run_cli(data, "keys", "create", "--plan", "enterprise", "--json").stdout)["key"]
        row = asyncio.run(measure(srv.ws_port, key, srv.proc.pid, args.conns, args.seconds))
    finally:
        srv.stop()
    return {"mode": mode, **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conns", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tick-interval-ms", type=int, default=250)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    raise_nofile()
    rows = [run(mode, args) for mode in ("raw", "deflate")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        print(f"{r['mode']:8} snapshot {r['snapshot_bytes']} B  {r['seconds']} s: {r['bytes_per_conn']} B/conn "
              f"{r['frames_per_conn']} frames/conn {r['bytes_per_frame']} B/frame "
              f"({r['compressed_frames_pct']}% RSV1)  server CPU {r['cpu_us_per_frame']} µs/frame")
    raw, dfl = rows
    if raw["bytes_per_conn"] and dfl["bytes_per_conn"]:
        print(f"deflate/raw: snapshot {dfl['snapshot_bytes'] / raw['snapshot_bytes']:.2f}, "
              f"ticks {dfl['bytes_per_conn'] / raw['bytes_per_conn']:.2f} (bytes per connection)")


if __name__ == "__main__":
    main()
