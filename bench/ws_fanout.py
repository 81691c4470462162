"""WebSocket fan-out: server CPU per delivered frame, frames/s, tick latency, idle memory per connection.

For each scenario (connections x ticks/s) and implementation:
- ``ours``: `market-server serve` (demo feed at the chosen tick rate, an enterprise key allowed
  10,000 connections) - each tick framed once, one write per connection per batch;
- ``broadcast``: the baseline, a bare `websockets.asyncio.server.serve` app in its own process
  with the same demo feed calling `websockets.broadcast()` once per tick;
- ``picows``: the strong peer, a bare picows server (Cython framing and writes) in its own process with the
  same demo feed: each tick serialised once, `WSTransport.send` of those bytes to every connection.

`--pin` puts the server on core 0 and the client process on core 1 (bench/run passes it).

A lightweight client process (uvloop, raw asyncio protocol: handshake, then it only splits
frames) opens the connections, counts tick frames and measures latency (receive time minus the
tick's `ts`) on a sample of connections. The harness reads the server's utime+stime from
/proc/<pid>/stat and its RSS from /proc/<pid>/status around the measured window.

Only 127.0.0.1; every run is bounded (connect timeout, fixed windows).

    .venv/bin/python bench/ws_fanout.py                        # default scenarios, both implementations
    .venv/bin/python bench/ws_fanout.py --scenario 1000x200 --impl ours --duration 10

Live candles (SPEC 14, issue 20): `--candles 1m` makes every client subscribe to all instruments with 1m candle
frames (and counts candle and heartbeat frames apart from ticks); `--candle-cost` runs `ours` twice per scenario,
without and with candles, and prints the server CPU per delivered candle frame (the extra CPU over the extra
frames) against a tick frame's (target: within 1.2x), plus non-final frames that followed the previous one of
their (id, interval) on the same connection by less than 0.5 s (target: none; sampled connections):

    .venv/bin/python bench/ws_fanout.py --scenario 1000x200 --candle-cost --pin --duration 20
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEAN_MOVERS = 0.25  # the demo feed moves a uniform 10-40% of instruments per batch
CLK_TCK = os.sysconf("SC_CLK_TCK")


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_times(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def interval_ms(ticks_per_s: float, n_instruments: int) -> int:
    return max(10, round(1000.0 * n_instruments * MEAN_MOVERS / ticks_per_s))


# --- the client process ---------------------------------------------------------------------------


class Counter:
    def __init__(self) -> None:
        self.candles = 0
        self.beats = 0
        self.too_fast = 0
        self.frames = 0
        self.lat: list[float] = []
        self.when: list[float] = []
        self.opened = 0
        self.failed = 0
        self.closed = 0


_PREFIX_CACHE: dict[bytes, float] = {}


def ts_epoch(text: bytes) -> float:
    """'YYYY-MM-DDTHH:MM:SS.mmm' (local +08:00) -> epoch seconds, the second part cached."""
    prefix = text[:19]
    base = _PREFIX_CACHE.get(prefix)
    if base is None:
        base = _PREFIX_CACHE[prefix] = datetime.fromisoformat(prefix.decode() + "+08:00").timestamp()
    return base + int(text[20:23]) / 1000.0


class RawClient(asyncio.Protocol):
    """Handshake, then split frames: count ticks; on sampled connections read `ts` for latency."""

    def __init__(self, request: bytes, counter: Counter, sample: bool, opened: asyncio.Future[None],
                 subscribe: bytes = b"") -> None:
        self.request, self.counter, self.sample, self.opened_fut = request, counter, sample, opened
        self.subscribe = subscribe  # a masked text frame sent once the handshake is done (candles)
        self.candle_at: dict[bytes, float] = {}
        self.buf = b""
        self.open = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        if not self.open:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.buf = buf
                return
            if not buf.startswith(b"HTTP/1.1 101"):
                self.counter.failed += 1
                if not self.opened_fut.done():
                    self.opened_fut.set_exception(RuntimeError(buf[:200].decode()))
                return
            self.open = True
            self.counter.opened += 1
            if self.subscribe and self.transport is not None:
                self.transport.write(self.subscribe)
            if not self.opened_fut.done():
                self.opened_fut.set_result(None)
            buf = buf[end + 4:]
        self.buf = self._frames(buf)

    def _frames(self, buf: bytes) -> bytes:
        i, size = 0, len(buf)
        now = time.time()
        counter = self.counter
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
            opcode = buf[i] & 0x0F
            if opcode == 1 and buf.startswith(b'{"type":"tick"', start):
                counter.frames += 1
                if self.sample:
                    at = buf.find(b'"ts":"', start, start + n) + 6
                    counter.lat.append(now - ts_epoch(buf[at:at + 23]))
                    counter.when.append(now)
            elif opcode == 1 and buf.startswith(b'{"type":"candle"', start):
                counter.candles += 1
                if self.sample and buf.find(b'"final":false', start, start + n) > 0:
                    key = buf[start:buf.find(b'"t":', start, start + n)]  # type, id and interval
                    prev = self.candle_at.get(key)
                    if prev is not None and now - prev < 0.5:
                        counter.too_fast += 1
                    self.candle_at[key] = now
            elif opcode == 1 and buf.startswith(b'{"type":"heartbeat"', start):
                counter.beats += 1
            elif opcode == 9 and self.transport is not None:  # keepalive ping: masked pong, zero mask
                payload = buf[start:start + n]
                self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
            i = start + n
        return buf[i:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.counter.closed += 1
        if not self.opened_fut.done():
            self.opened_fut.set_exception(ConnectionError("closed before the handshake"))


async def client_main(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    counter = Counter()
    target = f"/ws/quotes?key={args.key}" if args.key else "/"
    sem = asyncio.Semaphore(100)
    transports: list[asyncio.Transport] = []
    subscribe = b""
    if args.candles:
        from server.market.catalogue import default_catalogue

        ids = [inst.id for inst in default_catalogue().instruments]
        payload = json.dumps({"op": "subscribe", "ids": ids, "candles": args.candles.split(","),
                              "reqId": "bench"}).encode()
        assert 126 <= len(payload) < 65536
        subscribe = bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2) + b"\0\0\0\0" + payload  # zero mask

    async def one(i: int) -> None:
        nonce = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
        async with sem:
            fut: asyncio.Future[None] = loop.create_future()
            transport, _ = await loop.create_connection(
                lambda: RawClient(request, counter, i % args.sample_every == 0, fut, subscribe), "127.0.0.1",
                args.port)
            transports.append(transport)  # type: ignore[arg-type]
            await asyncio.wait_for(fut, 60)

    started = time.monotonic()
    tasks = [asyncio.ensure_future(one(i)) for i in range(args.conns)]
    _, pending = await asyncio.wait(tasks, timeout=args.connect_timeout)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)  # a server that cannot keep up: measure what opened
    print(json.dumps({"event": "connected", "opened": counter.opened, "seconds": time.monotonic() - started}),
          flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)  # the harness measured idle memory; go on
    await asyncio.sleep(args.warmup)
    counter.when = []
    counter.frames, counter.lat, counter.candles, counter.beats, counter.too_fast = 0, [], 0, 0, 0
    print(json.dumps({"event": "start"}), flush=True)
    t0, c0 = time.monotonic(), time.process_time()
    await asyncio.sleep(args.duration)
    elapsed, client_cpu = time.monotonic() - t0, time.process_time() - c0
    per_s: dict[int, list[float]] = {}  # second of the window -> its latencies: a backlog draining shows as a slope
    for at, lat_s in zip(counter.when, counter.lat, strict=True):
        per_s.setdefault(int(at), []).append(lat_s)
    trend = [round(1000 * statistics.median(v), 1) for _, v in sorted(per_s.items())]
    frames, lat = counter.frames, sorted(counter.lat)
    candles, beats, too_fast = counter.candles, counter.beats, counter.too_fast
    print(json.dumps({"event": "stop"}), flush=True)
    q = statistics.quantiles(lat, n=100) if len(lat) >= 100 else [float("nan")] * 99
    print(json.dumps({
        "event": "result", "p50_ms_per_s": trend, "frames": frames, "elapsed": elapsed, "closed": counter.closed,
        "candles": candles, "beats": beats, "too_fast": too_fast,
        "client_cpu_pct": 100 * client_cpu / elapsed,
        "lat_n": len(lat), "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000, "max_ms": (lat[-1] * 1000) if lat else None,
    }), flush=True)
    for t in transports:
        t.abort()


# --- the peers' snapshot -----------------------------------------------------------------------------


class Snapshot:
    """The snapshot a peer sends on connect: the same message as ours (every instrument's quote and seq, SPEC 7),
    built once per data version, so the peers' connect phase writes and the client reads what it does with ours
    (~17 KB per connection; a stub here left ours alone with that backlog when the machine was loaded)."""

    def __init__(self, state: Any) -> None:
        self.state, self.version, self.payload = state, -1, b""
        self.rows = list(range(len(state.catalogue.instruments)))
        self.ids = [inst.id for inst in state.catalogue.instruments]

    def get(self) -> bytes:
        from server.stream.protocol.messages import snapshot_payload

        state = self.state
        if self.version != state.version:
            seqs = {self.ids[r]: int(state.seq[r]) for r in self.rows}
            self.payload = snapshot_payload(state.updated_iso(), "bench", seqs, state.quotes(self.rows))
            self.version = state.version
        return self.payload


# --- the baseline server (websockets.broadcast) ----------------------------------------------------


async def baseline_main(args: argparse.Namespace) -> None:
    import orjson
    from websockets.asyncio.server import broadcast, serve

    from server.market.catalogue import default_catalogue
    from server.market.state import build_demo_state
    from server.market.timefmt import iso

    state, feed = build_demo_state(default_catalogue(), 42, time.time())
    snapshot = Snapshot(state)
    conns: set[Any] = set()

    async def handler(ws: Any) -> None:
        conns.add(ws)
        try:
            await ws.send(snapshot.get().decode())
            await ws.wait_closed()
        finally:
            conns.discard(ws)

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        step = args.interval_ms / 1000.0
        next_at = loop.time()
        while True:
            next_at += step
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            for t in state.apply(feed.next_batch(time.time(), step)):
                message = orjson.dumps({"type": "tick", "id": t.id, "price": t.price, "change": t.change,
                                        "ts": iso(t.ts), "seq": t.seq}).decode()
                broadcast(conns, message)

    async with serve(handler, "127.0.0.1", args.port, compression=None, max_queue=None, backlog=4096):
        task = asyncio.create_task(ticker())
        print("ready", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        task.cancel()


# --- the picows peer --------------------------------------------------------------------------------------


def _text_frame(payload: bytes) -> bytes:
    """An unmasked server-to-client text frame (RFC 6455 5.2)."""
    n = len(payload)
    if n < 126:
        return bytes((0x81, n)) + payload
    if n < 65536:
        return bytes((0x81, 126)) + n.to_bytes(2, "big") + payload
    return bytes((0x81, 127)) + n.to_bytes(8, "big") + payload


async def picows_main(args: argparse.Namespace) -> None:
    """A picows server doing what a performance-minded team would: each tick serialised once (the same JSON as
    the baseline's), the batch's frames built once, and one write of those bytes per connection through picows's
    transport (the same write pattern as ours). `--per-message` instead calls picows's own `WSTransport.send`
    per tick per connection (framing in C, but one socket write per frame)."""
    import orjson
    from picows import WSListener, WSMsgType, ws_create_server

    from server.market.catalogue import default_catalogue
    from server.market.state import build_demo_state
    from server.market.timefmt import iso

    state, feed = build_demo_state(default_catalogue(), 42, time.time())
    snapshot = Snapshot(state)
    conns: set[Any] = set()
    text = WSMsgType.TEXT

    class Listener(WSListener):  # type: ignore[misc]
        def on_ws_connected(self, transport: Any) -> None:
            conns.add(transport)
            transport.send(text, snapshot.get())

        def on_ws_frame(self, transport: Any, frame: Any) -> None:
            if frame.msg_type == WSMsgType.CLOSE:
                transport.send_close(frame.get_close_code(), frame.get_close_message())
                transport.disconnect()

        def on_ws_disconnected(self, transport: Any) -> None:
            conns.discard(transport)

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        step = args.interval_ms / 1000.0
        next_at = loop.time()
        while True:
            next_at += step
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            messages = [orjson.dumps({"type": "tick", "id": t.id, "price": t.price, "change": t.change,
                                      "ts": iso(t.ts), "seq": t.seq})
                        for t in state.apply(feed.next_batch(time.time(), step))]
            if args.per_message:
                for transport in conns:
                    if not transport.is_disconnected():
                        for message in messages:
                            transport.send(text, message)
                continue
            frames = b"".join(_text_frame(m) for m in messages)  # framed once per batch, one write per connection
            for transport in conns:
                raw = transport.underlying_transport
                if not raw.is_closing():
                    raw.write(frames)

    server = await ws_create_server(lambda _request: Listener(), "127.0.0.1", args.port, backlog=4096)
    task = asyncio.create_task(ticker())
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    task.cancel()
    server.close()


# --- the harness -------------------------------------------------------------------------------------


OURS_EXTRA: list[str] = []  # --ours-args: more `market-server serve` flags (e.g. --heartbeat-s 0, to price a feature)


def start_ours(tick_ms: int) -> tuple[subprocess.Popen[bytes], int, str, str]:
    from tests.conftest import ServerProcess, run_cli

    data = Path(tempfile.mkdtemp(prefix="bench-ws-")) / "data"
    srv = ServerProcess(data, "granian", "--tick-interval-ms", str(tick_ms), "--ws-max-conn", "enterprise=10000",
                        "--ws-handshake-rate", "1000000000", "--log-level", "warning", *OURS_EXTRA)
    out = run_cli(data, "keys", "create", "--plan", "enterprise", "--json")
    key = json.loads(out.stdout)["key"]
    return srv.proc, srv.ws_port, key, srv.base


def start_baseline(tick_ms: int, cmd: str = "_baseline", *extra: str) -> tuple[subprocess.Popen[bytes], int, str, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, cmd, "--port", str(port), "--interval-ms",
                             str(tick_ms), *extra], stdout=subprocess.PIPE, preexec_fn=raise_nofile)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    return proc, port, "", ""


def fanout_stats(base: str) -> tuple[float, float]:
    """(count, sum) of the server's market_ws_fanout_seconds histogram."""
    if not base:
        return 0.0, 0.0
    import httpx

    text = httpx.get(base + "/metrics", timeout=10).text
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
              if line.startswith(("market_ws_fanout_seconds_count", "market_ws_fanout_seconds_sum"))}
    return values.get("market_ws_fanout_seconds_count", 0.0), values.get("market_ws_fanout_seconds_sum", 0.0)


def run_scenario(impl: str, conns: int, ticks_per_s: float, duration: float, warmup: float,
                 sample_every: int, pinned: bool = False, candles: str = "") -> dict[str, Any]:
    from bench.wrkrun import pin
    from server.market.catalogue import default_catalogue

    tick_ms = interval_ms(ticks_per_s, len(default_catalogue().instruments))
    if impl == "ours":
        proc, port, key, base = start_ours(tick_ms)
    else:
        cmd = {"picows": ["_picows"], "picows-send": ["_picows", "--per-message"]}.get(impl, ["_baseline"])
        proc, port, key, base = start_baseline(tick_ms, *cmd)
    if pinned:
        pin(proc.pid, {0})  # the server on core 0, the client process on core 1
    client: subprocess.Popen[str] | None = None
    try:
        time.sleep(1.0)
        rss0 = rss_kib(proc.pid)
        client = subprocess.Popen(
            [*(["taskset", "-c", "1"] if pinned else []), sys.executable, __file__, "_client", "--port", str(port),
             "--key", key, "--conns", str(conns), "--duration", str(duration), "--warmup", str(warmup),
             "--sample-every", str(sample_every), "--candles", candles],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=raise_nofile)
        assert client.stdout is not None and client.stdin is not None
        connected = json.loads(client.stdout.readline())
        time.sleep(1.0)
        rss1 = rss_kib(proc.pid)
        client.stdin.write("go\n")
        client.stdin.flush()
        assert json.loads(client.stdout.readline())["event"] == "start"
        cpu0, t0, fan0 = cpu_times(proc.pid), time.monotonic(), fanout_stats(base)
        assert json.loads(client.stdout.readline())["event"] == "stop"
        cpu1, t1, fan1 = cpu_times(proc.pid), time.monotonic(), fanout_stats(base)
        result = json.loads(client.stdout.readline())
        client.wait(30)
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    frames = result["frames"] + result["candles"] + result["beats"]  # every frame delivered in the window
    user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    cpu = user + system
    batches = fan1[0] - fan0[0]
    return {
        "impl": impl, "conns": conns, "opened": connected["opened"], "ticks_per_s": ticks_per_s,
        "tick_ms": tick_ms, "frames_per_s": frames / (t1 - t0), "server_cpu_pct": 100 * cpu / (t1 - t0),
        "us_per_frame": 1e6 * cpu / frames if frames else float("nan"),
        "user_us_per_frame": 1e6 * user / frames if frames else float("nan"),
        "sys_us_per_frame": 1e6 * system / frames if frames else float("nan"),
        "p50_ms": result["p50_ms"], "p99_ms": result["p99_ms"], "max_ms": result["max_ms"],
        "p50_ms_per_s": result["p50_ms_per_s"],
        "lat_samples": result["lat_n"], "idle_kib_per_conn": (rss1 - rss0) / max(1, connected["opened"]),
        "connect_s": connected["seconds"], "client_cpu_pct": result["client_cpu_pct"],
        "fanout_ms_per_batch": 1000 * (fan1[1] - fan0[1]) / batches if batches else None,
        "loadavg_1m": os.getloadavg()[0], "pinned": pinned,
        "tick_frames_per_s": result["frames"] / (t1 - t0), "candle_frames_per_s": result["candles"] / (t1 - t0),
        "heartbeats_per_s": result["beats"] / (t1 - t0), "candles_too_fast": result["too_fast"],
        "server_cpu_s_per_s": cpu / (t1 - t0),
    }


def candle_cost(conns: int, rate: float, args: argparse.Namespace) -> dict[str, Any]:
    """Server CPU per delivered candle frame against a tick frame's: `ours` without, then with 1m candles."""
    plain = run_scenario("ours", conns, rate, args.duration, args.warmup, args.sample_every, args.pin)
    with_candles = run_scenario("ours", conns, rate, args.duration, args.warmup, args.sample_every, args.pin,
                                args.candles or "1m")
    per_tick = plain["server_cpu_s_per_s"] / (plain["tick_frames_per_s"] + plain["heartbeats_per_s"])
    extra_cpu = with_candles["server_cpu_s_per_s"] - per_tick * (with_candles["tick_frames_per_s"]
                                                                + with_candles["heartbeats_per_s"])
    delivered = with_candles["candle_frames_per_s"]
    per_candle = extra_cpu / delivered if delivered else float("nan")
    return {"conns": conns, "ticks_per_s": rate, "us_per_tick_frame": 1e6 * per_tick,
            "us_per_candle_frame": 1e6 * per_candle, "ratio": per_candle / per_tick,
            "candle_frames_per_s": with_candles["candle_frames_per_s"],
            "candles_too_fast": with_candles["candles_too_fast"], "rows": [plain, with_candles]}


def fmt(row: dict[str, Any]) -> str:
    conns = f"{row['conns']}" if row["opened"] == row["conns"] else f"{row['opened']}/{row['conns']}"
    return (f"| {row['impl']:9} | {conns:>5} | {row['ticks_per_s']:5.0f} | {row['frames_per_s']:9,.0f} | "
            f"{row['server_cpu_pct']:5.1f} | {row['us_per_frame']:6.2f} | {row['p50_ms']:6.1f} | "
            f"{row['p99_ms']:6.1f} | {row['idle_kib_per_conn']:6.1f} |")


HEADER = ("| impl      | conns | tick/s | frames/s  | cpu % | us/frame | p50 ms | p99 ms | KiB/conn |\n"
          "|-----------|-------|--------|-----------|-------|----------|--------|--------|----------|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd")
    c = sub.add_parser("_client")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--key", default="")
    c.add_argument("--conns", type=int, required=True)
    c.add_argument("--duration", type=float, default=10)
    c.add_argument("--warmup", type=float, default=2)
    c.add_argument("--sample-every", type=int, default=10)
    c.add_argument("--connect-timeout", type=float, default=120)
    c.add_argument("--candles", default="")
    for name in ("_baseline", "_picows"):
        b = sub.add_parser(name)
        b.add_argument("--port", type=int, required=True)
        b.add_argument("--interval-ms", type=int, required=True)
        b.add_argument("--per-message", action="store_true")
    parser.add_argument("--scenario", action="append", help="CONNSxTICKS_PER_S, e.g. 1000x200 (repeatable)")
    parser.add_argument("--impl", action="append", choices=["ours", "broadcast", "picows", "picows-send"])
    parser.add_argument("--pin", action="store_true", help="server on core 0, client on core 1")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--sample-every", type=int, default=10, help="measure latency on every Nth connection")
    parser.add_argument("--json", action="store_true", help="print rows as JSON lines too")
    parser.add_argument("--candles", default="", help="ours: every client subscribes all ids with these candle "
                        "intervals, e.g. 1m")
    parser.add_argument("--ours-args", default="", help="more `market-server serve` flags for ours, e.g. "
                        "'--heartbeat-s 0'")
    parser.add_argument("--candle-cost", action="store_true",
                        help="ours without and with candles: server CPU per candle frame vs per tick frame")
    args = parser.parse_args()
    raise_nofile()
    OURS_EXTRA[:] = args.ours_args.split()
    import uvloop

    if args.cmd == "_client":
        uvloop.run(client_main(args))
        return
    if args.cmd == "_baseline":
        uvloop.run(baseline_main(args))
        return
    if args.cmd == "_picows":
        uvloop.run(picows_main(args))
        return
    scenarios = args.scenario or ["1000x200", "5000x50"]
    if args.candle_cost:
        for scenario in scenarios:
            conns, rate = (int(x) for x in scenario.split("x"))
            cost = candle_cost(conns, rate, args)
            print(f"{conns} clients x {rate} ticks/s: {cost['us_per_tick_frame']:.2f} us per tick frame, "
                  f"{cost['us_per_candle_frame']:.2f} us per candle frame ({cost['ratio']:.2f}x; target <= 1.2x), "
                  f"{cost['candle_frames_per_s']:,.0f} candle frames/s, {cost['candles_too_fast']} non-final "
                  "frames < 0.5 s after the previous of their (id, interval) (target 0)", flush=True)
            if args.json:
                print(json.dumps(cost), flush=True)
        return
    impls = args.impl or ["ours", "broadcast", "picows"]
    print(HEADER, flush=True)
    for scenario in scenarios:
        conns, rate = (int(x) for x in scenario.split("x"))
        for impl in impls:
            row = run_scenario(impl, conns, rate, args.duration, args.warmup, args.sample_every, args.pin,
                               args.candles if impl == "ours" else "")
            print(fmt(row), flush=True)
            if args.json:
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
