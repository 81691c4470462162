"""Heartbeats (SPEC 14) and the keepalive pings that ride them.

Every ``--heartbeat-s`` each session gets its subscribed ids' last seqs, one frame per subscription group, built
at the beat. The frames then wait for the next tick batch (at most BEAT_WAIT_S, or a quarter of the interval):
each group's heads that batch's write (the fan-out ``take``s them), so a heartbeat costs no send of its own; a
group the batch does not touch gets its frame alone. Either way it is written after the ticks it accounts for
(every tick frame is written when its batch is applied, on this thread; a slow connection holds the heartbeat
behind its held ticks).

With a beat at least once per keepalive interval, a write that carries a heartbeat also carries a ping frame to
the members due one (``StreamLimits.pings_after``), and the sweep pings nobody.
"""

from __future__ import annotations

import math

from server.market.timefmt import iso
from server.stream.delivery.registry import Group, SubscriptionRegistry, write_ready
from server.stream.delivery.snapshots import QuoteSource
from server.stream.limits import StreamLimits
from server.stream.metrics import StreamMetrics
from server.stream.protocol import messages as msg
from server.stream.protocol.session import Session
from server.stream.protocol.wire import PING_FRAME, text_frame

BEAT_WAIT_S = 0.25  # a heartbeat waits at most this long (and a quarter of its interval) for a tick batch to ride

Beats = dict[Group[Session], bytes]


class Heartbeats:
    def __init__(self, state: QuoteSource, ids: list[str], registry: SubscriptionRegistry[Session],
                 limits: StreamLimits, metrics: StreamMetrics) -> None:
        self.state, self.ids, self.registry = state, ids, registry
        self.limits = limits
        self.metrics = metrics
        self._next = -math.inf  # the next beat: multiples of limits.heartbeat_s
        self._waiting: Beats | None = None  # a beat's frames waiting for the next tick batch
        self._due = math.inf  # ... or until then, when they go out alone
        self._built_at = 0.0  # when they were built (the pings' sent time)

    def next_due(self, now: float) -> float:
        """When `on_clock` has work next: the next beat, or the waiting frames' deadline (inf: heartbeats off)."""
        beat = self.limits.heartbeat_s
        return min((math.floor(now / beat) + 1) * beat, self._due) if beat > 0 else math.inf

    def on_clock(self, now: float) -> None:
        """The waiting frames no tick batch came to carry, then the beat due at ``now``."""
        beats = self._waiting
        if beats is not None and now >= self._due:
            self.take()
            self.send(beats)
        beat = self.limits.heartbeat_s
        if beat > 0 and now >= self._next:
            first = self._next == -math.inf
            self._next = (math.floor(now / beat) + 1) * beat
            if not first or now % beat < 0.25:
                self.build(math.floor(now / beat + 1e-9) * beat, now)  # ts: the beat's instant

    def build(self, ts: float, now: float) -> None:
        """The beat of ``ts``: one frame per subscription group, built now; they wait for the next tick batch."""
        beats = self.take()
        if beats is not None:  # the previous beat found no batch within its wait
            self.send(beats)
        self._built_at = now
        stamp = iso(ts)
        seq = self.state.seq
        ids = self.ids
        self._waiting = {
            group: text_frame(msg.heartbeat_payload(stamp, {ids[r]: int(seq[r]) for r in sorted(group.rows)}))
            for group in self.registry.groups() if group.members}
        self._due = now + min(BEAT_WAIT_S, self.limits.heartbeat_s / 4)

    def take(self) -> Beats | None:
        """The waiting frames (None: none), for the tick batch that carries them."""
        beats, self._waiting, self._due = self._waiting, None, math.inf
        return beats

    def send(self, beats: Beats) -> None:
        """Heartbeat frames alone, to the groups that still exist (a group left by all its members is gone)."""
        sent = 0
        for group, frame in beats.items():
            if group.members:
                sent += self.write(group, frame)
                for session in group.held():
                    session.out.hold_last(frame)
        if sent:
            self.metrics.heartbeats.inc(amount=sent)

    def write(self, group: Group[Session], data: bytes) -> int:
        """A write that carries a heartbeat, to every ready member of ``group``; the members due a keepalive ping
        (and awaiting no pong) get a ping frame after it, in the same write: the pong timeout runs from the beat.
        Returns how many writes went out."""
        after = self.limits.pings_after
        if after is None:
            return write_ready(group, data)
        now, pinged = self._built_at, data + PING_FRAME
        failed = 0
        members = tuple(group.ready.items())
        for session, write in members:
            try:
                if session.ping_sent_at is None and now - session.last_ping_at >= after:
                    write(pinged)
                    session.ping_sent(now)
                else:
                    write(data)
            except RuntimeError:
                failed += 1
        return len(members) - failed
