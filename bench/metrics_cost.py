"""What the metrics cost per request, measured in process (no sockets, no runtime).

    .venv/bin/python -m bench.metrics_cost [--number N] [--repeat R]

Prints, in microseconds of this process's CPU time per call (best of R repeats
of N calls, so other load on the machine only ever makes a figure worse):

- `handle`: `App.handle` for a keyed `GET /api/v1/quotes` whose body is cached
  (the hot path: request id, routing, key lookup, GCRA, cached bytes, CORS and
  the two metric updates);
- `metrics`: the two metric updates `App.handle` makes per request alone
  (`requests.inc` with cached labels, `latency.observe`);
- `native`: the same two updates made with prometheus_client's own metric
  types through cached labelled children (`Counter.labels(...).inc()`,
  `Histogram.labels(...).observe()`), for comparison: the design we did not take;
- `render`: one `/metrics` exposition with the HTTP series filled.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import timeit
from contextlib import nullcontext
from pathlib import Path

from server.api.core.pipeline import App, build_app
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.config import Settings
from server.core.limits import Gcra
from server.core.metrics import LATENCY_BUCKETS, HttpMetrics, Registry
from server.core.usage import UsageMeter
from server.engine.memory import MemoryLimiter
from server.store.accounts.key_cache import KeyCache
from server.store.sql.db import open_db
from server.store.sql.sqlite_repos import SqliteKeys
from server.store.sql.sqlite_sync import KeyRepo
from server.store.sql.storage import SqliteStorage

BODY = b'{"quotes":[]}' * 200  # the handler returns cached bytes, as the quotes endpoint does


def _app(data_dir: Path) -> tuple[App, Registry, str]:
    """The real pipeline (router, key cache over SQLite, GCRA, metrics) around one keyed route."""
    repo = KeyRepo(open_db(data_dir))
    _, secret = repo.create("enterprise", 1_000_000_000, "bench")
    router = Router()
    router.add("GET", "/api/v1/quotes", lambda req: Response(200, BODY), Access.KEYED, name="quotes")
    registry = Registry()
    keys = KeyCache(SqliteKeys(SqliteStorage(data_dir)), repo.active_by_hash())  # the key is cached, as in the hub
    buckets = Gcra()
    limiter = MemoryLimiter(buckets, time.time)
    return build_app(Settings(data_dir=data_dir), router, keys, HttpMetrics(registry), limiter, buckets, time.time,
                     nullcontext(), UsageMeter()), registry, secret


def measure(number: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="metrics-cost-") as tmp:
        app, registry, secret = _app(Path(tmp) / "data")
        headers = {"x-service-key": secret}

        def one_request() -> None:
            coro = app.handle(Request("GET", "/api/v1/quotes", "", headers, b"", "127.0.0.1"))
            try:  # noqa: SIM105 - contextlib.suppress would add its own cost to every measured call
                coro.send(None)  # the handler never awaits: run the coroutine to its return
            except StopIteration:
                pass

        one_request()
        labels = ((("route", "quotes"), ("status", "200")), (("route", "quotes"),))
        requests, latency = app.metrics.requests, app.metrics.latency

        def metric_calls() -> None:
            requests.inc(labels[0])
            latency.observe(0.0001234, labels[1])

        figures = {
            "handle": _best(one_request, number, repeat),
            "metrics": _best(metric_calls, number, repeat),
            "native": _best(_native_calls(), number, repeat),
            "render": _best(registry.render, max(1, number // 100), repeat),
        }
        app.keys.repo.storage.close()  # type: ignore[attr-defined]  # the SqliteKeys built in _app
        return figures


def _native_calls():  # type: ignore[no-untyped-def]
    from prometheus_client import CollectorRegistry
    from prometheus_client import Counter as NativeCounter
    from prometheus_client import Histogram as NativeHistogram

    registry = CollectorRegistry()
    requests = NativeCounter("requests_total", "x", ["route", "status"], registry=registry).labels("quotes", "200")
    latency = NativeHistogram("seconds", "x", ["route"], registry=registry, buckets=LATENCY_BUCKETS).labels("quotes")

    def calls() -> None:
        requests.inc()
        latency.observe(0.0001234)

    return calls


def _best(fn, number: int, repeat: int) -> float:  # type: ignore[no-untyped-def]
    # CPU time of this process: the other processes sharing the machine's cores do not count
    return min(timeit.repeat(fn, timer=time.process_time, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--number", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for name, us in measure(args.number, args.repeat).items():
        print(f"{name:8} {us:8.3f} us/call")


if __name__ == "__main__":
    main()
