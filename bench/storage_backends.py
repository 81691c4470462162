"""Site reads on SQLite vs PostgreSQL (SPEC 12): sequential request latency from one client.

Starts `market-server serve` (granian) once on a temporary SQLite data dir and once on
`--database-url` (a fresh schema of the PostgreSQL at MARKET_TEST_DATABASE_URL, default
postgresql://postgres@127.0.0.1:5432/test, dropped afterwards), warms up, then times N
sequential GETs of `/api/news?limit=10` and `/api/receipt/WR-NB-000101` (which includes
the receipt's Merkle proof) and prints p50/p99 per backend.

    .venv/bin/python -m bench.storage_backends            # 1,500 requests per endpoint
    .venv/bin/python -m bench.storage_backends --requests 5000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tests.conftest import ServerProcess
from tests.pg_service import pg_schema

PATHS = ("/api/news?limit=10", "/api/receipt/WR-NB-000101")
WARMUP = 100


def measure(srv: ServerProcess, path: str, n: int) -> tuple[float, float]:
    times: list[float] = []
    with srv.client() as c:
        for _ in range(WARMUP):
            c.get(path)
        for _ in range(n):
            started = time.perf_counter()
            response = c.get(path)
            times.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{path}: HTTP {response.status_code}")
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.99)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    args = parser.parse_args()
    for backend in ("sqlite", "postgresql"):
        with tempfile.TemporaryDirectory() as tmp, pg_schema() as url:
            extra = ["--public-rate", "1000000"] + (["--database-url", url] if backend == "postgresql" else [])
            srv = ServerProcess(Path(tmp) / "data", "granian", *extra)
            try:
                for path in PATHS:
                    p50, p99 = measure(srv, path, args.requests)
                    print(f"{backend:<10} {path:<28} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms", flush=True)
            finally:
                srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
