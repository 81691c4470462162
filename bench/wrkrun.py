"""wrk, closed loop: requests/s and latency percentiles of one URL for a bounded duration."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


class WrkError(RuntimeError):
    """wrk failed, or the server answered something other than 2xx."""


@dataclass(frozen=True, slots=True)
class WrkResult:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    output: str
    # us of the server's CPU (user + system, all its threads, from /proc/<pid>/stat) per request; nan if unknown
    server_us: float = float("nan")


def pin(pid: int, cpus: set[int]) -> None:
    """Pin every thread of `pid` (threads it starts later inherit the mask)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that just ended
            os.sched_setaffinity(int(task.name), cpus)


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (every thread), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def require_wrk() -> None:
    if shutil.which("wrk") is None:
        raise WrkError("wrk is not installed: run ./scripts/install-bench-tools")


def wrk(url: str, duration: float, connections: int = 32, headers: dict[str, str] | None = None,
        cpu: int | None = None, server_pid: int | None = None) -> WrkResult:
    """`cpu`: pin wrk to that core; `server_pid`: also report the server's CPU us per request."""
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s", "--latency"]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    for name, value in (headers or {}).items():
        cmd += ["-H", f"{name}: {value}"]
    before = cpu_seconds(server_pid) if server_pid else 0.0
    proc = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=duration + 30)
    used = cpu_seconds(server_pid) - before if server_pid else float("nan")
    out = proc.stdout
    if proc.returncode != 0 or "Requests/sec" not in out:
        raise WrkError(f"wrk {url} failed ({proc.returncode}): {proc.stderr.strip() or out.strip()}")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise WrkError(f"{url}: {bad.group(1)} non-2xx responses")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if errors and any(int(n) for n in errors.groups()[:3]):
        raise WrkError(f"{url}: socket errors {errors.group(0)}")
    requests = int(_find(r"(\d+) requests in", out))
    return WrkResult(
        rps=float(_find(r"Requests/sec:\s+([\d.]+)", out)),
        p50_ms=to_ms(_find(r"\s50%\s+([\d.]+\w+)", out)),
        p99_ms=to_ms(_find(r"\s99%\s+([\d.]+\w+)", out)),
        requests=requests,
        output=out,
        server_us=used / requests * 1e6 if requests else float("nan"),
    )


def _find(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    if match is None:
        raise WrkError(f"unexpected wrk output (no {pattern!r}):\n{text}")
    return match.group(1)


def to_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise WrkError(f"unexpected wrk duration {text!r}")
    return float(match.group(1)) * _UNITS_MS[match.group(2)]
