"""Does a bulk CLI import on a live data dir stall the server? (SPEC 11: it must not.)

Starts `market-server serve` on a temporary data dir, runs `market-server receipts import`
of N generated receipts (default 100,000) on the same data dir, and meanwhile polls
`GET /healthz` every 10 ms (a bounded number of times). Reports the import time and the
/healthz latency (max, p99, median) measured while the import ran. Target: max <= 250 ms.

    .venv/bin/python -m bench.import_stall                 # 100,000 receipts
    .venv/bin/python -m bench.import_stall --receipts 20000 --runtime robyn
    .venv/bin/python -m bench.import_stall --pin            # server + poller on core 0, the import on core 1

`--pin` is how an operator would run it (the CLI on another core than the server) and keeps the
figure from depending on how the scheduler splits the two cores of this machine.

Exit code 1 if the target is missed or a request failed.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
TARGET_MAX_MS = 250.0
POLL_S = 0.01
MAX_POLLS = 100_000  # bounds the poller even if the import never ends
START_TIMEOUT_S = 30.0
BASELINE_S = 5.0  # /healthz polled this long before the import: the machine's own noise
IMPORT_TIMEOUT_S = 900.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def receipts(n: int) -> list[dict[str, object]]:
    statuses = ("active", "pledged", "frozen", "cancelled")
    return [
        {"receiptNo": f"BENCH-{i:07d}", "commodity": "甲醇", "grade": "优等品", "quantity": 100 + i % 900,
         "unit": "t", "warehouse": "宁波镇海港化工储罐区 3 号库", "holder": f"上海远东石化贸易{i}有限公司",
         "status": statuses[i % 4], "issuedAt": "2026-01-05T09:30:00+08:00", "expiresAt": "2027-01-05"}
        for i in range(n)
    ]


def wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(base + "/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # the port is not open yet: nothing to await
    raise SystemExit("server not ready in time")


def poll(base: str, stop: threading.Event, latencies: list[float], failures: list[str],
         until: float = float("inf")) -> None:
    with httpx.Client(base_url=base, timeout=10.0) as client:
        for _ in range(MAX_POLLS):
            if stop.is_set() or time.monotonic() >= until:
                return
            started = time.perf_counter()
            try:
                status = client.get("/healthz").status_code
            except httpx.HTTPError as exc:
                failures.append(type(exc).__name__)
                status = 0
            elapsed = time.perf_counter() - started
            latencies.append(elapsed)
            if status != 200:
                failures.append(f"status {status}")
            time.sleep(max(0.0, POLL_S - elapsed))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--receipts", type=int, default=100_000)
    ap.add_argument("--runtime", default="granian", choices=("granian", "robyn"))
    ap.add_argument("--pin", action="store_true", help="server and poller on CPU 0, the import on CPU 1")
    args = ap.parse_args()
    server_cpu, import_cpu = (["taskset", "-c", "0"], ["taskset", "-c", "1"]) if args.pin else ([], [])
    if args.pin:
        os.sched_setaffinity(0, {0})  # the poller shares the server's core, never the import's

    with tempfile.TemporaryDirectory(prefix="import-stall-") as tmp:
        data_dir = Path(tmp) / "data"
        file = Path(tmp) / "receipts.json"
        file.write_bytes(orjson.dumps(receipts(args.receipts)))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        serve = [*server_cpu, sys.executable, "-m", "server", "serve", "--data-dir", str(data_dir),
                 "--runtime", args.runtime, "--port", str(port), "--ws-port", str(free_port()),
                 "--no-demo-key", "--log-level", "warning"]
        server = subprocess.Popen(serve, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            wait_ready(base, server)
            idle: list[float] = []
            poll(base, threading.Event(), idle, [], until=time.monotonic() + BASELINE_S)
            latencies: list[float] = []
            failures: list[str] = []
            stop = threading.Event()
            poller = threading.Thread(target=poll, args=(base, stop, latencies, failures), daemon=True)
            poller.start()
            started = time.monotonic()
            done = subprocess.run(
                [*import_cpu, sys.executable, "-m", "server", "receipts", "import", str(file),
                 "--data-dir", str(data_dir)],
                cwd=ROOT, capture_output=True, timeout=IMPORT_TIMEOUT_S)
            import_s = time.monotonic() - started
            stop.set()
            poller.join(timeout=15.0)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=15.0)
    if done.returncode != 0:
        print(done.stderr.decode(errors="replace")[-2000:], file=sys.stderr)
        return 1
    worst = max(latencies) * 1000
    pinned = ", pinned: server core 0, import core 1" if args.pin else ""
    print(f"receipts imported: {args.receipts:,} in {import_s:.1f} s (runtime {args.runtime}{pinned})")
    for label, values in (("before the import (idle)", idle), ("during the import", latencies)):
        print(f"/healthz {label}: {len(values)} requests, max {max(values) * 1000:.1f} ms, "
              f"p99 {percentile(values, 0.99) * 1000:.1f} ms, median {percentile(values, 0.5) * 1000:.1f} ms")
    print(f"failures during the import: {len(failures)}")
    ok = worst <= TARGET_MAX_MS and not failures
    print(f"target max <= {TARGET_MAX_MS:.0f} ms: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
