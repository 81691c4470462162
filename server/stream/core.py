"""The quote stream without I/O: its parts, connected.

Push inputs in (a handshake target, a client text message, a tick batch, the time), and the parts write complete
frames through each session's injected ``write`` and return decisions (refuse, close with a code, ping) for the
connection pump to carry out. No sockets, no awaits: tests drive the parts directly.

Who calls which part:

- the connection pump (connection.py): ``sessions`` (handshake, open, close, buffer pauses) and ``messages``
  (what the client sends);
- the applied-tick bus (the root subscribes it): ``fanout.on_ticks``;
- the stream clock task (delivery/clock.py): ``schedule`` (candle runs, heartbeats);
- the service's sweeper (service.py): ``keepalive.sweep``.

What the parts share is built here once: the two subscription registries (instrument rows, and candle channels
``row * K + k``) and the snapshot frames. What they depend on outside the stream (the limiter's buckets, the
resume history, the candle frames) is handed in: the root builds each once.
"""

from __future__ import annotations

from collections.abc import Callable

from server.core.keys import ApiKey
from server.core.limits import Gcra
from server.core.usage import UsageMeter
from server.market.catalogue import Catalogue
from server.stream.connections.client_messages import ClientMessages, IngestFrame, Resolve
from server.stream.connections.keepalive import Keepalive
from server.stream.connections.sessions import Sessions
from server.stream.delivery.candle_frames import CandleFrames, K
from server.stream.delivery.clock import Schedule
from server.stream.delivery.fanout import FanOut
from server.stream.delivery.heartbeats import Heartbeats
from server.stream.delivery.registry import SubscriptionRegistry
from server.stream.delivery.replay import Replay
from server.stream.delivery.resume_history import TickHistory
from server.stream.delivery.snapshots import QuoteSource, Snapshots
from server.stream.delivery.venue_status import Stale, venue_status_of
from server.stream.limits import StreamLimits
from server.stream.metrics import StreamMetrics
from server.stream.protocol.session import Session


class StreamCore:
    def __init__(self, state: QuoteSource, catalogue: Catalogue, epoch: str, limits: StreamLimits,
                 metrics: StreamMetrics, lookup: Callable[[str], ApiKey | None], limiter: Gcra,
                 history: TickHistory, candles: CandleFrames | None, meter: UsageMeter | None = None,
                 stale: Stale | None = None, resolve: Resolve | None = None,
                 ingest: IngestFrame | None = None) -> None:
        """`limiter`: the hub's local buckets (the per-IP handshake rate); `history`: the resume history, which
        frames each tick; `candles`: the live candle frames of the market state (None: a state without candle
        books, as in unit tests); `meter`: the console's usage per key (None: nothing is counted); `stale`: whether an
        open venue's feed is silent (delivery/venue_status.py; None: never); `resolve`: the contract a continuous id
        names at an instant (SPEC 19; None: a subscribe takes instrument ids only); `ingest`: /ws/ingest's batches
        (SPEC 20)."""
        self.state = state
        self.limits = limits
        ids = catalogue.ids  # the catalogue's list: a reserved row's id changes when it is bound (SPEC 20)
        self.registry: SubscriptionRegistry[Session] = SubscriptionRegistry(len(ids))
        self.candle_registry: SubscriptionRegistry[Session] = SubscriptionRegistry(len(ids) * K)
        snapshots = Snapshots(state, ids, epoch)
        self.sessions = Sessions(limits, metrics, lookup, limiter, self.registry, self.candle_registry, snapshots,
                                 meter, catalogue.listed_rows)
        replay = Replay(state, ids, epoch, history, metrics)
        self.messages = ClientMessages(catalogue, self.registry, self.candle_registry, snapshots, replay, candles,
                                       metrics, resolve, ingest)
        beats = Heartbeats(state, ids, self.registry, limits, metrics)
        self.fanout = FanOut(self.registry, self.candle_registry, history, candles, beats, metrics)
        venues = venue_status_of(getattr(state, "clocks", ()), self.registry, stale)
        self.schedule = Schedule(candles, self.candle_registry, self.fanout, beats, venues)
        self.keepalive = Keepalive(self.sessions, limits)
