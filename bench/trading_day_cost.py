"""What a tick's trading day costs, measured in process (no sockets, no runtime).

    taskset -c 0 .venv/bin/python -m bench.trading_day_cost [--number N] [--repeat R]

Prints nanoseconds of this process's CPU time per tick (best of R repeats of N ticks, so
other load on the machine only ever makes a figure worse), over N tick stamps spread
through a 60-day span of a ZCE methanol clock (night sessions, weekends, the National
Day holiday; the lookup tables are warm, as they are after a feed's first tick of a month):

- `dict_get`: a plain ``dict.get`` of an int key in a dict of the same size (the floor);
- `dict_get_call`: the same ``dict.get`` of ``ts // 3_600_000`` inside a one-line Python function,
  i.e. a dictionary lookup per tick as a tick path written in Python pays it;
- `trading_day`: ``VenueClock.trading_day(ts_ms)`` (floor division, dict.get, class check;
  about 1 in 3,600 ticks lands in an hour holding a close and bisects);
- `bucket_ts`: ``VenueClock.bucket_ts(ts_ms)`` (the closing-tick rule for intraday buckets);
- `loop`: the loop alone (subtracted from the three above);
- `state_weekdays` / `state_venues`: ``MarketState.apply`` of batches of 10 ticks (the whole market state's tick
  path: daily and intraday candles, prices, seqs, change) without venue clocks (the old weekday rule) and with
  them (each row on its venue's trading day, SPEC 16); their difference is what the venues cost a tick.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from server.market.venues.book import VenueBook
from server.market.venues.tick_tables import HOUR_MS


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _best(run: Callable[[], None], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time_ns()
        run()
        best = min(best, time.process_time_ns() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    clock = VenueBook.load().for_instrument("methanol")
    start = int(datetime(2026, 9, 1, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()) * 1000
    step = 60 * 86_400_000 // args.number
    stamps = [start + i * step + (i * 7919) % 1000 for i in range(args.number)]
    for ts in stamps:  # warm the tables, as a running feed has them
        clock.trading_day(ts)
        clock.bucket_ts(ts)
    plain = {hour: hour for hour in range(start // HOUR_MS - 800, start // HOUR_MS + 60 * 24 + 800)}
    hours = [ts // HOUR_MS for ts in stamps]
    lookup, bucket, get = clock.trading_day, clock.bucket_ts, plain.get

    def loop() -> None:
        for _ in stamps:
            pass

    def dict_get() -> None:
        for hour in hours:
            get(hour)

    def one_get(ts: int, _get: Callable[[int], object] = get, _hour: int = HOUR_MS) -> object:
        return _get(ts // _hour)

    def dict_get_call() -> None:
        for ts in stamps:
            one_get(ts)

    def trading_day() -> None:
        for ts in stamps:
            lookup(ts)

    def bucket_ts() -> None:
        for ts in stamps:
            bucket(ts)

    base = _best(loop, args.repeat)
    print(f"cpu: {_cpu_model()}; python {platform.python_version()}; {args.number:,} ticks, best of {args.repeat}")
    runs = (("dict_get", dict_get), ("dict_get_call", dict_get_call), ("trading_day", trading_day),
            ("bucket_ts", bucket_ts))
    for name, run in runs:
        print(f"{name:14s} {(_best(run, args.repeat) - base) / args.number:7.1f} ns/tick")
    print(f"{'loop':14s} {base / args.number:7.1f} ns/tick (subtracted)")
    for name, clocks in (("state_weekdays", False), ("state_venues", True)):
        batches = _state_batches(stamps[: args.number // 5])
        state = _state(batches[0][0].ts, clocks)
        n = sum(len(b) for b in batches)
        print(f"{name:14s} {_best(lambda st=state, bs=batches: [st.apply(b) for b in bs], args.repeat) / n:7.1f}"
              " ns/tick")


def _state_batches(stamps: list[int]) -> list[list[Any]]:
    """Ticks of every instrument in stamp order, 10 to a batch (prices wander, volume 1)."""
    from server.market.tick import Tick

    out: list[list[Any]] = []
    for i in range(0, len(stamps), 10):
        out.append([Tick((i + k) % 49, 100.0 + ((i + k) % 13) * 0.01, stamps[i + k] / 1000, 1.0)
                    for k in range(min(10, len(stamps) - i))])
    return out


def _state(first: float, clocks: bool) -> Any:
    from server.market.candles.daily import CandleBook
    from server.market.candles.trading_axis import VenueAxis
    from server.market.catalogue import default_catalogue
    from server.market.state import MarketState

    cat = default_catalogue()
    book = VenueBook.load()
    row_clocks = [book.for_instrument(i.id) for i in cat.instruments] if clocks else []
    n = len(cat.instruments)
    candles = CandleBook(n, 120, VenueAxis([c.days for c in row_clocks])) if clocks else CandleBook(n, 120)
    state = MarketState(cat, candles, demo=False, epoch="bench", clocks=row_clocks)
    state.roll(first)
    return state


if __name__ == "__main__":
    main()
