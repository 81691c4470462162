"""Live candle frames (SPEC 14): which frame goes out when, derived from the applied ticks and their timestamps.

A *channel* is one (instrument row, interval): ``row * 5 + k`` for k in ``CANDLE_INTERVALS``. For each channel
this tracks the bucket being filled and decides three kinds of frame, each built once and shared:

- **non-final**, at most one per channel per run of the stream clock (one run a second, at ``k + GRACE_S`` of
  the server clock for every whole second k) and at most one per channel per second of the server clock. A
  run sends the channel's candle as of the end of the oldest unsent *completed tick second* (the state after
  the last tick batch whose ticks for that row were stamped in that second, or earlier): so the content
  depends on the ticks and their timestamps only, never on when a hub's timer happened to fire, and every
  Redis hub, applying the same batches, sends the same frames. A run that comes late (its loop stalled past
  the next whole second) sends in that second, so the next run, on time, may not send: its frames are
  *deferred*, with their content, to the start of the next second (``deferred_to``), not conflated. Only a
  hub more than ``BACKLOG`` completed seconds behind conflates (drops the oldest unsent second).
- **final** when a tick opens a newer bucket (the ring can no longer change the old one: deterministic), or,
  when no tick does, at the first run at least ``GRACE_S`` after the bucket's end, if the instrument's ticks
  are live (its newest tick stamped within ``LIVE_S`` of the clock) or it had no tick since the previous run
  (a replay of old ticks at full speed keeps its buckets open until it pauses). The ring is then sealed at the
  bucket's end, so a tick that arrives later, stamped inside it, counts toward the next bucket: the final frame
  stays what /kline returns for that bucket. Daily candles are final when the book rolls to a new trading day
  (this clock rolls it at local midnight; a late tick already counts toward the live day).
- the **current** candle right after a subscribe's ack: the last non-final frame sent for the channel's open
  bucket, or one built from the book now (cached per data version).

Frames are formatted by the books' own ``format`` functions, so a final frame's candle is byte for byte the
/kline candle of that bucket. No I/O: ``on_ticks`` and ``on_run`` return ``(channel, frame)`` lists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

import numpy as np
import orjson

from server.market.candles.intraday import INTERVALS, bucket_iso
from server.market.candles.ranges import DAILY
from server.market.state import AppliedTick, MarketState
from server.stream.protocol.wire import text_frame

CANDLE_INTERVALS: tuple[str, ...] = (*INTERVALS, DAILY)  # 1m, 5m, 15m, 1h, 1d
K = len(CANDLE_INTERVALS)
DAILY_K = K - 1
GRACE_S = 0.5  # a run at k + GRACE_S sends second k-1's candles; a bucket is final by the clock GRACE_S after its end
LIVE_S = 5.0  # an instrument whose newest tick is this recent is live: its ended buckets close at once
DEFER_S = 0.02  # a deferred frame goes out this long after the next whole second (past the clocks' jitter)
BACKLOG = 2  # completed, unsent seconds held per channel; older ones are conflated into the newer

Values = tuple[float, float, float, float, float, int]  # o, h, l, c, v, seq


class CandleFrames:
    def __init__(self, state: MarketState) -> None:
        self.state = state
        n = len(state.catalogue.instruments)
        self.n = n
        self.ids = state.catalogue.ids  # the catalogue's lists: a reserved row's change when it is bound (SPEC 20)
        self.decimals = state.catalogue.decimals
        self.rings = [state.intraday.rings[name] for name in INTERVALS]
        channels = n * K
        self.bucket: list[int | None] = [None] * channels  # the open bucket: start (intraday) or day ordinal (1d)
        self.latest: list[tuple[int, Values] | None] = [None] * channels  # (tick second, values) after the last batch
        self.latest_sent = [False] * channels
        # the server-clock second of each channel's last non-final frame: a run that comes late (after the next
        # whole second) and the next run on time fall in one second, and only the first may send (SPEC 14: at
        # most one non-final frame per (id, interval) per second); the other's frames wait until deferred_to
        self.sent_second = [-1] * channels
        self.deferred_to: float | None = None  # when on_run is due again for frames a guard held back
        self.pending: list[list[tuple[int, Values]]] = [[] for _ in range(channels)]  # completed seconds, unsent
        self.last_frame: list[bytes | None] = [None] * channels  # the last non-final frame of the open bucket
        self.active: set[int] = set()  # channels with an open bucket
        # intraday channels: the ring's newest bucket start after the last batch (buckets a batch opens and closes
        # again, e.g. a replay of old ticks, get their final frames too)
        self.known: list[int | None] = [None] * channels
        for row in range(n):
            for k, ring in enumerate(self.rings):
                self.known[row * K + k] = ring.newest_start(row)
        self._seen_seq = np.zeros(n, dtype=np.int64)  # seqs at the previous run (quiescence)
        self._current: dict[int, bytes | None] = {}
        self._current_version = -1

    # --- the book ------------------------------------------------------------------------------------------------
    def _now_values(self, row: int, k: int) -> tuple[int | None, Values]:
        """(open bucket id, values) of the channel as the book holds it now."""
        if k == DAILY_K:
            book = self.state.candles
            if not len(book):
                return None, (math.nan,) * 5 + (0,)  # type: ignore[return-value]
            col = int(book.row_col[row])
            o = float(book.o[row, col])
            if o != o:  # not opened by a tick
                return None, (math.nan,) * 5 + (0,)  # type: ignore[return-value]
            return int(book.days[col]), (o, float(book.h[row, col]), float(book.l[row, col]),
                                         float(book.c[row, col]), float(book.v[row, col]), int(book.q[row, col]))
        newest = self.rings[k].newest_values(row)
        if newest is None:
            return None, (math.nan,) * 5 + (0,)  # type: ignore[return-value]
        start, o, h, low, c, v, seq = newest
        return start, (o, h, low, c, v, seq)

    def _frame(self, row: int, k: int, bucket: int, values: Values, final: bool) -> bytes:
        """A frame from tracked values, formatted as the books format their candles (numpy rounding for intraday,
        as ``IntradayRing.format``; Python's for daily, as ``CandleBook.format``)."""
        o, h, low, c, v, seq = values
        dec = self.decimals[row]
        if k == DAILY_K:
            candle = _daily(bucket, o, h, low, c, v, dec)
        else:
            po, ph, pl, pc = np.round(np.array([o, h, low, c]), dec).tolist()
            candle = {"t": bucket_iso(np.array([bucket]))[0], "o": po, "h": ph, "l": pl, "c": pc,
                      "v": int(np.rint(v))}
        return self._payload(row, k, candle, final, seq)

    def _final(self, row: int, k: int, bucket: int) -> bytes | None:
        """The final frame of ``bucket`` from the book's column holding it (None if the ring dropped it)."""
        if k == DAILY_K:
            book = self.state.candles
            days = book.days
            for age in range(len(book)):
                col = (book.head + len(book) - 1 - age) % book.capacity
                if int(days[col]) == bucket:
                    daily = book.format(row, [col], self.decimals[row])
                    return self._payload(row, k, daily[0], True, int(book.q[row, col])) if daily else None
            return None
        ring = self.rings[k]
        starts, cols = ring.held(row)
        i = int(np.searchsorted(starts, bucket))
        if i == len(starts) or int(starts[i]) != bucket:
            return None
        col = int(cols[i])
        candle = ring.format(row, [col], self.decimals[row])[0]
        return self._payload(row, k, candle, True, int(ring.q[row, col]))

    def _closed_between(self, row: int, k: int, after: int, before: int, sent: int | None) -> list[tuple[int, bytes]]:
        """Final frames of the buckets a batch opened and closed again (starts strictly between)."""
        ring = self.rings[k]
        starts, cols = ring.held(row)
        lo = int(np.searchsorted(starts, after, "right"))
        hi = int(np.searchsorted(starts, before, "left"))
        out = []
        for i in range(lo, hi):
            start = int(starts[i])
            if start != sent:
                col = int(cols[i])
                candle = ring.format(row, [col], self.decimals[row])[0]
                out.append((row * K + k, self._payload(row, k, candle, True, int(ring.q[row, col]))))
        return out

    def _payload(self, row: int, k: int, candle: dict, final: bool, seq: int) -> bytes:
        return text_frame(orjson.dumps({"type": "candle", "id": self.ids[row], "interval": CANDLE_INTERVALS[k],
                                        **candle, "final": final, "seq": seq}))

    def _reset(self, ch: int) -> None:
        self.bucket[ch] = None
        self.latest[ch] = self.last_frame[ch] = None
        self.pending[ch] = []
        self.latest_sent[ch] = False
        self.active.discard(ch)

    # --- inputs ----------------------------------------------------------------------------------------------------
    def on_ticks(self, ticks: list[AppliedTick]) -> list[tuple[int, bytes]]:
        """After a batch was applied: track every channel of the rows it touched; the finals it made due."""
        last: dict[int, float] = {}
        for t in ticks:
            last[t.row] = t.ts
        finals: list[tuple[int, bytes]] = []
        for row, ts in last.items():
            sec = math.floor(ts)
            base = row * K
            for k in range(K):
                ch = base + k
                bucket, values = self._now_values(row, k)
                if bucket is None:
                    continue
                old = self.bucket[ch]
                if old is not None and old != bucket:
                    frame = self._final(row, k, old)
                    if frame is not None:
                        finals.append((ch, frame))
                    self._reset(ch)
                if k != DAILY_K:
                    known = self.known[ch]
                    if known != bucket:  # None: the ring held nothing before this batch
                        finals += self._closed_between(row, k, -(2**62) if known is None else known, bucket, old)
                    self.known[ch] = bucket
                self.bucket[ch] = bucket
                self.active.add(ch)
                latest = self.latest[ch]
                if latest is None:
                    self.latest[ch] = (sec, values)
                elif sec > latest[0]:
                    if not self.latest_sent[ch]:  # its second is complete
                        pending = self.pending[ch]
                        pending.append(latest)
                        if len(pending) > BACKLOG:
                            del pending[0]  # conflated: the newer second holds its ticks too
                    self.latest[ch] = (sec, values)
                else:  # the same second, or a tick stamped earlier (it counted toward this bucket)
                    self.latest[ch] = (latest[0], values)
                self.latest_sent[ch] = False
        return finals

    def on_run(self, now: float, wanted: Sequence[object] | None = None) -> list[tuple[int, bytes]]:
        """One run of the stream clock (at ``k + GRACE_S``): roll the daily book, the finals the clock made due,
        and one non-final frame per channel whose newest completed second was not sent yet.

        ``wanted[ch]`` (the candle registry's ``by_row``: truthy when a session holds the channel) skips building
        the non-final frames nobody would receive (issue 22 item 3: most of a run's CPU); the channel's tracking
        is the same either way, and a later subscribe's current candle is then built from the book."""
        state = self.state
        out: list[tuple[int, bytes]] = []
        state.roll(now)
        threshold = math.floor(now - GRACE_S) - 1  # seconds up to this one are complete
        second = math.floor(now)
        deferred = False
        book = state.candles
        seqs, updated, seen = state.seq, state.updated_ts, self._seen_seq
        for ch in sorted(self.active):
            row, k = divmod(ch, K)
            bucket = self.bucket[ch]
            assert bucket is not None
            if k == DAILY_K:
                ended = not len(book) or bucket != int(book.days[book.row_col[row]])  # the row's own trading day
            else:
                end = bucket + self.rings[k].seconds
                ended = end <= now - GRACE_S and (updated[row] >= now - LIVE_S or seqs[row] == seen[row])
            if ended:
                self._close(ch, row, k, bucket, out)
                continue
            latest = self.latest[ch]
            pending = self.pending[ch]
            if pending and pending[0][0] <= threshold:
                send: tuple[int, Values] = pending[0]
            elif latest is not None and not self.latest_sent[ch] and latest[0] <= threshold:
                send = latest
            else:
                continue
            if self.sent_second[ch] == second:  # a late run sent in this second already
                deferred = True
            else:
                self._non_final(ch, bucket, send, send is latest, second, wanted, out)
        self._seen_seq = np.array(seqs, dtype=np.int64, copy=True)
        self.deferred_to = second + 1 + DEFER_S if deferred else None
        return out

    def _close(self, ch: int, row: int, k: int, bucket: int, out: list[tuple[int, bytes]]) -> None:
        """The channel's bucket ended by the clock: its final frame (appended to ``out``), its ring sealed."""
        frame = self._final(row, k, bucket)
        if frame is not None:
            out.append((ch, frame))
        if k != DAILY_K:
            self.rings[k].seal(row, bucket + self.rings[k].seconds)
        self._reset(ch)

    def _non_final(self, ch: int, bucket: int, send: tuple[int, Values], is_latest: bool, second: int,
                   wanted: Sequence[object] | None, out: list[tuple[int, bytes]]) -> None:
        """Send ``send`` (the oldest unsent completed second's values) as the channel's non-final frame, appended
        to ``out``; not built when ``wanted`` says nobody holds the channel (`current` builds it when asked)."""
        if is_latest:
            self.latest_sent[ch] = True
        else:
            del self.pending[ch][0]
        self.sent_second[ch] = second
        if wanted is not None and not wanted[ch]:
            self.last_frame[ch] = None
            return
        row, k = divmod(ch, K)
        frame = self._frame(row, k, bucket, send[1], False)
        self.last_frame[ch] = frame
        out.append((ch, frame))

    def current(self, ch: int) -> bytes | None:
        """The frame sent right after an ack: the open bucket's last shared frame, or one built now."""
        frame = self.last_frame[ch]
        if frame is not None:
            return frame
        if self._current_version != self.state.version:
            self._current.clear()
            self._current_version = self.state.version
        if ch in self._current:
            return self._current[ch]
        row, k = divmod(ch, K)
        bucket = self.bucket[ch]
        built = None
        if bucket is not None:
            now_bucket, values = self._now_values(row, k)
            if now_bucket == bucket:
                built = self._frame(row, k, bucket, values, False)
        self._current[ch] = built
        return built


def _daily(ordinal: int, o: float, h: float, low: float, c: float, v: float, dec: int) -> dict:
    """A daily candle as ``CandleBook.format`` writes it (an opened candle: every price is set)."""
    return {"t": date.fromordinal(ordinal).isoformat(), "o": round(o, dec), "h": round(h, dec),
            "l": round(low, dec), "c": round(c, dec), "v": round(v)}
