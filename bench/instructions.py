"""Per-request cost of the hot keyed GETs in process, through the whole pipeline, free of machine noise.

    .venv/bin/python -m bench.instructions                    # callgrind: instructions per request
    .venv/bin/python -m bench.instructions --mode time        # CPU us per request (best of repeats)
    .venv/bin/python -m bench.instructions --mode profile     # cProfile of 20,000 quotes requests
    .venv/bin/python -m bench.instructions --engine redis --endpoints quotes     # the redis engine, 32 in flight
    .venv/bin/python -m bench.instructions --inflight 32 --endpoints quotes      # the memory engine, the same way
    .venv/bin/python -m bench.instructions --runtime robyn    # Robyn's sync hot handler (our side of it)

A real `Hub` (market state, caches, key cache over SQLite, GCRA, metrics) is built in a temporary
data dir with an enterprise key; each request goes through the runtime adapter's entry point
(`RsgiAdapter.__rsgi__` with a scope/protocol object shaped like Granian's: method, path, query
string, a lower-case header map with the key and the headers wrk sends), so Request construction,
the pipeline, the handler, the cached body and the response headers handed to the runtime are all
counted; only Granian's Rust side is not. Nothing awaits on the cached path, so each request is one
`coroutine.send(None)`. The feed does not tick: every request is a cache hit (the steady state).

callgrind mode runs this module under `valgrind --tool=callgrind` twice per endpoint, with N and
N + DELTA requests, and reports (instructions(N + DELTA) - instructions(N)) / DELTA: start-up,
imports and the hub's construction cancel out; the hub's objects are frozen (`gc.freeze()`) before
the measured requests, so a full collection of the heap cannot land in one run and not the other.
Instruction counts do not depend on other load on the machine, so a regression shows even when
wall-clock figures are noise (bench/README.md keeps one line per commit).

`--runtime robyn` counts the Robyn adapter's side instead: each request is a call of the sync handler Robyn
runs on actix's thread (`RobynRuntime.hot_handler(route)`, `static` for the static route) with a request built
by Robyn's own `Request` class, so our Python and every getter call into Robyn's Rust objects are counted.
What Robyn does after the handler returns (copying the response's header map and body into Rust, parsing
each field again for actix) is not: `bench/robyn_bridge.py` measures that on a bare Robyn app.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PATHS = {
    "quotes": "/api/v1/quotes",
    "kline": "/api/v1/kline/brent",
    "static": "/__bench/static",
    "news": "/api/news",  # a public route: the per-IP bucket instead of the key's (issue 22 item 1)
}
DELTA = 20000
TOGGLE = "--toggle-collect=functools_reduce"  # count only inside the measured loop (run_requests)
REDIS_URL = "redis://127.0.0.1:6379/0"


class Scope:
    """The attributes of Granian's RSGI HTTP scope the adapter reads."""

    __slots__ = ("client", "headers", "method", "path", "proto", "query_string")

    def __init__(self, path: str, headers: dict[str, str], query: str = "", method: str = "GET") -> None:
        self.proto = "http"
        self.method = method
        self.path = path
        self.query_string = query
        self.headers = headers
        self.client = "127.0.0.1:50000"


