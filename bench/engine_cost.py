"""What the Redis engine and `serve --workers N` cost and give (issue 11), measured in one run.

    .venv/bin/python -m bench.engine_cost [--redis-url URL] [--json] [--quick]

Rows (bench/run prints them under "scale:"):

1. `tick latency redis vs memory`: feed -> WebSocket client latency (receive time minus the tick's
   `ts`) at 1,000 clients x 200 ticks/s, p50/p99, the memory engine and the redis engine (one hub:
   the tick goes through the Redis Stream, XREAD and back before it is applied and fanned out).
   bench/ws_fanout.py's client process; the hub pinned to core 0 (`taskset`), the client to core 1.
   Redis is the machine's service and is not pinned. Engines alternate over `--latency-rounds` windows
   (default 3 each) and the row compares the medians: one window per engine moves by more than the
   difference sought. Target: under 2 ms added at p99.
2. `workers 2 vs 1`: wrk (1 thread, 64 connections) on keyed `GET /api/v1/quotes` against
   `serve --engine redis --workers 2` and `--workers 1` (and the memory engine, one hub, for the
   engine's own cost), interleaved over rounds, best req/s. Nothing is pinned: two hubs need both
   cores, which wrk shares. Beside it the hubs' CPU per request: utime+stime of the supervisor and
   every child from /proc/<pid>/stat over the window, divided by the requests wrk counted; this is
   the figure that carries to a bigger machine (req/s there ~ cores / CPU per request).
3. `GCRA in Redis`: bench/limiter_cost.py's in-process figures (the real App pipeline, memory vs
   redis engine, 32 requests in flight) and Redis's own CPU per script call (INFO commandstats).

Only 127.0.0.1; every step is bounded in count and time; Redis keys under fresh `bench-...:`
prefixes are deleted at the end. The 1-minute load average is printed beside each figure (the
machine is shared); ratios compare figures of this one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis
import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.wrkrun import cpu_seconds, pin, require_wrk, wrk  # noqa: E402
from bench.ws_fanout import interval_ms, raise_nofile  # noqa: E402
from tests.conftest import ServerProcess, run_cli  # noqa: E402

ADDED_P99_TARGET_MS = 2.0


def _load() -> float:
    return os.getloadavg()[0]


class Hub:
    """A `serve` on free ports (memory or redis engine, N workers), with an enterprise key."""

    def __init__(self, tmp: Path, engine: str, redis_url: str, *extra: str, workers: int = 1) -> None:
        self.prefix = f"bench-{uuid.uuid4().hex[:8]}:"
        self.redis_url = redis_url
        flags = ["--engine", engine, "--log-level", "warning", "--public-rate", "1000000000",
                 "--ws-max-conn", "enterprise=10000", "--ws-handshake-rate", "1000000000", *extra]
        if engine == "redis":
            flags += ["--redis-url", redis_url, "--redis-prefix", self.prefix]
        if workers > 1:
            flags += ["--workers", str(workers)]
        self.engine, self.workers = engine, workers
        self.srv = ServerProcess(tmp / f"{engine}-{workers}-{uuid.uuid4().hex[:6]}" / "data", "granian", *flags)
        out = run_cli(self.srv.data_dir, "keys", "create", "--plan", "enterprise", "--rate", "1000000000", "--json")
        self.key = json.loads(out.stdout)["key"]
        if workers > 1:
            self._wait_children()

    def _wait_children(self) -> None:
        deadline = time.monotonic() + 30
        while len(self.pids()) < self.workers + 1:  # every child started, then every one answers
            assert time.monotonic() < deadline, self.srv.output()
            time.sleep(0.1)  # other processes starting: nothing to await
        seen: set[int] = set()
        import httpx

        while len(seen) < self.workers:
            assert time.monotonic() < deadline, f"workers answering: {seen}"
            resp = httpx.get(self.srv.base + "/readyz", timeout=5)
            if resp.status_code == 200:
                seen.add(resp.json()["worker"])

    def pids(self) -> list[int]:
        """The supervisor (or the lone hub) and its children."""
        pid = self.srv.proc.pid
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            children = []
        return [pid, *(int(c) for c in children)]

    def cpu(self) -> float:
        return sum(cpu_seconds(p) for p in self.pids())

    def stop(self) -> None:
        self.srv.stop(20)
        if self.engine == "redis":
            client = redis.Redis.from_url(self.redis_url)
            keys = list(client.scan_iter(match=self.prefix + "*", count=1000))
            if keys:
                client.delete(*keys)
            client.close()


# --- 1. tick latency -------------------------------------------------------------------------------


def tick_latency(tmp: Path, engine: str, redis_url: str, conns: int, rate: float, duration: float,
                 warmup: float) -> dict[str, Any]:
    from server.market.catalogue import default_catalogue

    tick_ms = interval_ms(rate, len(default_catalogue().instruments))
    hub = Hub(tmp, engine, redis_url, "--tick-interval-ms", str(tick_ms))
    client: subprocess.Popen[str] | None = None
    try:
        for pid in hub.pids():
            pin(pid, {0})
        client = subprocess.Popen(
            ["taskset", "-c", "1", sys.executable, str(ROOT / "bench" / "ws_fanout.py"), "_client", "--port",
             str(hub.srv.ws_port), "--key", hub.key, "--conns", str(conns), "--duration", str(duration),
             "--warmup", str(warmup), "--sample-every", "10"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=raise_nofile)
        assert client.stdout is not None and client.stdin is not None
        connected = json.loads(client.stdout.readline())
        client.stdin.write("go\n")
        client.stdin.flush()
        assert json.loads(client.stdout.readline())["event"] == "start"
        cpu0, t0 = hub.cpu(), time.monotonic()
        assert json.loads(client.stdout.readline())["event"] == "stop"
        cpu1, t1 = hub.cpu(), time.monotonic()
        result = json.loads(client.stdout.readline())
        client.wait(30)
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        hub.stop()
    return {"engine": engine, "conns": connected["opened"], "ticks_per_s": rate, "p50_ms": result["p50_ms"],
            "p99_ms": result["p99_ms"], "max_ms": result["max_ms"], "samples": result["lat_n"],
            "frames_per_s": result["frames"] / (t1 - t0), "hub_cpu_pct": 100 * (cpu1 - cpu0) / (t1 - t0),
            "load_1m": _load()}


def tick_log_round_trip(redis_url: str, n: int, gap_s: float = 0.02) -> dict[str, float]:
    """In process: a leader's batch (12 ticks) from `append` until the same hub's reader hands it back,
    i.e. what the redis engine adds before a tick is applied (script + XADD, XREAD wake-up, decode)."""
    from server.engine.redis_ticks import RedisTicks
    from server.market.catalogue import default_catalogue
    from server.market.tick import Tick

    async def run() -> list[float]:
        ids = [inst.id for inst in default_catalogue().instruments]
        prefix = f"bench-{uuid.uuid4().hex[:8]}:"
        log = RedisTicks(redis_url, prefix, "bench", ids)
        log.epoch = "bench"
        await log.load_seqs()
        back: asyncio.Queue[float] = asyncio.Queue()
        leading = asyncio.Event()
        log.start(lambda _batch: back.put_nowait(time.perf_counter()), lambda lead: leading.set() if lead else None)
        samples: list[float] = []
        try:
            await asyncio.wait_for(leading.wait(), 5)
            for i in range(n):
                ticks = [Tick(row, 100.0 + i % 7, time.time(), 1.0) for row in range(12)]
                started = time.perf_counter()
                log.append(ticks, [0] * len(ticks))
                samples.append(await asyncio.wait_for(back.get(), 5) - started)
                await asyncio.sleep(gap_s)
        finally:
            await log.stop()
            client = redis.Redis.from_url(redis_url)
            keys = list(client.scan_iter(match=prefix + "*", count=1000))
            if keys:
                client.delete(*keys)
            client.close()
        return samples

    samples = sorted(uvloop.run(run()))
    return {"p50_ms": 1000 * samples[len(samples) // 2], "p99_ms": 1000 * samples[int(len(samples) * 0.99)],
            "n": len(samples), "load_1m": _load()}


# --- 2. workers ------------------------------------------------------------------------------------


def workers_throughput(tmp: Path, redis_url: str, duration: float, rounds: int) -> dict[str, Any]:
    require_wrk()
    configs = {"memory x1": ("memory", 1), "redis x1": ("redis", 1), "redis x2": ("redis", 2)}
    hubs = {name: Hub(tmp, engine, redis_url, workers=n) for name, (engine, n) in configs.items()}
    runs: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in configs}
    try:
        time.sleep(1.0)
        for _ in range(rounds):
            for name, hub in hubs.items():
                cpu0 = hub.cpu()
                res = wrk(hub.srv.base + "/api/v1/quotes", duration, connections=64,
                          headers={"X-SERVICE-Key": hub.key})
                used = hub.cpu() - cpu0
                runs[name].append((res.rps, used / res.requests * 1e6, res.p99_ms, _load()))
    finally:
        for hub in hubs.values():
            hub.stop()
    out: dict[str, Any] = {}
    for name, rs in runs.items():
        best = max(rs)
        out[name] = {"rps": best[0], "us_cpu_per_req": min(r[1] for r in rs), "p99_ms": best[2],
                     "load_1m": best[3], "rounds": [round(r[0]) for r in rs]}
    ratios = [a[0] / b[0] for a, b in zip(runs["redis x2"], runs["redis x1"], strict=True)]
    out["x2_vs_x1"] = statistics.median(ratios)
    return out


def keyed_cpu(tmp: Path, redis_url: str, duration: float, rounds: int) -> dict[str, Any]:
    """Issue 19's target, pinned: one hub per engine on core 0, wrk (1 thread, 64 connections) on core 1, keyed
    `GET /api/v1/quotes` (a cached answer), engines alternating; the hub's CPU per request of each round
    (Redis, the machine's service, is not pinned and not counted). The ratio is the median of the rounds'."""
    require_wrk()
    hubs = {engine: Hub(tmp, engine, redis_url) for engine in ("memory", "redis")}
    runs: dict[str, list[tuple[float, float, float]]] = {engine: [] for engine in hubs}
    try:
        for hub in hubs.values():
            for pid in hub.pids():
                pin(pid, {0})
        time.sleep(1.0)
        for _ in range(rounds):
            for engine, hub in hubs.items():
                res = wrk(hub.srv.base + "/api/v1/quotes", duration, connections=64, cpu=1,
                          headers={"X-SERVICE-Key": hub.key}, server_pid=hub.srv.proc.pid)
                runs[engine].append((res.server_us, res.rps, _load()))
    finally:
        for hub in hubs.values():
            hub.stop()
    ratios = [r[0] / m[0] for r, m in zip(runs["redis"], runs["memory"], strict=True)]
    return {"ratio": statistics.median(ratios), "ratios": ratios,
            **{engine: {"us_cpu_per_req": statistics.median(r[0] for r in rs),
                        "rps": statistics.median(r[1] for r in rs), "rounds": [round(r[0], 1) for r in rs],
                        "load_1m": max(r[2] for r in rs)}
               for engine, rs in runs.items()}}


# --- 3. GCRA in Redis ------------------------------------------------------------------------------


def gcra_cost(redis_url: str, number: int, repeat: int) -> dict[str, float]:
    from bench.limiter_cost import _evalsha_stats, _memory, _redis

    with tempfile.TemporaryDirectory(prefix="engine-cost-") as tmp:
        mem_dir, redis_dir = Path(tmp) / "m", Path(tmp) / "r"
        mem_dir.mkdir()
        redis_dir.mkdir()
        memory = _memory(mem_dir, number * 5, repeat)
        sync = redis.Redis.from_url(redis_url)
        before = _evalsha_stats(sync)
        figures = uvloop.run(_redis(redis_url, redis_dir, number, repeat, 32))
        calls, usec = (a - b for a, b in zip(_evalsha_stats(sync), before, strict=True))
        sync.close()
    return {"memory_us_cpu": memory, "redis_x32_us_cpu": figures["redis handle x32"][1],
            "redis_x32_us_wall": figures["redis handle x32"][0], "redis_x1_us_wall": figures["redis handle"][0],
            "redis_x1_us_cpu": figures["redis handle"][1], "redis_server_us_per_call": usec / max(calls, 1),
            "load_1m": _load()}


# --- main ------------------------------------------------------------------------------------------


def rows(lat: dict[str, dict[str, Any]], trip: dict[str, float], work: dict[str, Any],
         gcra: dict[str, float], cpu: dict[str, Any]) -> list[dict[str, Any]]:
    mem, red = lat["memory"], lat["redis"]
    added = red["p99_ms"] - mem["p99_ms"]
    x1, x2, m1 = work["redis x1"], work["redis x2"], work["memory x1"]
    return [
        {"name": "GET /api/v1/quotes keyed (cached), hub CPU per request, redis vs memory engine, "
                 "hub pinned to core 0, wrk on core 1",
         "result": f"redis {cpu['redis']['us_cpu_per_req']:.1f} us, memory {cpu['memory']['us_cpu_per_req']:.1f} us "
                   f"(medians of {len(cpu['ratios'])} alternating rounds; load {cpu['redis']['load_1m']:.1f})",
         "ratio": f"{cpu['ratio']:.2f}x", "target": "<= 1.25x", "met": cpu["ratio"] <= 1.25},
        {"name": f"tick latency feed->WebSocket, {red['conns']:,} clients x {red['ticks_per_s']:.0f} ticks/s, "
                 "redis vs memory engine (p50/p99)",
         "result": f"redis {red['p50_ms']:.1f}/{red['p99_ms']:.1f} ms, memory {mem['p50_ms']:.1f}/"
                   f"{mem['p99_ms']:.1f} ms (medians of {red['windows']} alternating windows each; "
                   f"load {red['load_1m']:.1f})",
         "ratio": f"{added:+.1f} ms at p99", "target": f"< {ADDED_P99_TARGET_MS:g} ms added at p99",
         "met": added < ADDED_P99_TARGET_MS},
        {"name": "tick log round trip in process (append -> XADD -> XREAD -> handed back), what redis adds",
         "result": f"p50 {trip['p50_ms']:.2f} ms, p99 {trip['p99_ms']:.2f} ms over {trip['n']} batches "
                   f"(load {trip['load_1m']:.1f})",
         "ratio": "", "target": f"< {ADDED_P99_TARGET_MS:g} ms at p99", "met": trip["p99_ms"] < ADDED_P99_TARGET_MS},
        {"name": "GET /api/v1/quotes keyed, serve --workers 2 vs 1 (redis engine, 2 cores shared with wrk)",
         "result": f"x2 {x2['rps']:,.0f} req/s {x2['us_cpu_per_req']:.0f} us CPU/req, x1 {x1['rps']:,.0f} req/s "
                   f"{x1['us_cpu_per_req']:.0f} us CPU/req (load {x2['load_1m']:.1f})",
         "ratio": f"{work['x2_vs_x1']:.2f}x", "target": "record; CPU/req carries to bigger machines", "met": None},
        {"name": "GET /api/v1/quotes keyed, hub CPU per request, redis vs memory engine (one hub)",
         "result": f"redis {x1['us_cpu_per_req']:.0f} us, memory {m1['us_cpu_per_req']:.0f} us "
                   f"({x1['rps']:,.0f} vs {m1['rps']:,.0f} req/s)",
         "ratio": f"{x1['us_cpu_per_req'] / m1['us_cpu_per_req']:.2f}x", "target": "record", "met": None},
        {"name": "GCRA in Redis per keyed request, in process, 32 in flight (bench/limiter_cost.py)",
         "result": f"hub {gcra['redis_x32_us_cpu']:.1f} us CPU vs memory {gcra['memory_us_cpu']:.1f} us; "
                   f"Redis {gcra['redis_server_us_per_call']:.1f} us/call; one at a time "
                   f"{gcra['redis_x1_us_wall']:.0f} us wall (load {gcra['load_1m']:.1f})",
         "ratio": f"+{gcra['redis_x32_us_cpu'] - gcra['memory_us_cpu']:.1f} us CPU", "target": "record",
         "met": None},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--conns", type=int, default=1000)
    parser.add_argument("--ticks-per-s", type=float, default=200)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per latency window")
    parser.add_argument("--wrk-duration", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency-rounds", type=int, default=3, help="latency windows per engine, alternating")
    parser.add_argument("--quick", action="store_true", help="tiny counts and windows (a smoke test)")
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON list last")
    parser.add_argument("--only-cpu", action="store_true",
                        help="only the pinned hub CPU per keyed request, redis vs memory (issue 19's target)")
    args = parser.parse_args()
    if args.quick:
        args.conns, args.duration, args.wrk_duration, args.rounds, args.latency_rounds = 50, 2.0, 1.0, 1, 1
    if shutil.which("taskset") is None:
        sys.exit("taskset is needed (util-linux)")
    redis.Redis.from_url(args.redis_url, socket_connect_timeout=2).ping()
    raise_nofile()
    tmp = Path(tempfile.mkdtemp(prefix="engine-cost-"))
    print(f"load average before: {_load():.2f}", flush=True)
    cpu = keyed_cpu(tmp, args.redis_url, args.wrk_duration, max(3, args.rounds))
    print(f"keyed quotes, hub pinned: redis {cpu['redis']['us_cpu_per_req']:.1f} us CPU/req (rounds "
          f"{cpu['redis']['rounds']}), memory {cpu['memory']['us_cpu_per_req']:.1f} "
          f"(rounds {cpu['memory']['rounds']}), "
          f"ratio {cpu['ratio']:.2f}x (rounds {[round(r, 2) for r in cpu['ratios']]}), load "
          f"{max(cpu['redis']['load_1m'], cpu['memory']['load_1m']):.2f}", flush=True)
    if args.only_cpu:
        return
    # one window per engine varies by more than the difference sought (p99 17.6-22.2 ms for the memory engine in
    # four windows of one evening): engines alternate over rounds and the rows compare the medians
    windows: dict[str, list[dict[str, Any]]] = {"memory": [], "redis": []}
    for _ in range(args.latency_rounds):
        for engine in windows:
            r = tick_latency(tmp, engine, args.redis_url, args.conns, args.ticks_per_s, args.duration, 2.0)
            windows[engine].append(r)
            print(f"tick latency {r['engine']:6} {r['conns']} conns x {r['ticks_per_s']:.0f}/s: p50 {r['p50_ms']:.2f} "
                  f"p99 {r['p99_ms']:.2f} max {r['max_ms']:.1f} ms, {r['frames_per_s']:,.0f} frames/s, "
                  f"hub {r['hub_cpu_pct']:.0f}% CPU, load {r['load_1m']:.2f}", flush=True)
    lat = {engine: {**rs[0], "p50_ms": statistics.median(r["p50_ms"] for r in rs),
                    "p99_ms": statistics.median(r["p99_ms"] for r in rs), "load_1m": max(r["load_1m"] for r in rs),
                    "windows": len(rs)}
           for engine, rs in windows.items()}
    trip = tick_log_round_trip(args.redis_url, 100 if args.quick else 1000)
    print(f"tick log round trip: p50 {trip['p50_ms']:.3f} ms, p99 {trip['p99_ms']:.3f} ms ({trip['n']} batches), "
          f"load {trip['load_1m']:.2f}", flush=True)
    work = workers_throughput(tmp, args.redis_url, args.wrk_duration, args.rounds)
    for name in ("memory x1", "redis x1", "redis x2"):
        w = work[name]
        print(f"quotes {name:9}: {w['rps']:9,.0f} req/s (rounds {w['rounds']}), {w['us_cpu_per_req']:6.1f} us CPU/req, "
              f"p99 {w['p99_ms']:.2f} ms, load {w['load_1m']:.2f}", flush=True)
    print(f"workers 2 vs 1: {work['x2_vs_x1']:.2f}x (median of per-round ratios)", flush=True)
    number = 2000 if args.quick else 20_000
    gcra = gcra_cost(args.redis_url, number, 2 if args.quick else 5)
    print("GCRA: " + ", ".join(f"{k} {v:.2f}" for k, v in gcra.items()), flush=True)
    table = rows(lat, trip, work, gcra, cpu)
    print("| benchmark | result | ratio | target | met |\n|---|---|---|---|---|")
    for row in table:
        met = "" if row["met"] is None else ("yes" if row["met"] else "NO")
        print(f"| {row['name']} | {row['result']} | {row['ratio']} | {row['target']} | {met} |")
    shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(table), flush=True)


if __name__ == "__main__":
    main()
