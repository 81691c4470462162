"""The resume history: each instrument's latest ticks, kept as the frames that were sent, in seq order.

One structure, two fill paths: every applied tick batch goes through `add` (the memory engine's
feed, and on the Redis engine every batch a hub applies from the tick stream), and a Redis hub
that starts also `add`s the stream's tail first, so it can serve resumes for ticks from before
it started. A resume (`replay`) is then one join of ready frames: nothing is serialised again.

Storage: per instrument, sealed chunks of `CHUNK` frames (one `bytes` each, plus an `array` of
end offsets) and one open chunk (a list of frames). Eviction drops whole sealed chunks.

Invariants:
- a row's held ticks are contiguous: seqs `first .. last` with no gap; a tick whose seq is not
  `last + 1` (a gap or a reset in the log) drops what was held and starts again from it;
- a row keeps at least `min_ticks` ticks, and every tick whose ts is within `min_age_s` of its
  newest tick, up to `max_ticks` (the memory bound): a chunk is dropped only when what stays
  still holds `min_ticks`, and it is entirely older than `min_age_s` or the row is over `max_ticks`;
- only `add` mutates. No I/O, no clock: tick timestamps are the only time it knows.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Sequence

from server.market.state import AppliedTick, MarketState
from server.market.tick import Tick

MIN_TICKS = 1000  # SPEC 7: at least the last 1,000 ticks ...
MIN_AGE_S = 600.0  # ... or 10 minutes per instrument, whichever is more
MAX_TICKS = 16_384  # the memory bound: ~1.8 MB of frames per instrument at ~110 bytes a tick
CHUNK = 64


class _Chunk:
    __slots__ = ("data", "ends", "newest_ts")

    def __init__(self, frames: list[bytes], newest_ts: float) -> None:
        self.data = b"".join(frames)
        ends = array("I")
        end = 0
        for frame in frames:
            end += len(frame)
            ends.append(end)
        self.ends = ends
        self.newest_ts = newest_ts

    def tail(self, skip: int) -> bytes:
        """The frames after the first `skip`."""
        return self.data[self.ends[skip - 1]:] if skip else self.data


class _Row:
    __slots__ = ("count", "first", "newest_ts", "open", "open_ts", "sealed")

    def __init__(self) -> None:
        self.sealed: deque[_Chunk] = deque()
        self.open: list[bytes] = []
        self.open_ts = float("-inf")  # newest ts in the open chunk
        self.newest_ts = float("-inf")
        self.first = 0  # seq of the oldest held tick (meaningless while count == 0)
        self.count = 0

    @property
    def last(self) -> int:
        return self.first + self.count - 1

    def clear(self) -> None:
        self.sealed.clear()
        self.open = []
        self.open_ts = self.newest_ts = float("-inf")
        self.count = 0


class TickHistory:
    def __init__(self, n_rows: int, encode: Callable[[AppliedTick], bytes], min_ticks: int = MIN_TICKS,
                 min_age_s: float = MIN_AGE_S, max_ticks: int = MAX_TICKS, chunk: int = CHUNK) -> None:
        if not 0 < chunk <= min_ticks < max_ticks - chunk:
            raise ValueError("need 0 < chunk <= min_ticks < max_ticks - chunk")
        self.encode = encode
        self.min_ticks, self.min_age_s, self.max_ticks, self.chunk = min_ticks, min_age_s, max_ticks, chunk
        self._rows = [_Row() for _ in range(n_rows)]

    # --- filling -----------------------------------------------------------------
    def add(self, ticks: Sequence[AppliedTick]) -> list[bytes]:
        """Record a batch (in apply order); returns each tick's frame, for the live fan-out to send."""
        frames = []
        for t in ticks:
            frame = self.encode(t)
            self._record(self._rows[t.row], t.seq, t.ts, frame)
            frames.append(frame)
        return frames

    def _record(self, r: _Row, seq: int, ts: float, frame: bytes) -> None:
        if r.count and seq != r.last + 1:
            r.clear()  # a gap or a reset: what was held no longer leads up to this tick
        if not r.count:
            r.first = seq
        r.open.append(frame)
        r.count += 1
        if ts > r.open_ts:
            r.open_ts = ts
        if ts > r.newest_ts:
            r.newest_ts = ts
        if len(r.open) >= self.chunk:
            r.sealed.append(_Chunk(r.open, r.open_ts))
            r.open, r.open_ts = [], float("-inf")
            self._evict(r)

    def _evict(self, r: _Row) -> None:
        horizon = r.newest_ts - self.min_age_s
        while r.sealed:
            oldest = r.sealed[0]
            n = len(oldest.ends)
            if r.count - n < self.min_ticks or (oldest.newest_ts >= horizon and r.count <= self.max_ticks):
                return
            r.sealed.popleft()
            r.first += n
            r.count -= n

    # --- reading -----------------------------------------------------------------
    def held(self, row: int) -> tuple[int, int] | None:
        """(first, last) seq held for the row, or None when it holds nothing."""
        r = self._rows[row]
        return (r.first, r.last) if r.count else None

    def replay(self, row: int, since: int, current: int) -> bytes | None:
        """The frames of seqs `since + 1 .. current`, joined; None unless every one of them is held."""
        if since == current:
            return b""
        r = self._rows[row]
        if not r.count or since > current or r.last != current or since + 1 < r.first:
            return None
        skip = since + 1 - r.first
        parts: list[bytes] = []
        for chunk in r.sealed:
            n = len(chunk.ends)
            if skip >= n:
                skip -= n
                continue
            parts.append(chunk.tail(skip))
            skip = 0
        parts.extend(r.open[skip:])
        return b"".join(parts)

    def covered(self, counts: Sequence[int], span_s: float) -> bool:
        """Do this many ticks per row over this many seconds fill what the history keeps? (How far back
        a hub that starts reads the shared tick log.)"""
        return span_s >= self.min_age_s and min(counts, default=self.min_ticks) >= self.min_ticks

    # --- accounting ----------------------------------------------------------------
    def ticks(self, row: int) -> int:
        return self._rows[row].count

    def nbytes(self, row: int) -> int:
        """Bytes held for the row: frame bytes plus offsets (object headers excluded; see bench/resume_replay.py)."""
        r = self._rows[row]
        return (sum(len(c.data) + c.ends.itemsize * len(c.ends) for c in r.sealed)
                + sum(len(f) for f in r.open))


def logged_tick(state: MarketState, tick: Tick, seq: int) -> AppliedTick:
    """A tick read back from the shared tick log (Redis engine) as the live path applies it: its change is
    against the previous close (a futures product's: settlement) this hub holds now (the same on every hub, except
    across a day's roll)."""
    inst = state.catalogue.instruments[tick.row]
    change = round(tick.price - state.futures.reference_price(tick.row), inst.decimals)
    change = change if math.isfinite(change) else 0.0
    return AppliedTick(tick.row, inst.id, tick.price, change, tick.ts, seq)
