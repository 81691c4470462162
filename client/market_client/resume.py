"""The stream's bookkeeping without I/O: what was seen, what to ask for, what to hand on.

Push in every server message after the subscription's ack (`on_message`) and the ack
itself (`on_ack`); each returns the events to yield. Invariants:
- per instrument, ticks are handed on in strictly increasing `seq` within one `epoch`:
  a tick at or below the last seq seen is a duplicate (a replay overlapping what
  arrived before the cut) and is dropped;
- every seq the client skipped is reported once, as a `Gap`: a jump inside a live
  stream with its exact range, a refused resume with the first missed seq;
- `since` holds, per instrument, the last seq handed on, in the history named `epoch`.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from market_client.events import Event, Gap, ServerMessage, Snapshot, Subscribed, Tick


class ResumeState:
    def __init__(self, ids: Iterable[str] | None) -> None:
        self.ids: list[str] | None = list(dict.fromkeys(ids)) if ids is not None else None
        self.epoch: str | None = None
        self.last: dict[str, int] = {}
        self.known_ids: list[str] = []  # what the last snapshot held (the subscription when ids is None)
        self._reset_baseline: set[str] = set()  # after a refused resume: the next tick starts afresh, no 2nd gap
        self._asked_since: dict[str, int] = {}
        self.ticks = 0
        self.resumes = {"recovered": 0, "refused": 0}  # answers to subscribes that carried since/epoch

    def subscribe_message(self, req_id: str) -> bytes | None:
        """The subscribe to send on a new connection: None when the default full set is wanted and there
        is nothing to resume (first connection without ids)."""
        ids = self.ids if self.ids is not None else self.known_ids
        self._asked_since = {i: self.last[i] for i in ids if i in self.last}
        if self.ids is None and not self._asked_since:
            return None
        msg: dict[str, object] = {"op": "subscribe", "ids": ids, "reqId": req_id}
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
        if isinstance(msg, Snapshot):
            self._on_snapshot(msg)
        return [msg]

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
