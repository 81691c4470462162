"""HTTP throughput of the hot keyed endpoints on both runtimes, against each runtime's static-bytes ceiling.

For each runtime: start `market-server serve --bench-static` (demo feed ticking in the same
process), then wrk each path in turn, interleaved over several rounds, and report the median
req/s and the ratio to the static route measured in the same run. Only 127.0.0.1; every wrk
run is bounded by its duration.

    .venv/bin/python bench/http_runtimes.py [--duration 5] [--rounds 3] [--connections 32]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess

PATHS = {
    "static": "/__bench/static",
    "quotes": "/api/v1/quotes",
    "kline": "/api/v1/kline/brent",
}


def wrk(url: str, key: str, duration: float, connections: int) -> dict[str, float]:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{int(duration)}s", "--latency", "-H", f"X-SERVICE-Key: {key}", url],
        capture_output=True, text=True, timeout=duration + 30, check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{url}: {errors.group(1)} non-2xx responses")
    return {"rps": rps, "p99_ms": p99}


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def measure_runtime(runtime: str, duration: float, rounds: int, connections: int) -> dict[str, dict[str, float]]:
    data = Path(tempfile.mkdtemp(prefix=f"bench-{runtime}-")) / "data"
    srv = ServerProcess(data, runtime, "--bench-static", "--plan-rate", "professional=1000000000")
    try:
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in PATHS}
        for _ in range(rounds):
            for name, path in PATHS.items():
                samples[name].append(wrk(srv.base + path, srv.demo_key, duration, connections))
        return {
            name: {
                "rps": statistics.median(s["rps"] for s in runs),
                "p99_ms": statistics.median(s["p99_ms"] for s in runs),
            }
            for name, runs in samples.items()
        }
    finally:
        srv.stop()
        shutil.rmtree(data.parent, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--runtimes", default="granian,robyn")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: run ./scripts/install-bench-tools")
    results = {rt: measure_runtime(rt, args.duration, args.rounds, args.connections)
               for rt in args.runtimes.split(",")}
    print(f"| runtime | endpoint | req/s (median of {args.rounds}) | p99 ms | ratio to static |")
    print("|---|---|---|---|---|")
    for rt, res in results.items():
        for name, r in res.items():
            ratio = r["rps"] / res["static"]["rps"]
            print(f"| {rt} | {name} | {r['rps']:,.0f} | {r['p99_ms']:.2f} | {ratio:.2f} |")
    if "granian" in results and "robyn" in results:
        for name in ("quotes", "kline"):
            ratio = results["granian"][name]["rps"] / results["robyn"][name]["rps"]
            print(f"\ngranian / robyn on {name}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
