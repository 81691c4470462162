"""User-space instructions per request of a whole server process, its runtime's Rust side included.

    .venv/bin/python -m bench.process_instructions --runtime robyn      # our server on Robyn
    .venv/bin/python -m bench.process_instructions --runtime granian    # ... on Granian
    .venv/bin/python -m bench.process_instructions --runtime robyn --count 2000 --paths quotes,static

`bench/instructions.py` counts our Python in process; this counts what the core pays per request in
user space: the server runs under valgrind's callgrind (`market-server serve --bench-static`, the demo
feed ticking once a minute so the answers stay remembered), each path gets `--count` sequential
keep-alive requests from one client on 127.0.0.1, and the instructions are read between a zeroed
counter and a dump (`callgrind_control`), so start-up and the other paths cancel out. The kernel's
share (the socket writes) is not counted, and valgrind counts `rep movsb` once per byte, so body copies
look dearer than they run: the figures are also given without glibc's memcpy/memmove, and the
ratio of a path to the static route (which serves the quotes body) is read from those.

Instruction counts do not depend on the machine's load or clock: the ratios to the static route stay put
from day to day where the wall-clock ratios of `bench/run` move by 0.1 (bench/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COPIES = ("memcpy", "memmove")  # glibc's copy routines: counted per byte by valgrind (rep movsb)
START_S = 240.0  # start-up under valgrind takes tens of seconds


@dataclass(slots=True)
class Count:
    total: float  # user-space instructions per request
    copies: float  # of which glibc's memcpy/memmove

    @property
    def net(self) -> float:
        return self.total - self.copies


def _get(conn: http.client.HTTPConnection, path: str, headers: dict[str, str], times: int) -> None:
    for _ in range(times):
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: status {response.status}")


def _control(pid: int, command: str, conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> int:
    """`callgrind_control <command> <pid>`: valgrind reads the command only while the process runs code, so
    requests to `path` are sent until it is done (at most 1,000). Returns how many were sent."""
    ctl = subprocess.Popen(["callgrind_control", command, str(pid)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    sent = 0
    while ctl.poll() is None and sent < 1000:
        _get(conn, path, headers, 1)
        sent += 1
        with contextlib.suppress(subprocess.TimeoutExpired):
            ctl.wait(0.2)
    if ctl.wait(30) != 0:
        raise RuntimeError(f"callgrind_control {command} failed")
    return sent


def _self_costs(dump: Path) -> tuple[int, int]:
    """(all instructions, those of glibc's copy routines) of one callgrind dump (uncompressed names)."""
    total = copies = 0
    in_copy = skip = False
    with dump.open() as fh:
        for line in fh:
            head = line[:1]
            if head.isdigit() or head in "+-*":
                if skip:  # the line after calls= is the call's inclusive cost, not the function's own
                    skip = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    total += int(parts[1])
                    if in_copy:
                        copies += int(parts[1])
            elif line.startswith("fn="):
                in_copy = any(name in line for name in COPIES)
            elif line.startswith("calls="):
                skip = True
    return total, copies


def count_requests(cmd: Sequence[str], port: int, paths: dict[str, str], count: int,
                   headers: dict[str, str] | None = None, env: dict[str, str] | None = None,
                   ready: str | None = None) -> dict[str, Count]:
    """Run `cmd` (a server listening on 127.0.0.1:`port`) under callgrind and count each path's requests."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed: run ./scripts/install-bench-tools")
    headers = headers or {}
    figures: dict[str, Count] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pcg-") as tmp:
        out = Path(tmp) / "cg.out"
        log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--compress-strings=no", "--compress-pos=no",
                                 f"--callgrind-out-file={out}", *cmd], stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})}, cwd=ROOT, start_new_session=True)
        try:
            conn = _connect(port, ready or next(iter(paths.values())), headers, proc, Path(tmp) / "server.log")
            for name, path in paths.items():
                _get(conn, path, headers, 200)  # warm: the remembered answer, the allocator's pools
                _control(proc.pid, "-z", conn, path, headers)  # the pokes before the zero are not counted
                _get(conn, path, headers, count)
                before = set(Path(tmp).glob("cg.out.*"))
                sent = count + _control(proc.pid, "-d", conn, path, headers)  # (the last may be counted in part)
                new = sorted(set(Path(tmp).glob("cg.out.*")) - before)
                if len(new) != 1:
                    raise RuntimeError(f"expected one new dump, found {len(new)}")
                text = new[0].read_text()
                match = re.search(r"^summary:\s*(\d+)", text, re.MULTILINE)
                if match is None:
                    raise RuntimeError(f"no summary line in {new[0]}")
                total, copies = _self_costs(new[0])
                # the summary is the exact total; the parse gives the copy routines' share of it
                figures[name] = Count(int(match.group(1)) / sent, int(match.group(1)) * copies / max(total, 1) / sent)
            conn.close()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # Robyn ignores SIGTERM in single-process mode (issue 1324)
            proc.wait(10)
            log.close()
    return figures


def _connect(port: int, path: str, headers: dict[str, str], proc: subprocess.Popen[bytes],
             log: Path) -> http.client.HTTPConnection:
    deadline = time.monotonic() + START_S
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            _get(conn, path, headers, 1)
            return conn
        except (ConnectionError, OSError, RuntimeError, http.client.HTTPException):
            conn.close()
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start under valgrind: {log.read_text()[-2000:]}") from None
            time.sleep(0.5)  # polling a port that is not open yet: nothing to await


def our_server(runtime: str, paths: list[str], count: int) -> dict[str, Count]:
    from bench.suite import OUR_PATHS
    from tests.conftest import free_port, run_cli

    with tempfile.TemporaryDirectory(prefix="bench-pcg-data-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        out = run_cli(data, "keys", "create", "--plan", "enterprise", "--rate", "1000000000", "--json")
        if out.returncode != 0:
            raise SystemExit(f"keys create failed: {out.stderr}")
        key = json.loads(out.stdout)["key"]
        port, ws_port = free_port(), free_port()
        cmd = [sys.executable, "-m", "server", "serve", "--runtime", runtime, "--bench-static", "--port", str(port),
               "--ws-port", str(ws_port), "--data-dir", str(data), "--tick-interval-ms", "60000",
               "--market-refresh-s", "3600", "--public-rate", "1000000000", "--log-level", "warning"]
        return count_requests(cmd, port, {p: OUR_PATHS[p] for p in paths}, count, {"X-SERVICE-Key": key},
                              ready=OUR_PATHS["static"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", choices=("granian", "robyn"), default="robyn")
    parser.add_argument("--paths", default="static,quotes,quote,kline,market,news",
                        help="names of bench/suite.py's OUR_PATHS")
    parser.add_argument("--count", type=int, default=2000, help="requests per path")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    figures = our_server(args.runtime, paths, args.count)
    static = figures.get("static")
    for name, c in figures.items():
        ratio = f"  static/this {static.net / c.net:.2f}" if static is not None else ""
        print(f"{args.runtime} {name:8} {c.total:>10,.0f} instructions per request ({c.net:>9,.0f} without "
              f"memcpy){ratio}")
    if args.json:
        print(json.dumps({"runtime": args.runtime, "count": args.count,
                          "figures": {n: {"total": c.total, "copies": c.copies} for n, c in figures.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
