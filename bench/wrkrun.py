"""wrk, closed loop: requests/s and latency percentiles of one URL for a bounded duration."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

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


def require_wrk() -> None:
    if shutil.which("wrk") is None:
        raise WrkError("wrk is not installed: run ./scripts/install-bench-tools")


def wrk(url: str, duration: float, connections: int = 32, headers: dict[str, str] | None = None) -> WrkResult:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s", "--latency"]
    for name, value in (headers or {}).items():
        cmd += ["-H", f"{name}: {value}"]
    proc = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=duration + 30)
    out = proc.stdout
    if proc.returncode != 0 or "Requests/sec" not in out:
        raise WrkError(f"wrk {url} failed ({proc.returncode}): {proc.stderr.strip() or out.strip()}")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise WrkError(f"{url}: {bad.group(1)} non-2xx responses")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if errors and any(int(n) for n in errors.groups()[:3]):
        raise WrkError(f"{url}: socket errors {errors.group(0)}")
    return WrkResult(
        rps=float(_find(r"Requests/sec:\s+([\d.]+)", out)),
        p50_ms=to_ms(_find(r"\s50%\s+([\d.]+\w+)", out)),
        p99_ms=to_ms(_find(r"\s99%\s+([\d.]+\w+)", out)),
        requests=int(_find(r"(\d+) requests in", out)),
        output=out,
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
