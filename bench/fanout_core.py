"""The stream core's fan-out in process: Python CPU per delivered tick frame, without the kernel's send path.

One `StreamCore` over a real `MarketState` (49 instruments, candle frames on, heartbeats every 5 s), N sessions
subscribed to everything whose write is a C no-op (`deque(maxlen=0).append`), and 3,000 tick batches of 5-20
ticks (61 ms apart in tick time, as `ws_fanout.py`'s 200 ticks/s): each batch is applied to the state outside the
timer, then `fanout.on_ticks` and the stream clock's `on_clock` run inside it (`time.process_time`). What is left
is the core's own work per frame (framing once, joining per group, the loop of writes, heartbeats riding
batches, candle runs): the part a change to the stream's Python moves, which bench/ws_fanout.py's end-to-end
figure (mostly the kernel's send path) hides in its noise.

    taskset -c 0 .venv/bin/python bench/fanout_core.py              # 1,000 sessions
    taskset -c 0 .venv/bin/python bench/fanout_core.py --conns 5000
    taskset -c 0 .venv/bin/python bench/fanout_core.py --tree /tmp/base   # another checkout of the repository
    valgrind --tool=callgrind .venv/bin/python bench/fanout_core.py --batches 300   # the whole run under callgrind
    .venv/bin/python bench/fanout_core.py --instructions --tree /tmp/base   # instructions per frame, timed part only
    .venv/bin/python bench/fanout_core.py --instructions --contracts        # the 444 rows a hub serves (SPEC 19)

`--tree` measures another checkout with this same script (it also drives the StreamCore of before issue 33's
split, whose methods were on the core itself), so a change is compared at the same CPU, round by round.

`--instructions` runs the same under `valgrind --tool=callgrind` and counts only what the timer times (on_ticks and
on_clock run inside functools.reduce's C function, callgrind's --toggle-collect): instructions per delivered frame,
which other load on the machine does not move (the CPU-time figures on a shared 2-core machine move by 10-20%).
`--cache` adds callgrind's cache simulation (first- and last-level misses per frame: how cold the memory a frame
reads is, which the instruction count does not see).
`--contracts` measures the catalogue a hub serves (the 49 listed instruments and the 395 futures contracts, SPEC 19),
every session streaming every row (a new session streams the 49 listed ones; here each tick goes to every session,
as in the 49-row run, so the two figures compare the same work per frame at 9 times the rows): the default is the
49 listed instruments, which every tree has. The ticks stay 200 a second, 9 times fewer per row: `--dense` draws
rows / 49 times as many per batch (each row ticks as often as in the 49-row run, as a feed whose contracts tick).
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BATCHES = 3000


def measure(conns: int, batches: int = BATCHES, in_reduce: bool = False, contracts: bool = False,
            dense: bool = False) -> tuple[float, int]:
    """(ns CPU per delivered frame, frames delivered); ``in_reduce``: the timed calls inside functools.reduce (for
    callgrind's --toggle-collect)."""
    from server.core.keys import ApiKey
    from server.core.limits import Gcra
    from server.core.metrics import Registry
    from server.market.candles.daily import CandleBook
    from server.market.catalogue import default_catalogue
    from server.market.state import MarketState
    from server.market.tick import Tick
    from server.stream import core as stream_core
    from server.stream.protocol.messages import tick_frame

    catalogue = default_catalogue()
    if contracts:
        from server.market.contracts.rows import with_contracts
        from server.market.contracts.specs import load_products
        from server.market.venues.book import VenueBook

        catalogue = with_contracts(catalogue, load_products(), VenueBook.load(None), 1_800_000_000.0)
    n = len(catalogue.instruments)
    state = MarketState(catalogue, CandleBook(n), demo=False, epoch="e")
    key = ApiKey("k1", "enterprise", None, None, 0.0, None)
    parts = _parts(stream_core, state, catalogue, key, Gcra(), Registry(), tick_frame)
    connect, admit, open_, on_ticks, on_clock = parts
    streamed = set(getattr(catalogue, "listed_rows", range(n)))  # what a session streams until it subscribes
    if contracts:  # every session streams every row, contracts too: each tick goes to every session, as with 49
        connect.__self__.all_rows = streamed = frozenset(range(n))
    sink: Any = collections.deque(maxlen=0).append
    for _ in range(conns):
        session = connect(sink, 0.0)
        admit(session, "/ws/quotes?key=k")
        open_(session)
    rnd = random.Random(1)
    prices = [80.0 + row for row in range(n)]
    start = 1_800_000_000.0
    cpu = 0.0
    frames = 0
    gc.collect()
    gc.freeze()  # the state's objects out of the collector's reach: a full collection is not part of a frame

    def timed(_a: object, _b: object) -> None:
        on_ticks(applied)
        on_clock(ts)
    for b in range(batches):
        ts = start + b * 0.061
        ticks = []
        k = rnd.randint(5, 20)
        for row in rnd.sample(range(n), round(k * n / 49) if dense else k):
            prices[row] = round(prices[row] + rnd.choice((-0.01, 0.01)), 2)
            ticks.append(Tick(row, prices[row], ts, 1))
        applied = state.apply(ticks)
        t0 = time.process_time()
        if in_reduce:
            functools.reduce(timed, (None, None))
        else:
            on_ticks(applied)
            on_clock(ts)
        cpu += time.process_time() - t0
        frames += sum(t.row in streamed for t in applied) * conns
    # --conns 0: the batches' cost without sessions
    return (cpu * 1e9 / frames if frames else float("nan")), frames


def instructions(tree: Path, conns: int, batches: int, contracts: bool, dense: bool,
                 cache: bool = False) -> tuple[float, int, int, dict[str, int]]:
    """(instructions per delivered frame, instructions, frames, every event counted) of the timed part, under
    callgrind; ``cache``: its cache simulation too (misses of the first level and of the last, read and write)."""
    with tempfile.TemporaryDirectory(prefix="bench-fanout-cg-") as tmp:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out", "--dump-line=no",
               "--toggle-collect=functools_reduce", *(["--cache-sim=yes"] if cache else []),
               sys.executable, __file__, "--child", "--tree", str(tree), "--conns", str(conns),
               "--batches", str(batches)]
        cmd += (["--contracts"] if contracts else []) + (["--dense"] if dense else [])
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"valgrind failed ({proc.returncode}): {proc.stderr[-2000:]}")
        total = re.search(r"Collected\s*:\s*([\d ]+)", proc.stderr)
        names = re.search(r"Events\s*:\s*([\w ]+)", proc.stderr)
        frames = re.search(r"frames=(\d+)", proc.stdout)
        if total is None or frames is None:
            raise SystemExit(f"no instruction total or frame count: {proc.stdout[-500:]} {proc.stderr[-2000:]}")
        counts = [int(x) for x in total.group(1).split()]
        events = dict(zip(names.group(1).split() if names else ["Ir"], counts, strict=False))
        ir, n = counts[0], int(frames.group(1))
        return ir / n, ir, n, events


