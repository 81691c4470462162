"""Intraday candles in process: cost per tick of the 4 rings, building a series, a range query, seeding the demo,
memory.

    .venv/bin/python bench/intraday.py
    .venv/bin/python bench/intraday.py --callgrind     # instructions per range query (valgrind), load-independent

No server and no network: the figures are CPU time of the code paths themselves, best of several rounds
(the machine is shared; the best round is the one least disturbed), and for the range query the median and p99
of many. ``--callgrind`` runs the range query's handler (body cache missed every time) N and N + DELTA times
under callgrind and prints (instructions(N + DELTA) - instructions(N)) / DELTA: start-up cancels out.
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server.api.core.cache import VersionedCache
from server.api.core.types import Request
from server.api.market.keyed import MarketApi
from server.market.candles.intraday import IntradayBook
from server.market.catalogue import default_catalogue
from server.market.inventory import InventoryBook
from server.market.state import build_demo_state
from server.market.timefmt import TZ

ROUNDS = 5


def best(fn, rounds: int = ROUNDS) -> float:  # type: ignore[no-untyped-def]
    out = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    cat = default_catalogue()
    n = len(cat.instruments)
    now = datetime(2026, 11, 18, 10, 30, tzinfo=TZ).timestamp()  # a Wednesday
    state, feed = build_demo_state(cat, 42, now)
    ticks = [(t.row, t.price, t.volume, t.ts) for i in range(4000) for t in feed.next_batch(now + i * 0.25, 0.25)]

    def apply_all() -> None:
        book = IntradayBook(n)
        for row, price, volume, ts in ticks:
            book.apply(row, price, volume, ts, 0)

    per_tick = best(apply_all) / len(ticks) * 1e6
    print(f"apply, 4 rings: {per_tick:.2f} us per tick ({len(ticks):,} demo ticks)")
    for limit in (300, 1000):
        cost = best(lambda limit=limit: orjson.dumps(state.kline_intraday(0, "1m", limit)), 20) * 1e3
        kept = best(lambda limit=limit: state.kline_intraday_json(0, "1m", limit), 20) * 1e3
        print(f"series of {limit} buckets: {kept:.3f} ms from the kept candle texts (served), {cost:.2f} ms as dicts "
              "+ orjson (once per data version and key)")
    range_query(state, cat)
    for label, when in (("Wednesday 10:30", now), ("Monday 23:00", datetime(2026, 11, 23, 23, tzinfo=TZ).timestamp())):
        print(f"demo seed (daily + intraday history), {label}: "
              f"{best(lambda when=when: build_demo_state(cat, 42, when), 3) * 1e3:.0f} ms")
    print(f"memory: {state.intraday.nbytes_per_instrument():,} bytes per instrument, "
          f"{state.intraday.nbytes_per_instrument() * n / 2**20:.1f} MiB for {n} instruments")


def percentiles(fn, n: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(median, p99) of ``n`` calls of ``fn``, in milliseconds, in one run (the ratio of two rows is not load)."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times) * 1e3, times[min(n - 1, int(n * 0.99))] * 1e3


def range_miss(state, cat):  # type: ignore[no-untyped-def]
    """One range query of the first instrument's newest 1,000 1m candles through ``MarketApi.kline``, its body
    built again (a fresh body cache: what a new data version does)."""
    api = MarketApi(state, InventoryBook(cat, 42), VersionedCache())
    first = state.kline_intraday(0, "1m", 1000)[0]["t"]
    inst = cat.instruments[0].id
    query = f"interval=1m&from={first.replace('+', '%2B')}&limit=1000"

    def miss() -> None:
        api.cache = VersionedCache()  # every round builds the body again
        resp = api.kline(Request("GET", f"/api/v1/kline/{inst}", query, path_params={"id": inst}))
        assert resp.body.count(b'"t"') == 1000

    return miss


def callgrind_child(count: int) -> None:
    import gc

    cat = default_catalogue()
    state, _ = build_demo_state(cat, 42, datetime(2026, 11, 18, 10, 30, tzinfo=TZ).timestamp())
    miss = range_miss(state, cat)
    for _ in range(20):
        miss()
    gc.collect()
    gc.freeze()
    for _ in range(count):
        miss()


def callgrind(base: int = 200, delta: int = 1000) -> None:
    import os
    import re
    import subprocess
    import tempfile

    def instructions(count: int) -> int:
        with tempfile.TemporaryDirectory(prefix="bench-cg-") as tmp:
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", sys.executable,
                   str(Path(__file__).resolve()), "--child", str(count)]
            env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc"}
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600, check=True)
            match = re.search(r"Collected\s*:\s*(\d+)", proc.stderr) or re.search(r"refs:\s*([\d,]+)", proc.stderr)
            assert match is not None, proc.stderr[-2000:]
            return int(match.group(1).replace(",", ""))

    per = (instructions(base + delta) - instructions(base)) / delta
    print(f"range query, 1,000 1m candles (handler, body cache miss): {per:,.0f} instructions (callgrind)")


def range_query(state, cat) -> None:  # type: ignore[no-untyped-def]
    """SPEC 14's target: a range query of 1,000 1m candles under 1 ms of server time, on a miss of the response
    cache (a new data version: every tick batch is one). Rows: the handler (two binary searches on the ring, the
    candles' kept texts joined, one orjson of the envelope); the same with the texts dropped first (the first query
    of an instrument and interval after a start: each of the 1,000 candles formatted and dumped once); the whole
    RSGI path (Request, pipeline, key, GCRA, handler, ETag, headers; identity coding) with the data version bumped
    before every request, so neither the pipeline's remembered answer nor the body cache can answer it."""
    miss = range_miss(state, cat)
    ring = state.intraday.rings["1m"]

    def cold() -> None:
        ring._texts[0].clear()
        ring._newest_text[0] = None
        miss()

    miss()
    med, p99 = percentiles(miss, 5000)
    print(f"range query, 1,000 1m candles (from + limit, handler, body cache miss): median {med:.3f} ms, "
          f"p99 {p99:.3f} ms (target < 1 ms, SPEC 14)")
    med, p99 = percentiles(cold, 300)
    print(f"  the same, candle texts dropped first (first query after a start): median {med:.3f} ms, p99 {p99:.3f} ms")
    whole_path()


def whole_path() -> None:
    import asyncio
    import tempfile

    from bench.instructions import Proto, Scope, build

    with tempfile.TemporaryDirectory(prefix="bench-intraday-") as tmp:
        hub, adapter, secret = build(Path(tmp))
        state = hub.state
        row = state.catalogue.index["brent"]
        start = state.kline_intraday(row, "1m", 1000)[0]["t"]
        query = f"interval=1m&from={start.replace('+', '%2B')}&limit=1000"
        scope = Scope("/api/v1/kline/brent", {"host": "127.0.0.1:8000", "x-service-key": secret,
                                              "accept": "*/*", "user-agent": "bench"}, query)
        proto = Proto()
        loop = asyncio.get_event_loop()

        def one() -> None:
            state.version += 1  # a new data version: the answer is built again
            loop.run_until_complete(adapter.__rsgi__(scope, proto))
            assert proto.status == 200 and proto.body.count(b'"t"') == 1000, proto.status

        one()
        med, p99 = percentiles(one, 3000)
        print(f"  the whole RSGI path (pipeline + handler, version bumped per request): median {med:.3f} ms, "
              f"p99 {p99:.3f} ms")


if __name__ == "__main__":
    if "--child" in sys.argv:
        callgrind_child(int(sys.argv[sys.argv.index("--child") + 1]))
    elif "--callgrind" in sys.argv:
        callgrind()
    else:
        main()
