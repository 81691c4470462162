"""What Robyn's async-handler bridge costs, without any of our code: the same bytes from a sync and an async handler.

Our Robyn adapter has to register its handler as async: the hub (market state, caches, rate
limiter, metrics) lives on one event loop thread, and Robyn runs a sync handler on actix's
own thread. An async handler costs Robyn a hand-over to the event loop and back per request.
This serves one pre-built 17 KB JSON body from both kinds of handler, on a bare Robyn app,
and compares them with wrk (only 127.0.0.1, bounded runs):

    .venv/bin/python bench/robyn_bridge.py [--duration 3] [--rounds 3] [--pin] [--keep-thread-state]

`--keep-thread-state` keeps the Python thread state of actix's thread (one PyGILState_Ensure never released,
as server/http/robyn_app.py does): without it pyo3 makes and deletes one per call into Python.

`--callgrind` counts instructions instead of timing (figures that do not move with the machine): the app runs
under valgrind's callgrind, and for each kind of handler the whole process's user-space instructions of
`--count` sequential keep-alive requests are read between a zeroed counter and a dump (`callgrind_control`),
Robyn's Rust side included; the kernel's share is not counted:

    .venv/bin/python bench/robyn_bridge.py --callgrind --keep-thread-state [--count 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.wrkrun import pin, require_wrk, wrk  # noqa: E402

BODY = b'{"quotes":[' + b",".join([b'{"id":"x","price":1.0,"text":"' + b"a" * 300 + b'"}'] * 49) + b"]}"


OUR_HEADERS = [
    ("content-type", "application/json"), ("etag", '"0123456789abcdef0123456789abcdef"'), ("vary", "Accept-Encoding"),
    ("access-control-allow-origin", "*"),
    ("access-control-expose-headers", "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, "
                                      "RateLimit-Policy, Retry-After, X-Request-ID, ETag"),
    ("x-ratelimit-limit", "1000000000"), ("x-ratelimit-remaining", "999999999"), ("x-ratelimit-reset", "1"),
    ("ratelimit-policy", '"enterprise";q=1000000000;w=60'), ("ratelimit", '"enterprise";r=999999999;t=1'),
    ("x-request-id", "0123abcd-12345"),
]
KINDS = ("sync", "async", "sync-wild/x/y", "sync-read", "sync-headers", "sync-both", "sync-kept")


def serve(port: int, keep: bool) -> None:
    import ctypes
    import threading

    from robyn import Headers, Response, Robyn

    app = Robyn(__file__)
    headers = {"content-type": "application/json"}
    kept_threads: set[int] = set()

    def touch() -> None:  # every handler's first call (a set lookup either way, so the kinds stay comparable)
        if threading.get_ident() not in kept_threads:
            if keep:
                ctypes.pythonapi.PyGILState_Ensure()  # never released: the thread keeps its state
            kept_threads.add(threading.get_ident())

    @app.get("/sync")
    def sync_handler(request):  # type: ignore[no-untyped-def]
        touch()
        return Response(200, headers, BODY)

    @app.get("/async")
    async def async_handler(request):  # type: ignore[no-untyped-def]
        touch()
        return Response(200, headers, BODY)

    @app.get("/sync-read")
    def sync_read(request):  # type: ignore[no-untyped-def]
        touch()
        # what our sync handler reads of every request: path, query pairs, the header map
        request.url.path, request.query_params.multi_items(), request.headers.to_dict()
        return Response(200, headers, BODY)

    @app.get("/sync-headers")
    def sync_headers(request):  # type: ignore[no-untyped-def]
        touch()
        # what our sync handler writes: a new response with our 12 header fields
        return Response(200, dict(OUR_HEADERS), BODY)

    @app.get("/sync-wild/*path")
    def sync_wild(request):  # type: ignore[no-untyped-def]
        touch()
        # the sync handler's own cost, on a wildcard route like ours (/api/v1/*path)
        return Response(200, headers, BODY)

    @app.get("/sync-both")
    def sync_both(request):  # type: ignore[no-untyped-def]
        touch()
        request.url.path, request.query_params.multi_items(), request.headers.to_dict()
        return Response(200, dict(OUR_HEADERS), BODY)

    kept_headers = Headers({})
    for name, value in OUR_HEADERS:
        kept_headers.append(name, value)
    kept = Response(200, kept_headers, BODY)
    ids = iter(range(10**12))

    @app.get("/sync-kept")
    def sync_kept(request):  # type: ignore[no-untyped-def]
        touch()
        # what a remembered answer of ours returns: one kept response with our 12 fields, the request id set
        kept_headers.set("x-request-id", f"0123abcd-{next(ids)}")
        return kept

    sys.argv = sys.argv[:1]  # Robyn.start() parses sys.argv itself
    app.start(host="127.0.0.1", port=port)


def callgrind_counts(kinds: list[str], count: int, keep: bool) -> dict[str, float]:
    """User-space instructions per request of each kind, the whole Robyn process (see the module's docstring)."""
    from bench.process_instructions import count_requests
    from tests.conftest import free_port

    port = free_port()
    cmd = [sys.executable, __file__, "--serve", str(port), *(["--keep-thread-state"] if keep else [])]
    figures = count_requests(cmd, port, {k: f"/{k}" for k in kinds}, count, env={"ROBYN_DEV": "false"},
                             ready="/sync")
    return {kind: c.total for kind, c in figures.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pin", action="store_true", help="server on core 0, wrk on core 1")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    parser.add_argument("--keep-thread-state", action="store_true",
                        help="keep actix's Python thread state, as our Robyn adapter does")
    parser.add_argument("--callgrind", action="store_true", help="count instructions per request (valgrind)")
    parser.add_argument("--count", type=int, default=2000, help="--callgrind: requests per kind")
    parser.add_argument("--kinds", default="sync,sync-kept,sync-headers", help="--callgrind: the kinds counted")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.keep_thread_state)
        return 0
    if args.callgrind:
        counts = callgrind_counts([k for k in args.kinds.split(",") if k], args.count, args.keep_thread_state)
        sync = counts.get("sync")
        for kind, value in counts.items():
            extra = f" ({value - sync:+,.0f} vs sync)" if sync is not None and kind != "sync" else ""
            print(f"robyn {kind:12} handler: {value:,.0f} instructions per request{extra}")
        if args.json:
            print(json.dumps({"instructions": counts}))
        return 0
    require_wrk()
    from tests.conftest import free_port

    port = free_port()
    keep = ["--keep-thread-state"] if args.keep_thread_state else []
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), *keep], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "ROBYN_DEV": "false"},
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(base + "/sync", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)  # polling a port that is not open yet: nothing to await
        if args.pin:
            pin(proc.pid, {0})
        rps: dict[str, list[float]] = {k: [] for k in KINDS}
        cpu: dict[str, list[float]] = {k: [] for k in KINDS}
        for _ in range(args.rounds):
            for kind in rps:
                res = wrk(f"{base}/{kind}", args.duration, 32, cpu=1 if args.pin else None, server_pid=proc.pid)
                rps[kind].append(res.rps)
                cpu[kind].append(res.server_us)
        best = {kind: max(v) for kind, v in rps.items()}
        least = {kind: min(v) for kind, v in cpu.items()}
        for kind, values in rps.items():
            print(f"robyn {kind:12} handler: best {best[kind]:,.0f} req/s (median {statistics.median(values):,.0f}), "
                  f"server CPU {least[kind]:.1f} us/request (least of {len(cpu[kind])})")
        if args.json:
            print(json.dumps({"best_rps": best, "least_us": least}))
        print(f"async / sync: {best['async'] / best['sync']:.2f}; "
              f"bridge cost {1e6 / best['async'] - 1e6 / best['sync']:.1f} us per request")
        print(f"wildcard route: +{least['sync-wild/x/y'] - least['sync']:.1f} us; "
              f"reading the request: +{least['sync-read'] - least['sync']:.1f} us; our 12 header fields: "
              f"+{least['sync-headers'] - least['sync']:.1f} us; both: +{least['sync-both'] - least['sync']:.1f} us; "
              f"a kept response with our fields, the request id set: +{least['sync-kept'] - least['sync']:.1f} us; "
              f"sync / sync-both CPU: {least['sync'] / least['sync-both']:.2f}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Robyn ignores SIGTERM in single-process mode (issue 1324)
        proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