class Proto:
    __slots__ = ("body", "headers", "status")

    def __init__(self) -> None:
        self.status = 0
        self.headers: Any = None
        self.body = b""

    def response_bytes(self, status: int, headers: Any, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


ROBYN_ROUTES = {  # the route each endpoint is registered under (server/http/robyn_app.py hot_routes)
    "quotes": "/api/v1/quotes",
    "kline": "/api/v1/kline/*path",
    "news": "/api/news",
}


def build(tmp: Path, engine: str = "memory", redis_url: str = "", runtime: str = "granian") -> tuple[Any, Any, str]:
    """A hub with an enterprise key (cached), and its Granian adapter (or with `runtime="robyn"`, its
    `RobynRuntime`); its loop is the current event loop (`--engine redis`: the Redis connections live on it), on
    a fresh Redis prefix."""
    import uvloop

    from server.api.site.routes import SiteTasks
    from server.config import EngineKind, Runtime, Settings
    from server.http.edge import EdgeGate
    from server.http.granian_rsgi import RsgiAdapter
    from server.root import bench_static_body
    from server.root import build as build_node
    from server.store.sql.db import open_db
    from server.store.sql.sqlite_sync import KeyRepo

    data = tmp / "data"
    data.mkdir()
    _, secret = KeyRepo(open_db(data)).create("enterprise", 1_000_000_000, "bench")
    public = 1_000_000_000  # /api/news: the per-IP public bucket never refuses
    kind = Runtime.ROBYN if runtime == "robyn" else Runtime.GRANIAN
    settings = Settings(data_dir=data, bench_static=True, public_rate=public, runtime=kind)
    if engine == "redis":
        settings = Settings(data_dir=data, bench_static=True, engine=EngineKind.REDIS, redis_url=redis_url or REDIS_URL,
                            redis_prefix=f"bench-instr-{os.getpid()}-{time.monotonic_ns()}:", public_rate=public,
                            runtime=kind)
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    hub = build_node(settings)
    adapter: Any
    if runtime == "robyn":
        from robyn.robyn import Response as RobynResponse

        from server.http.robyn_app import Hub, RobynRuntime

        hooks = Hub(hub.app, hub.start, lambda _http: hub.stop(), lambda: None, lambda *_: None)
        adapter = RobynRuntime(settings, hooks)
        adapter.app, adapter.loop = hub.app, loop
        static = bench_static_body(hub) or b""
        adapter.static_response = RobynResponse(200, {"content-type": "application/json"}, static)
    else:
        adapter = RsgiAdapter(hub.app, EdgeGate(30.0, 8), bench_static_body(hub))

    async def prepare() -> None:
        await hub.storage.open()
        await hub.engine.start()
        await hub.keys.refresh()
        for service in hub.services:  # the content version the news answers are remembered under
            if isinstance(service, SiteTasks) and service.content is not None:
                await service.content.refresh()
        # the first /api/news reads storage (awaits a reader thread): answered here, remembered from then on
        if runtime != "robyn":
            await adapter.__rsgi__(Scope(PATHS["news"], {"host": "127.0.0.1:8000"}), Proto())

    loop.run_until_complete(prepare())
    return hub, adapter, secret


def requester(adapter: Any, path: str, secret: str, extra: dict[str, str] | None = None,
              inflight: int = 0) -> Any:
    """One call: one request driven by `send(None)` (nothing awaits on the memory engine's cached path), or with
    `inflight` > 0, that many requests as tasks on the event loop at once (what the server runs: the Redis
    engine's GCRA checks are awaited, those in flight share round trips)."""
    headers = {"host": "127.0.0.1:8000", "x-service-key": secret, **(extra or {})}
    scope = Scope(path, headers)
    proto = Proto()
    rsgi = adapter.__rsgi__
    loop = asyncio.get_event_loop()

    def one() -> None:
        coro = rsgi(scope, proto)
        try:  # noqa: SIM105 - contextlib.suppress would add its own cost to every measured call
            coro.send(None)
        except StopIteration:
            pass

    def batch() -> None:
        loop.run_until_complete(asyncio.gather(*[rsgi(scope, proto) for _ in range(inflight)]))

    call = batch if inflight else one
    call()
    if proto.status != 200:
        raise SystemExit(f"{path}: status {proto.status} {proto.body[:200]!r}")
    return call


def robyn_requester(runtime: Any, endpoint: str, secret: str) -> Any:
    """One call: one request through the Robyn handler of `endpoint`, as actix's thread makes it (a sync call
    returning the response Robyn then copies). The first request of each answer runs on the loop here (the
    runtime's miss path hands it to the loop and waits, which would wait forever on a loop nobody runs)."""
    from robyn.robyn import Headers as RobynHeaders
    from robyn.robyn import QueryParams, Url
    from robyn.robyn import Request as RobynRequest

    path = PATHS[endpoint]
    headers = RobynHeaders({})
    for name, value in {"host": "127.0.0.1:8000", "x-service-key": secret}.items():
        headers.set(name, value)
    request = RobynRequest(QueryParams(), headers, {}, "", "GET", Url("http", "127.0.0.1", path), {}, {},
                           identity=None, ip_addr="127.0.0.1", session=None)
    handler = runtime.static if endpoint == "static" else runtime.hot_handler(ROBYN_ROUTES[endpoint])
    if endpoint != "static":
        answer = asyncio.get_event_loop().run_until_complete(runtime.handle(request))  # the pipeline remembers it
        if answer.status_code != 200:
            raise SystemExit(f"{path}: status {answer.status_code}")
        hot = runtime.app.serve_hot("GET", path, "", headers, request)
        if not isinstance(hot, tuple):
            raise SystemExit(f"{path}: not answered by the hot path ({hot!r})")

    def one() -> None:
        handler(request)

    one()
    return one


def run_requests(endpoint: str, count: int, engine: str, inflight: int, redis_url: str,
                 runtime: str = "granian") -> None:
    """The callgrind child: build, warm up, then `count` requests (`count // inflight` calls of `inflight`)."""
    with tempfile.TemporaryDirectory(prefix="bench-instr-") as tmp:
        hub, adapter, secret = build(Path(tmp), engine, redis_url, runtime)
        if runtime == "robyn":
            one = robyn_requester(adapter, endpoint, secret)
            inflight = 0
        else:
            one = requester(adapter, PATHS[endpoint], secret, inflight=inflight)
        per_call = max(1, inflight)
        count //= per_call
        for _ in range(200 // per_call + 1):
            one()
        # the hub's objects (numpy, the catalogue, caches...) out of the collector's reach: a full collection of
        # them now and then would add millions of instructions to whichever run it falls in
        gc.collect()
        gc.freeze()

        def measured(_a: object, _b: object) -> None:
            for _ in range(count):
                one()

        # the measured requests run inside functools.reduce's C function, the only place callgrind counts
        # (--toggle-collect): start-up work that differs from run to run (threads, entropy) is left out
        functools.reduce(measured, (None, None))
        if engine == "redis":  # the epoch key stays otherwise (the buckets expire by themselves)
            import redis

            client = redis.Redis.from_url(redis_url or REDIS_URL)
            client.delete(*client.keys(hub.settings.redis_prefix + "*") or [hub.settings.redis_prefix + "none"])
            client.close()


def callgrind(endpoint: str, count: int, engine: str = "memory", inflight: int = 0, redis_url: str = "",
              runtime: str = "granian") -> int:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: run ./scripts/install-bench-tools")
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as tmp:
        out = Path(tmp) / "cg.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no", TOGGLE,
               "--compress-strings=no", sys.executable, "-m", "bench.instructions", "--child", endpoint,
               "--count", str(count), "--engine", engine, "--inflight", str(inflight),
               "--redis-url", redis_url or REDIS_URL, "--runtime", runtime]
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc"}
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"valgrind failed ({proc.returncode}): {proc.stderr[-2000:]}")
        match = re.search(r"Collected\s*:\s*(\d+)", proc.stderr) or re.search(r"refs:\s*([\d,]+)", proc.stderr)
        if match is None:
            raise SystemExit(f"no instruction total in valgrind's output: {proc.stderr[-2000:]}")
        return int(match.group(1).replace(",", ""))


