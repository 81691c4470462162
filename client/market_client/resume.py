"""The stream's bookkeeping without I/O: what was seen, what to ask for, what to hand on.

Push in every server message after the subscription's ack (`on_message`) and the ack
itself (`on_ack`); each returns the events to yield. Invariants:
- per instrument, ticks are handed on in strictly increasing `seq` within one `epoch`:
  a tick at or below the last seq seen is a duplicate (a replay overlapping what
  arrived before the cut) and is dropped;
- every seq the client skipped is reported once, as a `Gap`: a jump inside a live
  stream with its exact range, a refused resume with the first missed seq;
- `since` holds, per instrument, the last seq handed on, in the history named `epoch`;
- live candles (SPEC 14) are not replayed on resume: after a new connection, the first candle of each
  (id, interval) seen before is checked against the last bucket seen, and the buckets in between (and
  any seen only while filling) are reported once, as a `CandleGap`;
- a heartbeat naming a seq above the last one seen means ticks were lost on the way: `behind` says which
  (the stream then resumes on a new connection).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from market_client.events import (
    CandleGap,
    CandleUpdate,
    Event,
    Gap,
    Heartbeat,
    ServerMessage,
    Snapshot,
    Subscribed,
    Tick,
)

CandleKey = tuple[str, str]  # (id, interval)


class ResumeState:
    def __init__(self, ids: Iterable[str] | None, candles: Iterable[str] = ()) -> None:
        self.ids: list[str] | None = list(dict.fromkeys(ids)) if ids is not None else None
        self.candles: list[str] = list(dict.fromkeys(candles))  # live candle intervals to subscribe to
        self.behind: dict[str, int] = {}  # from the last heartbeat: ids whose seq is above the last tick seen
        self._candle_last: dict[CandleKey, str] = {}  # the latest bucket start seen
        self._candle_open: dict[CandleKey, set[str]] = {}  # buckets seen filling, not yet final
        self._candle_check: set[CandleKey] = set()  # to compare with the last bucket seen (after a reconnect)
        self.epoch: str | None = None
        self.last: dict[str, int] = {}
        self.known_ids: list[str] = []  # what the last snapshot held (the subscription when ids is None)
        self._reset_baseline: set[str] = set()  # after a refused resume: the next tick starts afresh, no 2nd gap
        self._asked_since: dict[str, int] = {}
        self.ticks = 0
        self.resumes = {"recovered": 0, "refused": 0}  # answers to subscribes that carried since/epoch

    @property
    def needs_ids(self) -> bool:
        """Live candles of every instrument asked for, and no snapshot seen yet to name them: wait for the
        connection's first snapshot (`learn_ids`) before subscribing."""
        return self.ids is None and bool(self.candles) and not self.known_ids

    def learn_ids(self, snap: Snapshot) -> None:
        self.known_ids = [q.id for q in snap.quotes]

    def new_connection(self) -> None:
        self.behind = {}
        self._candle_check = set(self._candle_last)

    def subscribe_message(self, req_id: str) -> bytes | None:
        """The subscribe to send on a new connection: None when the default full set is wanted and there
        is nothing to resume (first connection without ids and without candles)."""
        ids = self.ids if self.ids is not None else self.known_ids
        self._asked_since = {i: self.last[i] for i in ids if i in self.last}
        if self.ids is None and not self._asked_since and not self.candles:
            return None
        msg: dict[str, object] = {"op": "subscribe", "ids": ids, "reqId": req_id}
        if self.candles:
            msg["candles"] = self.candles
        if self._asked_since and self.epoch is not None:
            # an id the snapshot gave no seq for: 0, nothing seen (the server replays it all, or refuses)
            self._asked_since = {i: self._asked_since.get(i, 0) for i in ids}
            msg["since"] = self._asked_since
            msg["epoch"] = self.epoch
        else:
            self._asked_since = {}
        return msgspec.json.encode(msg)

    def on_ack(self, ack: Subscribed) -> list[Event]:
        if not self._asked_since:
            return []
        self.resumes["recovered" if ack.recovered else "refused"] += 1
        if ack.recovered:
            return []
        missed: dict[str, tuple[int, int | None]] = {i: (s + 1, None) for i, s in self._asked_since.items()}
        self._reset_baseline.update(missed)
        return [Gap(reason="not_recovered", missed=missed, epoch=self.epoch)]

    def on_message(self, msg: ServerMessage) -> list[Event]:
        if isinstance(msg, Tick):
            return self._on_tick(msg)
        if isinstance(msg, CandleUpdate):
            return self._on_candle(msg)
        if isinstance(msg, Heartbeat):
            self.behind = {i: s for i, s in msg.seqs.items() if i in self.last and s > self.last[i]}
        elif isinstance(msg, Snapshot):
            self._on_snapshot(msg)
        return [msg]

    def _on_candle(self, candle: CandleUpdate) -> list[Event]:
        key = (candle.id, candle.interval)
        events: list[Event] = []
        last = self._candle_last.get(key)
        filling = self._candle_open.setdefault(key, set())
        if key in self._candle_check and last is not None:
            self._candle_check.discard(key)
            unfinished = sorted(t for t in filling if t < candle.t)  # their final frames went to the old connection
            if candle.t > last or unfinished:
                events.append(CandleGap(id=candle.id, interval=candle.interval, start=min([*unfinished, last]),
                                        end=candle.t, last=last, open=tuple(unfinished)))
                filling.difference_update(unfinished)
        if last is None or candle.t > last:
            self._candle_last[key] = candle.t
        if candle.final:
            filling.discard(candle.t)
        else:
            filling.add(candle.t)
        events.append(candle)
        return events

    def _on_snapshot(self, snap: Snapshot) -> None:
        if snap.epoch != self.epoch:  # a new history: seqs start again
            self.epoch = snap.epoch
            self.last.clear()
            self._reset_baseline.clear()
        self.known_ids = [q.id for q in snap.quotes]
        for i, seq in snap.seqs.items():  # the snapshot's prices include every tick up to these
            if seq >= self.last.get(i, 0):
                self.last[i] = seq
                self._reset_baseline.discard(i)

    def _on_tick(self, tick: Tick) -> list[Event]:
        last = self.last.get(tick.id)
        if last is not None and tick.seq <= last:
            return []  # duplicate
        self.last[tick.id] = tick.seq
        self.ticks += 1
        if self._reset_baseline and tick.id in self._reset_baseline:
            self._reset_baseline.discard(tick.id)  # its gap was reported with the refused resume
            return [tick]
        if last is None or tick.seq == last + 1:
            return [tick]
        return [Gap(reason="seq_jump", missed={tick.id: (last + 1, tick.seq - 1)}, epoch=self.epoch), tick]
