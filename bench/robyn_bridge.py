"""What Robyn's async-handler bridge costs, without any of our code: the same bytes from a sync and an async handler.

Our Robyn adapter has to register its handler as async: the hub (market state, caches, rate
limiter, metrics) lives on one event loop thread, and Robyn runs a sync handler on actix's
own thread. An async handler costs Robyn a hand-over to the event loop and back per request.
This serves one pre-built 17 KB JSON body from both kinds of handler, on a bare Robyn app,
and compares them with wrk (only 127.0.0.1, bounded runs):

    .venv/bin/python bench/robyn_bridge.py [--duration 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
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

from bench.wrkrun import require_wrk, wrk  # noqa: E402

BODY = b'{"quotes":[' + b",".join([b'{"id":"x","price":1.0,"text":"' + b"a" * 300 + b'"}'] * 49) + b"]}"


def serve(port: int) -> None:
    from robyn import Response, Robyn

    app = Robyn(__file__)
    headers = {"content-type": "application/json"}

    @app.get("/sync")
    def sync_handler(request):  # type: ignore[no-untyped-def]
        return Response(200, headers, BODY)

    @app.get("/async")
    async def async_handler(request):  # type: ignore[no-untyped-def]
        return Response(200, headers, BODY)

    sys.argv = sys.argv[:1]  # Robyn.start() parses sys.argv itself
    app.start(host="127.0.0.1", port=port)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    require_wrk()
    from tests.conftest import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], stdout=subprocess.DEVNULL,
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
        rps: dict[str, list[float]] = {"sync": [], "async": []}
        for _ in range(args.rounds):
            for kind in rps:
                rps[kind].append(wrk(f"{base}/{kind}", args.duration, 32).rps)
        best = {kind: max(v) for kind, v in rps.items()}
        for kind, values in rps.items():
            print(f"robyn {kind:5} handler: best {best[kind]:,.0f} req/s (median {statistics.median(values):,.0f})")
        print(f"async / sync: {best['async'] / best['sync']:.2f}; "
              f"bridge cost {1e6 / best['async'] - 1e6 / best['sync']:.1f} us per request")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Robyn ignores SIGTERM in single-process mode (issue 1324)
        proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
