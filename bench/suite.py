"""Every benchmark in one run, one table of ratios: what `bench/run` executes (see bench/README.md).

1. Servers: `market-server serve --bench-static` on each runtime (demo feed ticking in the same
   process, an enterprise key with an unreachable rate, an unreachable public rate), the FastAPI +
   uvicorn baseline (bench/baselines/fastapi_app.py) and the Litestar + msgspec peer on Granian
   (bench/peers/litestar_app.py), each with its own ticker - all on 127.0.0.1, free ports. Every
   server is pinned to core 0; wrk, the open-loop client and this process run on core 1.
2. Throughput: wrk (closed loop, 1 thread, 32 connections) on every endpoint of every server,
   interleaved over rounds so drift hits all alike; req/s is the best round (other load only
   ever lowers throughput), ratios are the median over rounds of the per-round ratio; beside it
   the server's CPU per request (utime + stime of the pinned server from /proc, least of the rounds).
3. Latency: the open-loop client (bench/openloop.py) at 50% of each hot endpoint's measured
   peak; p99 from each request's due time; the best of the interleaved rounds counts.
4. WebSocket fan-out: bench/ws_fanout.py --pin (ours vs picows vs websockets.broadcast()).
5. Instructions per request in process (bench/instructions.py under callgrind), or the last
   figures recorded in bench/instructions.tsv with --no-instructions.
6. Other engineers' benchmarks, when present: bench/resume_replay.py, bench/client_overhead.py,
   bench/engine_cost.py (their --json output, with their targets).

Raw results go to bench/results/<UTC time>/ (results.json, table.md, wrk outputs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.openloop import measure as open_loop  # noqa: E402
from bench.wrkrun import WrkError, pin, require_wrk, wrk  # noqa: E402

OUR_PATHS = {
    "static": "/__bench/static",
    "quotes": "/api/v1/quotes",
    "quote": "/api/v1/quotes/brent",
    "kline": "/api/v1/kline/brent",
    "spreads": "/api/v1/spreads",
    "inventory": "/api/v1/inventory",
    "market": "/api/market",
    "market-304": "/api/market",  # with If-None-Match: the snapshot's current ETag
    "news": "/api/news",
    "research": "/api/research",
}
BASELINE_PATHS = {"quotes": "/api/v1/quotes", "kline": "/api/v1/kline/brent"}
HOT = ("quotes", "quote", "kline", "spreads", "inventory", "market", "market-304", "news", "research")
LATENCY_ENDPOINTS = ("quotes", "kline")
CEILING_TARGET = 0.7
BASELINE_TARGET = 3.0
PEER_TARGET = 1.0
P99_TARGET_MS = 10.0
INSTRUCTIONS_SLACK = 1.05  # a figure more than 5% over the last recorded one is a regression
SERVER_CPU = 0  # the server under test runs on this core
LOAD_CPU = 1  # wrk, the open-loop client and this process
CLIENT_LATE_MS = 2.0  # the open-loop client wakes every 1 ms; later than 2 ms means it was starved
KEY_HEADER = "X-SERVICE-Key"


@dataclass(frozen=True, slots=True)
class Profile:
    duration: float
    rounds: int
    connections: int
    latency_duration: float
    latency_warmup: float
    fanout_args: tuple[str, ...]
    latency_rounds: int = 1


FULL = Profile(3, 5, 32, 3.0, 1.0, ("--scenario", "1000x200", "--scenario", "5000x50"), latency_rounds=3)
QUICK = Profile(1, 1, 16, 1.0, 0.3, ("--scenario", "100x20", "--impl", "ours", "--impl", "broadcast",
                                     "--impl", "picows", "--duration", "2", "--warmup", "0.5"))


@dataclass(slots=True)
class Target:
    """A server under test."""

    name: str
    base: str
    key: str
    paths: dict[str, str]
    stop: Callable[[], Any]
    pid: int | None = None


@dataclass(slots=True)
class Row:
    benchmark: str
    result: str
    ratio: str = ""
    target: str = ""
    ok: str = ""


@dataclass(slots=True)
class Run:
    profile: Profile
    out: Path
    throughput: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    latency: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    fanout: list[dict[str, Any]] = field(default_factory=list)
    instructions: dict[str, Any] = field(default_factory=dict)
    others: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# --- servers ------------------------------------------------------------------------------------


def start_ours(runtime: str, work: Path) -> Target:
    from tests.conftest import ServerProcess

    data = work / f"data-{runtime}"
    srv = ServerProcess(data, runtime, "--bench-static", "--log-level", "warning", "--public-rate", "1000000000")
    _, key = srv.create_key("enterprise", "--rate", "1000000000")
    pin(srv.proc.pid, {SERVER_CPU})
    return Target(runtime, srv.base, key, dict(OUR_PATHS), srv.stop, srv.proc.pid)


def start_baseline(work: Path, peer: bool = False) -> Target:
    from tests.conftest import free_port

    port = free_port()
    key = "bench-" + os.urandom(8).hex()
    name = "litestar" if peer else "fastapi"
    script = ROOT / "bench" / ("peers/litestar_app.py" if peer else "baselines/fastapi_app.py")
    log = open(work / f"{name}.log", "wb")  # noqa: SIM115 - closed by stop()
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "BASELINE_KEY": key, "PEER_KEY": key},
    )
    base = f"http://127.0.0.1:{port}"

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stop()
            raise RuntimeError(f"{name} exited with {proc.returncode}: {(work / f'{name}.log').read_text()}")
        try:
            if httpx.get(base + BASELINE_PATHS["quotes"], headers={KEY_HEADER: key}, timeout=1).status_code == 200:
                pin(proc.pid, {SERVER_CPU})
                return Target(name, base, key, dict(BASELINE_PATHS), stop, proc.pid)
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # polling a port that is not open yet: nothing to await
    stop()
    raise RuntimeError(f"{name} not ready within 30 s")


BASELINES = ("fastapi", "litestar")


# --- measurements -------------------------------------------------------------------------------


def check_equivalent(run: Run, targets: list[Target]) -> None:
    """The baseline must serve the same shape of body as ours, or the comparison means nothing."""
    bodies = {}
    for t in targets:
        bodies[t.name] = {e: httpx.get(t.base + t.paths[e], headers={KEY_HEADER: t.key}, timeout=10).json()
                          for e in BASELINE_PATHS}
    ours = next((b for name, b in bodies.items() if name not in BASELINES), None)
    for name in BASELINES:
        base = bodies.get(name)
        if ours is None or base is None:
            continue
        for endpoint in BASELINE_PATHS:
            if _shape(ours[endpoint]) != _shape(base[endpoint]):
                run.errors.append(f"{name} {endpoint} body differs in shape from ours: "
                                  f"{_shape(base[endpoint])} vs {_shape(ours[endpoint])}")


def _shape(body: dict[str, Any]) -> tuple[Any, ...]:
    """Top-level keys, list lengths and the keys of the first list item."""
    items = body.get("quotes") or body.get("series") or [{}]
    return tuple(sorted(body)), len(items), tuple(sorted(items[0]))


def request_headers(t: Target, endpoint: str) -> dict[str, str]:
    headers = {KEY_HEADER: t.key}
    if endpoint == "market-304":  # the snapshot's ETag as it is now (it changes once a refresh period)
        # wrk sends no Accept-Encoding: the identity ETag (httpx's default gzip would get the "-gz" tag, which does
        # not validate the identity representation: every request was a 200 with If-None-Match, up to 2026-11-26)
        url, plain = t.base + t.paths[endpoint], {"Accept-Encoding": "identity"}
        for _ in range(2):  # a refresh may fall between the two requests
            headers["If-None-Match"] = etag = httpx.get(url, headers=plain, timeout=10).headers.get("etag", "")
            status = httpx.get(url, headers={**plain, "If-None-Match": etag}, timeout=10).status_code
            if status == 304:
                break
        else:
            raise SystemExit(f"{t.name}: /api/market with its own ETag answered {status}, not 304")
    return headers


def warm_up(targets: list[Target]) -> None:
    for t in targets:
        for endpoint, path in t.paths.items():
            wrk(t.base + path, 1, 16, request_headers(t, endpoint), cpu=LOAD_CPU)


def measure_throughput(run: Run, targets: list[Target]) -> None:
    p = run.profile
    samples: dict[str, dict[str, list[Any]]] = {t.name: {e: [] for e in t.paths} for t in targets}
    for rnd in range(p.rounds):
        for t in targets:
            for endpoint, path in t.paths.items():
                try:
                    res = wrk(t.base + path, p.duration, p.connections, request_headers(t, endpoint), cpu=LOAD_CPU,
                              server_pid=t.pid)
                except WrkError as exc:
                    run.errors.append(f"{t.name} {endpoint}: {exc}")
                    continue
                samples[t.name][endpoint].append(res)
                (run.out / f"wrk-{t.name}-{endpoint}-r{rnd + 1}.txt").write_text(res.output)
                print(f"  {t.name:8} {endpoint:10} round {rnd + 1}: {res.rps:>10,.0f} req/s  "
                      f"{res.server_us:6.1f} us/req  p99 {res.p99_ms:.2f} ms", flush=True)
    for name, per_endpoint in samples.items():
        run.throughput[name] = {e: _best_throughput(rs) for e, rs in per_endpoint.items() if rs}


def _best_throughput(rounds: list[Any]) -> dict[str, Any]:
    """Other load on the machine only ever lowers throughput: the best round estimates capacity."""
    best = max(rounds, key=lambda r: r.rps)
    cpu = [r.server_us for r in rounds if math.isfinite(r.server_us)]
    return {"rps": best.rps, "p99_ms": best.p99_ms, "median_rps": statistics.median(r.rps for r in rounds),
            "rounds": [r.rps for r in rounds], "server_us": min(cpu) if cpu else math.nan,
            "server_us_rounds": [r.server_us for r in rounds]}


def measure_latency(run: Run, targets: list[Target]) -> None:
    """Open loop at half of each endpoint's peak; rounds interleaved, the best (lowest p99) round counts."""
    p = run.profile
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rnd in range(p.latency_rounds):
        for t in targets:
            for endpoint in LATENCY_ENDPOINTS:
                peak = run.throughput.get(t.name, {}).get(endpoint, {}).get("rps")
                if not peak:
                    continue
                rate = peak / 2
                res = open_loop(t.base + t.paths[endpoint], rate, p.latency_duration, [f"{KEY_HEADER}: {t.key}"],
                                connections=64, warmup=p.latency_warmup)
                samples.setdefault((t.name, endpoint), []).append(res.as_dict())
                print(f"  {t.name:8} {endpoint:10} round {rnd + 1} open loop {rate:,.0f} req/s: p99 {res.p99_ms:.2f} ms"
                      f" (client lateness p99 {res.lag_p99_ms:.2f} ms, {res.errors} errors)", flush=True)
                if res.errors:
                    run.errors.append(f"{t.name} {endpoint} open loop: {res.errors} non-2xx")
    for (name, endpoint), rounds in samples.items():
        chosen = dict(min(rounds, key=lambda r: r["p99_ms"]))  # other load only ever adds latency
        chosen["rounds_p99_ms"] = [r["p99_ms"] for r in rounds]
        run.latency.setdefault(name, {})[endpoint] = chosen


