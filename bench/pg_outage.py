"""What one hub answers while its PostgreSQL is away, and how soon it is ready again (docs/scaling.md).

    .venv/bin/python -m bench.pg_outage [--runtime granian|robyn] [--down-s 7]

Starts a private PostgreSQL 15 cluster (initdb in a temporary directory, a free port; run as the
`postgres` user when this runs as root), a hub on it, probes every kind of request, stops PostgreSQL
(`pg_ctl stop -m immediate`), probes again after 1 s and after `--down-s`, starts it again, and prints
how long the hub took to answer `/readyz` 200, then probes once more. Everything is removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import ServerProcess, free_port  # noqa: E402

PG_BIN = Path("/usr/lib/postgresql/15/bin")


class Cluster:
    def __init__(self, root: Path) -> None:
        self.dir, self.port = root / "pg", free_port()
        self.dir.mkdir()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.dir, "postgres")
        self._run(f"{PG_BIN / 'initdb'} -D {self.dir / 'data'} -A trust -U postgres")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, cmd: str) -> None:
        argv = ["su", "postgres", "-s", "/bin/sh", "-c", cmd] if self.as_postgres else ["sh", "-c", cmd]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def ctl(self, action: str) -> None:
        self._run(f"{PG_BIN / 'pg_ctl'} -D {self.dir / 'data'} -o '-p {self.port} -k {self.dir}' "
                  f"-l {self.dir / 'log'} -m immediate -w {action}")


def probe(srv: ServerProcess, key: str, label: str) -> None:
    checks: list[tuple[str, Callable[[httpx.Client], httpx.Response]]] = [
        ("/readyz", lambda c: c.get("/readyz")),
        ("/healthz", lambda c: c.get("/healthz")),
        ("quotes, known key", lambda c: c.get("/api/v1/quotes", headers={"X-SERVICE-Key": key})),
        ("/api/market", lambda c: c.get("/api/market")),
        ("/api/news", lambda c: c.get("/api/news")),
        ("POST /api/cooperation", lambda c: c.post("/api/cooperation", json={
            "company": "X", "contactName": "Y", "email": "y@example.cn", "type": "partnership"})),
        ("POST /api/auth/login", lambda c: c.post("/api/auth/login", json={
            "email": "nobody@example.com", "password": "long-enough-1"})),
    ]
    print(f"--- {label}")
    for name, call in checks:
        started = time.monotonic()
        try:
            with httpx.Client(base_url=srv.base, timeout=20) as client:
                status = str(call(client).status_code)
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        print(f"  {name:24} {status:>5} in {1000 * (time.monotonic() - started):6.0f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", default="granian", choices=["granian", "robyn"])
    parser.add_argument("--down-s", type=float, default=7.0)
    args = parser.parse_args()
    if not (PG_BIN / "initdb").exists():
        sys.exit(f"PostgreSQL 15 binaries not found in {PG_BIN}")
    root = Path(tempfile.mkdtemp(prefix="pg-outage-"))
    os.chmod(root, 0o755)
    cluster = Cluster(root)
    cluster.ctl("start")
    srv = ServerProcess(root / "hub" / "data", args.runtime, "--database-url", cluster.url, "--public-rate", "100000",
                        "--log-level", "warning")
    try:
        key = srv.demo_key
        probe(srv, key, "PostgreSQL up")
        cluster.ctl("stop")
        time.sleep(1.0)
        probe(srv, key, "PostgreSQL stopped 1 s ago")
        time.sleep(max(0.0, args.down_s - 1.0))
        probe(srv, key, f"PostgreSQL stopped {args.down_s:.0f} s ago")
        started = time.monotonic()
        cluster.ctl("start")
        started_in = time.monotonic() - started
        deadline = started + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(srv.base + "/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)  # another process reconnecting: nothing to await
        print(f"ready again {time.monotonic() - started:.1f} s after pg_ctl start (which took {started_in:.1f} s)")
        probe(srv, key, "PostgreSQL back")
    finally:
        print(f"hub exit code {srv.stop()}")
        with contextlib.suppress(subprocess.CalledProcessError):
            cluster.ctl("stop")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