def _parts(stream_core: Any, state: Any, catalogue: Any, key: Any, buckets: Any, registry: Any,
           tick_frame: Any) -> tuple[Any, ...]:
    """(connect, admit, open, on_ticks, on_clock) of the core in this tree, after issue 33's split or before."""
    try:
        from server.stream.delivery.candle_frames import CandleFrames
        from server.stream.delivery.resume_history import TickHistory
        from server.stream.limits import StreamLimits
        from server.stream.metrics import StreamMetrics
    except ImportError:  # before the split: one StreamCore with every method, building its own candle frames
        lim = stream_core.StreamLimits(max_conn={"enterprise": 10**6}, heartbeat_s=5.0)
        history = __import__("server.stream.delivery.resume_history", fromlist=["TickHistory"]).TickHistory
        core = stream_core.StreamCore(state, catalogue, "E", lim, stream_core.StreamMetrics(registry, lambda: 0.0),
                                      lambda s: key, buckets, history(len(catalogue.instruments), tick_frame))
        return core.connect, core.admit, core.open, core.on_ticks, core.on_clock
    lim = StreamLimits(max_conn={"enterprise": 10**6}, heartbeat_s=5.0)
    try:  # the console's usage metering (issue 32) counts every keyed session's messages: on, as served
        from server.core.usage import UsageMeter
        metered = {"meter": UsageMeter()}
    except ImportError:
        metered = {}
    core = stream_core.StreamCore(state, catalogue, "E", lim, StreamMetrics(registry, lambda: 0.0), lambda s: key,
                                  buckets, TickHistory(len(catalogue.instruments), tick_frame), CandleFrames(state),
                                  **metered)
    s = core.sessions
    return s.connect, s.admit, s.open, core.fanout.on_ticks, core.schedule.on_clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conns", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=BATCHES, help="fewer under callgrind (default 300 there)")
    parser.add_argument("--instructions", action="store_true", help="callgrind: instructions per delivered frame")
    parser.add_argument("--contracts", action="store_true", help="the 444 rows with the futures contracts")
    parser.add_argument("--dense", action="store_true", help="ticks per batch times rows / 49 (each row as often)")
    parser.add_argument("--cache", action="store_true", help="--instructions with callgrind's cache simulation")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout whose server/ to measure (default: this one)")
    args = parser.parse_args()
    rows = ("444 rows" if args.contracts else "49 rows") + (", ticks x rows / 49" if args.dense else "")
    if args.instructions:
        batches = args.batches if args.batches != BATCHES else 300
        per, ir, frames, events = instructions(args.tree.resolve(), args.conns, batches, args.contracts, args.dense,
                                               args.cache)
        print(f"fan-out in process, {args.conns} sessions, {rows}, {batches} batches ({args.tree}): "
              f"{per:.1f} instructions per delivered frame ({ir:,} / {frames:,})")
        if args.cache:
            print("per frame: " + ", ".join(f"{k} {v / frames:.3f}" for k, v in events.items()))
        return
    sys.path.insert(0, str(args.tree.resolve()))
    ns, frames = measure(args.conns, args.batches, args.child, args.contracts, args.dense)
    if args.child:
        print(f"frames={frames}")
        return
    print(f"fan-out in process, {args.conns} sessions, {rows} ({args.tree}): {ns:.2f} ns CPU per delivered frame")


if __name__ == "__main__":
    main()
