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
    valgrind --tool=callgrind .venv/bin/python bench/fanout_core.py --batches 300   # instructions, not noise

`--tree` measures another checkout with this same script (it also drives the StreamCore of before issue 33's
split, whose methods were on the core itself), so a change is compared at the same CPU, round by round.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path
from typing import Any

BATCHES = 3000


def measure(conns: int, batches: int = BATCHES) -> float:
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
    n = len(catalogue.instruments)
    state = MarketState(catalogue, CandleBook(n), demo=False, epoch="e")
    key = ApiKey("k1", "enterprise", None, None, 0.0, None)
    parts = _parts(stream_core, state, catalogue, key, Gcra(), Registry(), tick_frame)
    connect, admit, open_, on_ticks, on_clock = parts
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
    for b in range(batches):
        ts = start + b * 0.061
        ticks = []
        for row in rnd.sample(range(n), rnd.randint(5, 20)):
            prices[row] = round(prices[row] + rnd.choice((-0.01, 0.01)), 2)
            ticks.append(Tick(row, prices[row], ts, 1))
        applied = state.apply(ticks)
        t0 = time.process_time()
        on_ticks(applied)
        on_clock(ts)
        cpu += time.process_time() - t0
        frames += len(applied) * conns
    return cpu * 1e9 / frames if frames else float("nan")  # --conns 0: the batches' cost without sessions


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
    parser.add_argument("--batches", type=int, default=BATCHES, help="fewer under callgrind")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout whose server/ to measure (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    ns = measure(args.conns, args.batches)
    print(f"fan-out in process, {args.conns} sessions ({args.tree}): {ns:.2f} ns CPU per delivered frame")


if __name__ == "__main__":
    main()
