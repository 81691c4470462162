"""Fan-out: tick and candle frames to their subscribers, one write per connection per batch.

Each tick is framed once (the frame the resume history keeps is the one sent live), the frames of a batch are
joined once per subscription group, and the joined bytes go to each ready member's write; a member over its
buffer cap holds them instead, conflated to the latest frame per instrument (per channel for candles). A
heartbeat waiting for a batch heads that batch's write to its group (server/stream/delivery/heartbeats.py).

Invariants (with stream/connections/sessions.py's): everything runs on the hub's single event-loop thread and every
write is whole frames, so writes to one connection never interleave mid-frame; a write never removes a member
from a registry synchronously (a transport reports a lost connection later, through the loop), but it may hold
one (a transport calls ``pause_writing`` from inside ``write``): each group's ready writers are walked as a copy,
and the members that hold a batch are those held before its write (one that the write holds got the batch: held as
well, it would get it again when its transport drains).
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

from server.market.state import AppliedTick
from server.stream.delivery.candle_frames import CandleFrames
from server.stream.delivery.heartbeats import Heartbeats
from server.stream.delivery.registry import SubscriptionRegistry, write_ready
from server.stream.delivery.resume_history import TickHistory
from server.stream.metrics import StreamMetrics
from server.stream.protocol.messages import roll_frame
from server.stream.protocol.session import Session


class FanOut:
    def __init__(self, registry: SubscriptionRegistry[Session], candle_registry: SubscriptionRegistry[Session],
                 history: TickHistory, candles: CandleFrames | None, beats: Heartbeats,
                 metrics: StreamMetrics) -> None:
        """`history`: frames each tick and keeps it for resumes; `candles`: the live candle frames (None: a
        market source without candle books, as in the core's unit tests)."""
        self.registry = registry
        self.candle_registry = candle_registry
        self.history = history
        self.candles = candles
        self.beats = beats
        self.metrics = metrics

    def on_ticks(self, ticks: list[AppliedTick]) -> None:
        """Fan one bus batch out: each tick framed once, one write per connection per batch."""
        started = perf_counter()
        by_row = self.registry.by_row
        touched: dict[Any, list[tuple[int, bytes]]] = {}
        frames = self.history.add(ticks)  # framed once: kept for resumes, and sent live below
        for t, frame in zip(ticks, frames, strict=True):
            groups = by_row[t.row]
            if not groups:
                continue
            item = (t.row, frame if t.roll is None else roll_frame(t) + frame)  # a product's new main (SPEC 19)
            for group in groups:
                items = touched.get(group)
                if items is None:
                    touched[group] = [item]
                else:
                    items.append(item)
        beats = self.beats.take()
        delivered = conflated = beats_sent = 0
        for group, items in touched.items():
            data = items[0][1] if len(items) == 1 else b"".join([frame for _, frame in items])
            beat = beats.pop(group, None) if beats else None
            group.sent += len(items)  # before the writes: a write may hold its member (registry.py)
            held = group.held()  # before the writes too: a member a write holds has these frames already
            if beat is None:
                delivered += len(items) * write_ready(group, data)
            else:  # the waiting heartbeat heads the batch's write: the same send, still after what it accounts for
                written = self.beats.write(group, beat + data)
                delivered += len(items) * written
                beats_sent += written
            for session in held:
                conflated += session.out.hold(items)
                if beat is not None:
                    session.out.hold_last(beat)
        if delivered:
            self.metrics.delivered.inc(amount=delivered)
        if conflated:
            self.metrics.conflated.inc(amount=conflated)
        if beats_sent:
            self.metrics.heartbeats.inc(amount=beats_sent)
        if beats:
            self.beats.send(beats)  # groups this batch did not touch: their heartbeat alone
        if self.candles is not None:
            finals = self.candles.on_ticks(ticks)
            if finals:
                self.candle_frames(finals)
        if touched:
            self.metrics.fanout.observe(perf_counter() - started)

    def candle_frames(self, frames: list[tuple[int, bytes]]) -> None:
        """Candle frames out as ticks go: each built once, joined once per subscription group, one write per
        connection; a slow connection holds the latest frame per channel (as it holds ticks per instrument)."""
        by_ch = self.candle_registry.by_row
        touched: dict[Any, list[tuple[int, bytes]]] = {}
        for ch, frame in frames:
            for group in by_ch[ch]:
                items = touched.get(group)
                if items is None:
                    touched[group] = [(-1 - ch, frame)]  # held under a negative key: rows are >= 0
                else:
                    items.append((-1 - ch, frame))
        delivered = 0
        for group, items in touched.items():
            data = items[0][1] if len(items) == 1 else b"".join([frame for _, frame in items])
            group.sent += len(items)
            held = group.held()  # before the write: a member it holds has these frames already
            delivered += len(items) * write_ready(group, data)
            for session in held:
                session.out.hold(items)
        if delivered:
            self.metrics.candles.inc(amount=delivered)
