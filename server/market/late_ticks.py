"""Whether a published tick would count toward its own buckets (SPEC 20's ingest, docs/ingest.md "Late ticks").

The market state's candle book only moves forward (server/market/state.py): a tick stamped before its instrument's
newest intraday bucket, before a bucket the stream sent as final (``IntradayRing.sealed``) or in a trading day
before the live one counts toward the newest bucket and the live daily candle, not toward its own minute and day.
That is the feed's rule, for a feed's few-seconds-late ticks; a dedicated data source's ticks published long after
their minute would land in another minute's bar (and another day's candle, and another day's 1m flat file) than its
ticks flat file puts them in. So the ingest routes refuse such a line with the reason ``misplaced`` gives, and keep
every tick that lands in its own buckets, late or not: a tick stamped at 10:00:30 published at 10:05 is taken when
nothing newer of its instrument was (its bar is then 10:00's, durably: the candle store keeps what the rings hold).
"""

from __future__ import annotations

from server.market.state import MarketState
from server.market.timefmt import iso


def misplaced(state: MarketState, row: int, ts: float, previous: float | None = None) -> str | None:
    """Why a tick of `row` at `ts` (epoch seconds) would not count toward its own buckets and trading day, or None
    when it would. `previous`: the time of the row's tick taken before it in the same batch (not applied yet)."""
    if not state.clocks or not len(state.candles):
        return None
    clock = state.clocks[row]
    ms = int(ts * 1000)
    day, live = clock.trading_day(ms), state.candles.live_day(row)
    if day < live:
        return (f"late tick: ts {iso(ts)} is in trading day {day}, before this instrument's live trading day {live} "
                "(a closed day's candles and files are not rewritten; ticks are taken in time order)")
    at = clock.bucket_ts(ms) / 1000
    before = None if previous is None else clock.bucket_ts(int(previous * 1000)) / 1000
    for name, ring in state.intraday.rings.items():
        start, sec = int(at // ring.seconds) * ring.seconds, ring.seconds
        newest = ring.newest_start(row) if day == live else None
        bound = max(ring.sealed[row], -(2**62) if newest is None else newest,
                    -(2**62) if before is None else int(before // sec) * sec)
        if start < bound:
            return (f"late tick: ts {iso(ts)} is before this instrument's newest {name} bar ({iso(bound)}), which it "
                    "would be counted in (a bar already published is not rewritten; ticks are taken in time order)")
    return None
