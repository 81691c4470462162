"""Bytes a client downloads per coding, and the CPU each data version costs to compress (issue 13.3), in process.

    .venv/bin/python -m bench.compression_cost [--repeat 20] [--json]

A real `Hub` (bench/instructions.py) answers, through the Granian adapter, `GET /api/v1/quotes`,
`/api/v1/kline/brent`, `/openapi.json` and `/api/market` with Accept-Encoding absent, `gzip` and `br`:
bytes of each body. Then, per data version, what the pipeline does once for a body it remembers: the
identity ETag (BLAKE2b of the body) and each compression (gzip level 6, brotli quality 5), best of
`--repeat` in this process's CPU time. The hot path itself does not change: a remembered coding is one
dict lookup (bench/instructions.py counts the instructions).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.instructions import Proto, Scope, build  # noqa: E402

PATHS = ("/api/v1/quotes", "/api/v1/kline/brent", "/openapi.json", "/api/market")


def fetch(adapter: Any, path: str, secret: str, accept: str | None) -> Proto:
    headers = {"x-service-key": secret}
    if accept:
        headers["accept-encoding"] = accept
    proto = Proto()
    coro = adapter.__rsgi__(Scope(path, headers), proto)
    with contextlib.suppress(StopIteration):  # nothing awaits: one send runs the request
        coro.send(None)
    return proto


def best_ms(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best * 1000


def measure(repeat: int) -> dict[str, dict[str, float]]:
    from server.api.core.encoding import compress

    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-coding-") as tmp:
        _, adapter, secret = build(Path(tmp))
        for path in PATHS:
            identity = fetch(adapter, path, secret, None)
            if identity.status != 200:
                raise SystemExit(f"{path}: {identity.status}")
            body = identity.body
            row = {"identity_bytes": len(body)}
            for coding in ("gzip", "br"):
                got = fetch(adapter, path, secret, coding)
                row[f"{coding}_bytes"] = len(got.body)
                row[f"{coding}_ms"] = best_ms(lambda c=coding, b=body: compress(b, c), repeat)  # type: ignore[misc]
            row["etag_ms"] = best_ms(lambda b=body: hashlib.blake2b(b, digest_size=16).hexdigest(), repeat)  # type: ignore[misc]
            out[path] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.repeat)
    if args.json:
        print(json.dumps(figures))
        return 0
    print("| body | identity | gzip (ms per version) | br (ms per version) | ETag ms |")
    print("|---|---|---|---|---|")
    for path, r in figures.items():
        print(f"| {path} | {r['identity_bytes']:,} B | {r['gzip_bytes']:,} B ({r['gzip_ms']:.2f} ms) | "
              f"{r['br_bytes']:,} B ({r['br_ms']:.2f} ms) | {r['etag_ms']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