def measure_fanout(run: Run) -> None:
    script = ROOT / "bench" / "ws_fanout.py"
    if not script.exists():
        run.notes.append("bench/ws_fanout.py not present: WebSocket fan-out rows skipped")
        return
    cmd = [sys.executable, str(script), "--json", "--pin", *run.profile.fanout_args]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    (run.out / "ws_fanout.txt").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        run.errors.append(f"ws_fanout exited with {proc.returncode}: {proc.stderr.strip()[-500:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if "impl" in row:
                run.fanout.append(row)
                print(f"  fan-out {row.get('impl')} {row.get('conns')} conns: "
                      f"{row.get('us_per_frame', 'n/a')} us/frame", flush=True)


# --- the table ----------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


def paired_ratio(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Median over rounds of a/b, each pair measured seconds apart, so drift cancels; best/best otherwise."""
    ra, rb = a.get("rounds", []), b.get("rounds", [])
    if ra and len(ra) == len(rb):
        return statistics.median(x / y for x, y in zip(ra, rb, strict=True))
    return float(a["rps"] / b["rps"])


def throughput_rows(run: Run, runtimes: list[str]) -> list[Row]:
    rows: list[Row] = []
    for rt in runtimes:
        res = run.throughput.get(rt, {})
        static = res.get("static")
        if static:
            rows.append(Row(f"{rt}: static-bytes ceiling", _rps(static), "1.00"))
        for endpoint in HOT:
            if endpoint not in res:
                continue
            ratio = paired_ratio(res[endpoint], static) if static else math.nan
            cpu = static["server_us"] / res[endpoint]["server_us"] if static else math.nan
            label = "GET /api/market (If-None-Match: 304)" if endpoint == "market-304" else f"GET {OUR_PATHS[endpoint]}"
            rows.append(Row(f"{rt}: {label}", _rps(res[endpoint]), f"{ratio:.2f} of static (CPU {cpu:.2f})",
                            f">= {CEILING_TARGET:.2f}", verdict(ratio >= CEILING_TARGET)))
    return rows


def comparison_rows(run: Run, runtimes: list[str]) -> list[Row]:
    rows: list[Row] = []
    tp = run.throughput
    if "granian" in tp and "robyn" in tp:
        for endpoint in ("static", "quotes", "kline"):
            a, b = tp["granian"].get(endpoint), tp["robyn"].get(endpoint)
            if a and b:
                rows.append(Row(f"granian vs robyn: {endpoint}", f"{a['rps']:,.0f} vs {b['rps']:,.0f} req/s",
                                f"{paired_ratio(a, b):.2f}x", "", ""))
    for peer, label, target in (("litestar", "Litestar+msgspec on Granian", PEER_TARGET),
                                ("fastapi", "FastAPI+uvicorn", BASELINE_TARGET)):
        base = tp.get(peer, {})
        for rt in runtimes:
            if peer == "litestar" and rt != "granian":
                continue  # the peer runs on Granian: the same runtime class
            for endpoint in BASELINE_PATHS:
                ours, theirs = tp.get(rt, {}).get(endpoint), base.get(endpoint)
                if ours and theirs:
                    ratio = paired_ratio(ours, theirs)
                    cpu = theirs["server_us"] / ours["server_us"]
                    rows.append(Row(f"{rt} vs {label}: {endpoint}",
                                    f"{ours['rps']:,.0f} vs {theirs['rps']:,.0f} req/s; "
                                    f"{ours['server_us']:.1f} vs {theirs['server_us']:.1f} us/req",
                                    f"{ratio:.2f}x (CPU {cpu:.2f}x)", f">= {target:.1f}x", verdict(ratio >= target)))
    return rows


def latency_rows(run: Run) -> list[Row]:
    rows: list[Row] = []
    for name, per_endpoint in run.latency.items():
        for endpoint, res in per_endpoint.items():
            client = " (client-limited)" if res["lag_p99_ms"] > CLIENT_LATE_MS else ""
            rounds = res.get("rounds_p99_ms", [])
            others = f"; rounds {', '.join(f'{v:.1f}' for v in rounds)} ms" if len(rounds) > 1 else ""
            rows.append(Row(f"{name}: p99 at 50% of peak, {endpoint}",
                            f"{res['p99_ms']:.2f} ms at {res['achieved']:,.0f} req/s{client}{others}", "",
                            f"< {P99_TARGET_MS:.0f} ms", verdict(res["p99_ms"] < P99_TARGET_MS)))
    return rows


FANOUT_LABELS = {"ours": "ours", "broadcast": "websockets.broadcast()", "picows": "picows",
                 "picows-send": "picows, WSTransport.send per frame"}


def fanout_rows(run: Run) -> list[Row]:
    rows: list[Row] = []
    by_key: dict[tuple[Any, Any], dict[str, dict[str, Any]]] = {}
    for row in run.fanout:
        by_key.setdefault((row.get("conns"), row.get("ticks_per_s")), {})[str(row.get("impl"))] = row
    for (conns, ticks), impls in by_key.items():
        for impl, r in impls.items():
            rows.append(Row(
                f"ws fan-out {conns} conns x {ticks} ticks/s: {FANOUT_LABELS.get(impl, impl)}",
                f"{_num(r.get('us_per_frame'), 2)} us CPU/frame, {_num(r.get('frames_per_s'), 0)} frames/s, "
                f"p99 {_num(r.get('p99_ms'))} ms, {_num(r.get('idle_kib_per_conn'))} KiB/conn",
            ))
        ours = impls.get("ours")
        for impl, target in (("picows", True), ("broadcast", False)):
            peer = impls.get(impl)
            if not (ours and peer and ours.get("us_per_frame") and peer.get("us_per_frame")):
                continue
            ratio = peer["us_per_frame"] / ours["us_per_frame"]
            name = FANOUT_LABELS[impl]
            rows.append(Row(f"ws fan-out {conns} x {ticks}: CPU/frame, {name} / ours", "", f"{ratio:.2f}x",
                            ">= 1.00x" if target else "", verdict(ratio >= 1.0) if target else ""))
            if target:
                ok = ours["p99_ms"] <= peer["p99_ms"]
                rows.append(Row(f"ws fan-out {conns} x {ticks}: p99 tick latency, ours vs {name}",
                                f"{_num(ours['p99_ms'])} vs {_num(peer['p99_ms'])} ms", "",
                                "no worse", verdict(ok)))
    return rows


# --- instructions per request (callgrind) ---------------------------------------------------------------

INSTRUCTIONS_TSV = ROOT / "bench" / "instructions.tsv"


def recorded_instructions() -> list[dict[str, str]]:
    if not INSTRUCTIONS_TSV.exists():
        return []
    lines = [line.split("\t") for line in INSTRUCTIONS_TSV.read_text().splitlines() if line.strip()]
    head, rows = lines[0], lines[1:]
    return [dict(zip(head, row, strict=False)) for row in rows]


def measure_instructions(run: Run, fresh: bool) -> None:
    # the last row of the default measurement (memory engine, one request at a time, Granian's adapter), not an
    # engine-comparison row nor a Robyn row (bench.instructions --runtime robyn)
    recorded = [r for r in recorded_instructions() if "runtime=robyn" not in r.get("note", "")
                and ("inflight=" not in r.get("note", "") or "engine=memory inflight=0" in r.get("note", ""))]
    run.instructions["recorded"] = recorded[-1] if recorded else None
    if not fresh:
        return
    cmd = [sys.executable, "-m", "bench.instructions", "--json", "--endpoints", "quotes,kline,static"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    (run.out / "instructions.txt").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        run.errors.append(f"bench.instructions exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")
        return
    run.instructions["fresh"] = json.loads(proc.stdout.strip().splitlines()[-1])["figures"]


def instruction_rows(run: Run) -> list[Row]:
    rows: list[Row] = []
    recorded, fresh = run.instructions.get("recorded"), run.instructions.get("fresh")
    for endpoint in ("quotes", "kline", "static"):
        last = float(recorded[endpoint]) if recorded and recorded.get(endpoint) else None
        if fresh is not None:
            value = fresh[endpoint]
            ok = last is None or value <= last * INSTRUCTIONS_SLACK
            where = f"last recorded {last:,.0f} at {recorded['commit']}" if last and recorded else "none recorded"
            rows.append(Row(f"instructions per request (callgrind, in process): {endpoint}", f"{value:,.0f}; {where}",
                            "", f"<= recorded x {INSTRUCTIONS_SLACK}", verdict(ok)))
        elif last is not None and recorded is not None:
            rows.append(Row(f"instructions per request (callgrind, in process): {endpoint}",
                            f"{last:,.0f} (recorded at {recorded['commit']}, bench/instructions.tsv; not re-run)",
                            "", "recorded per commit", "yes"))
    return rows


# --- other engineers' benchmarks ---------------------------------------------------------------------------


def _json_of(run: Run, script: str, *args: str) -> Any:
    path = ROOT / "bench" / f"{script}.py"
    if not path.exists():
        run.notes.append(f"bench/{script}.py not present: its rows are skipped")
        return None
    proc = subprocess.run([sys.executable, "-m", f"bench.{script}", "--json", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800)
    (run.out / f"{script}.txt").write_text(proc.stdout + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("{", "["))]
    if proc.returncode != 0 or not lines:
        run.errors.append(f"bench/{script}.py exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")
        return None
    return json.loads(lines[-1])


def measure_robyn_limit(run: Run, quick: bool) -> None:
    """bench/robyn_bridge.py: the same bytes from Robyn handlers with no code of ours (the runtime's own limit)."""
    cmd = [sys.executable, str(ROOT / "bench" / "robyn_bridge.py"), "--pin", "--json", "--keep-thread-state",
           "--duration", "1" if quick else "3", "--rounds", "1" if quick else "2"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    (run.out / "robyn_bridge.txt").write_text(proc.stdout + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        run.errors.append(f"robyn_bridge exited with {proc.returncode}: {proc.stderr.strip()[-300:]}")
        return
    us = json.loads(lines[-1])["least_us"]
    sync = us["sync"]
    for kind, label in (("async", "an async handler"), ("sync-wild/x/y", "a sync handler on a wildcard route"),
                        ("sync-read", "a sync handler reading path, query and headers"),
                        ("sync-headers", "a sync handler building a response with our 12 header fields"),
                        ("sync-both", "both (what a cached answer of ours needs at least)"),
                        ("sync-kept", "a sync handler returning a kept response with our 12 fields, the id set")):
        if kind in us:
            run.others.append(Row(f"robyn bare app (no code of ours): {label}",
                                  f"{us[kind]:.1f} vs {sync:.1f} us/req (prebuilt response from a sync handler)",
                                  f"{sync / us[kind]:.2f} of sync (CPU)", "", ""))


def measure_others(run: Run, quick: bool) -> None:
    resume = _json_of(run, "resume_replay", *(["--runs", "20"] if quick else []))
    if isinstance(resume, dict):
        mean = resume.get("resume replay 1000 (server metric) mean us")
        core = resume.get("resume replay 1000 (core) median us")
        if mean is not None:
            run.others.append(Row("resume: replay of 1,000 missed ticks, server time (mean, real server)",
                                  f"{mean / 1000:.2f} ms; in process (core) median {_num((core or 0) / 1000, 2)} ms",
                                  "", "< 10 ms", verdict(mean / 1000 < 10)))
    client = _json_of(run, "client_overhead", *(["--ticks", "2000", "--rounds", "1"] if quick else []))
    if isinstance(client, dict) and "stream_vs_raw" in client:
        us = client.get("us_per_tick", {})
        run.others.append(Row("client: market_client stream() vs raw websockets client, per tick",
                              f"{_num(us.get('stream'), 2)} vs {_num(us.get('raw'), 2)} us/tick",
                              f"{client['stream_vs_raw']:.2f}x", "< 2x", verdict(client["stream_vs_raw"] < 2)))
    engine = _json_of(run, "engine_cost", *(["--quick"] if quick else []))
    for row in engine if isinstance(engine, list) else ([engine] if isinstance(engine, dict) else []):
        if isinstance(row, dict) and "name" in row:
            met = row.get("met")
            run.others.append(Row(f"scale: {row['name']}", str(row.get("result", "")), str(row.get("ratio", "")),
                                  str(row.get("target", "")), "" if met is None else verdict(bool(met))))
        elif isinstance(row, dict):
            for name, value in row.items():
                run.others.append(Row(f"scale: {name}", str(value), "", "(see bench/engine_cost.py)", ""))


def _num(value: Any, digits: int = 1) -> str:
    return f"{value:,.{digits}f}" if isinstance(value, int | float) and math.isfinite(value) else "n/a"


def _rps(res: dict[str, Any]) -> str:
    median = f"median {res['median_rps']:,.0f}, " if len(res.get("rounds", [])) > 1 else ""
    return f"{res['rps']:,.0f} req/s ({median}p99 {res['p99_ms']:.2f} ms), {_num(res.get('server_us'))} us/req"


def render(rows: list[Row]) -> str:
    lines = ["| benchmark | result | ratio | target | met |", "|---|---|---|---|---|"]
    # a row without a target of its own is a reference figure (a ceiling, a peer's number, a limit)
    lines += [f"| {r.benchmark} | {r.result} | {r.ratio} | {r.target or 'reference'} | {r.ok or '-'} |" for r in rows]
    return "\n".join(lines)


# --- main ---------------------------------------------------------------------------------------


def _load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.2f}" for x in load)


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration, subprocess.SubprocessError):
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, {platform.system()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny durations and counts (smoke test)")
    parser.add_argument("--runtimes", default="granian,robyn")
    parser.add_argument("--no-baseline", action="store_true", help="skip the FastAPI baseline")
    parser.add_argument("--no-peer", action="store_true", help="skip the Litestar peer")
    parser.add_argument("--no-fanout", action="store_true", help="skip the WebSocket fan-out harness")
    parser.add_argument("--no-instructions", action="store_true",
                        help="print the last instruction counts of bench/instructions.tsv instead of running callgrind")
    parser.add_argument("--no-others", action="store_true", help="skip the other engineers' benchmarks")
    parser.add_argument("--duration", type=float, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, help="interleaved rounds")
    parser.add_argument("--out", type=Path, help="results directory (default bench/results/<UTC time>)")
    parser.add_argument("--no-setup", action="store_true", help=argparse.SUPPRESS)  # handled by bench/run
    args = parser.parse_args(argv)
    profile = QUICK if args.quick else FULL
    if args.duration or args.rounds:
        profile = Profile(args.duration or profile.duration, args.rounds or profile.rounds, profile.connections,
                          profile.latency_duration, profile.latency_warmup, profile.fanout_args)
    require_wrk()
    os.sched_setaffinity(0, {LOAD_CPU})  # the load (and every child until it is pinned) on core 1
    load_before = os.getloadavg()
    started = datetime.now(UTC)
    out = args.out or ROOT / "bench" / "results" / started.strftime("%Y%m%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    run = Run(profile, out)
    runtimes = [r for r in args.runtimes.split(",") if r]
    work = Path(tempfile.mkdtemp(prefix="bench-run-"))
    targets: list[Target] = []
    try:
        print(f"bench: {machine()}; results in {out}", flush=True)
        for rt in runtimes:
            try:
                targets.append(start_ours(rt, work))
            except RuntimeError as exc:
                lines = [line for line in str(exc).splitlines() if line.strip()]
                run.notes.append(f"runtime {rt} did not start: {lines[-1] if lines else exc!r}")
        if not args.no_baseline:
            targets.append(start_baseline(work))
        if not args.no_peer:
            targets.append(start_baseline(work, peer=True))
        check_equivalent(run, targets)
        if not args.quick:
            warm_up(targets)
        print("throughput (wrk):", flush=True)
        measure_throughput(run, targets)
        print("latency at 50% of peak (open loop):", flush=True)
        measure_latency(run, [t for t in targets if t.name not in BASELINES])
    finally:
        for t in targets:
            t.stop()
        shutil.rmtree(work, ignore_errors=True)
    if not args.no_fanout:
        print("WebSocket fan-out (bench/ws_fanout.py):", flush=True)
        measure_fanout(run)
    print("instructions per request (bench/instructions.py):", flush=True)
    measure_instructions(run, fresh=not args.no_instructions)
    if "robyn" in runtimes and not args.no_others:
        print("Robyn's own limit (bench/robyn_bridge.py):", flush=True)
        measure_robyn_limit(run, args.quick)
    if not args.no_others:
        print("other benchmarks (resume_replay, client_overhead, engine_cost):", flush=True)
        measure_others(run, args.quick)
    load_after = os.getloadavg()
    started_rts = [t.name for t in targets if t.name not in BASELINES]
    rows = (throughput_rows(run, started_rts) + comparison_rows(run, started_rts) + latency_rows(run)
            + fanout_rows(run) + instruction_rows(run) + run.others)
    table = render(rows)
    command = " ".join(["bench/run", *(sys.argv[1:] if argv is None else argv)])
    header = (f"{started:%Y-%m-%d %H:%M} UTC, `{command}`, {machine()}; servers pinned to core {SERVER_CPU}, "
              f"load on core {LOAD_CPU}; load average (1/5/15 min) {_load(load_before)} before, "
              f"{_load(load_after)} after")
    print(f"\n{header}\n\n{table}\n", flush=True)
    for note in run.notes:
        print(f"note: {note}", flush=True)
    for err in run.errors:
        print(f"error: {err}", flush=True)
    (out / "table.md").write_text(f"{header}\n\n{table}\n" + "".join(f"\nnote: {n}" for n in run.notes))
    (out / "results.json").write_text(json.dumps({
        "started": started.isoformat(), "command": command, "machine": machine(), "profile": profile.__repr__(),
        "throughput": run.throughput, "latency": run.latency, "fanout": run.fanout, "notes": run.notes,
        "instructions": run.instructions, "loadavg": [load_before, load_after], "errors": run.errors,
        "others": [r.__repr__() for r in run.others],
    }, indent=2))
    return 1 if run.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