def measure_callgrind(endpoints: list[str], base: int, delta: int, engine: str = "memory", inflight: int = 0,
                      redis_url: str = "", runtime: str = "granian") -> dict[str, float]:
    return {e: (callgrind(e, base + delta, engine, inflight, redis_url, runtime)
                - callgrind(e, base, engine, inflight, redis_url, runtime)) / delta for e in endpoints}


def measure_time(endpoints: list[str], number: int, repeat: int, engine: str = "memory", inflight: int = 0,
                 redis_url: str = "") -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-instr-") as tmp:
        _, adapter, secret = build(Path(tmp), engine, redis_url)
        figures = {}
        per_call = max(1, inflight)
        calls = max(1, number // per_call)
        for endpoint in endpoints:
            one = requester(adapter, PATHS[endpoint], secret, inflight=inflight)
            best = float("inf")
            for _ in range(repeat):
                t0 = time.process_time()
                for _ in range(calls):
                    one()
                best = min(best, (time.process_time() - t0) / (calls * per_call) * 1e6)
            figures[endpoint] = best
        return figures


def profile(endpoint: str, number: int) -> None:
    import cProfile
    import pstats

    with tempfile.TemporaryDirectory(prefix="bench-instr-") as tmp:
        _, adapter, secret = build(Path(tmp))
        one = requester(adapter, PATHS[endpoint], secret)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(number):
            one()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


TSV = ROOT / "bench" / "instructions.tsv"
TSV_HEAD = "commit\tdate\tquotes\tkline\tstatic\tnote"


def record(figures: dict[str, float], note: str = "") -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            timeout=10).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "server"], cwd=ROOT, capture_output=True,
                           text=True, timeout=10).stdout.strip()
    if not TSV.exists():
        TSV.write_text(TSV_HEAD + "\n")
    values = "\t".join(f"{figures.get(e, float('nan')):.0f}" for e in ("quotes", "kline", "static"))
    day = time.strftime("%Y-%m-%d", time.gmtime())
    with TSV.open("a") as fh:
        fh.write(f"{commit}{'+' if dirty else ''}\t{day}\t{values}\t{note}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("callgrind", "time", "profile"), default="callgrind")
    parser.add_argument("--endpoints", default="quotes,kline,static")
    parser.add_argument("--count", type=int, default=500, help="callgrind: requests of the shorter run")
    parser.add_argument("--delta", type=int, default=DELTA, help="callgrind: extra requests of the longer run")
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", action="store_true",
                        help="callgrind: append the figures to bench/instructions.tsv under the current commit")
    parser.add_argument("--engine", choices=("memory", "redis"), default="memory",
                        help="the hub's engine (redis: on --redis-url, a fresh prefix; implies --inflight 32)")
    parser.add_argument("--inflight", type=int, default=None,
                        help="requests run as tasks on the loop at once (0: one request by send(None))")
    parser.add_argument("--redis-url", default=REDIS_URL)
    parser.add_argument("--note", default="", help="--record: the row's note (after the engine and in-flight count)")
    parser.add_argument("--runtime", choices=("granian", "robyn"), default="granian",
                        help="whose adapter the requests go through (callgrind mode; robyn: the memory engine)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    inflight = args.inflight if args.inflight is not None else (32 if args.engine == "redis" else 0)
    if args.child:
        run_requests(args.child, args.count, args.engine, inflight, args.redis_url, args.runtime)
        return 0
    endpoints = [e for e in args.endpoints.split(",") if e]
    if args.mode == "profile":
        profile(endpoints[0], args.number)
        return 0
    if args.mode == "time":
        figures = measure_time(endpoints, args.number, args.repeat, args.engine, inflight, args.redis_url)
        unit = "us CPU per request"
    else:
        if args.runtime == "robyn" and (args.engine != "memory" or inflight):
            parser.error("--runtime robyn counts the memory engine's synchronous path only")
        figures = measure_callgrind(endpoints, args.count, args.delta, args.engine, inflight, args.redis_url,
                                    args.runtime)
        unit = "instructions per request"
    if args.record and args.mode == "callgrind":
        note = f"engine={args.engine} inflight={inflight}" + (" runtime=robyn" if args.runtime == "robyn" else "")
        record(figures, note + (f" {args.note}" if args.note else ""))
    if args.json:
        print(json.dumps({"mode": args.mode, "unit": unit, "figures": figures}))
    else:
        for endpoint, value in figures.items():
            print(f"{endpoint:8} {value:>12,.1f} {unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
