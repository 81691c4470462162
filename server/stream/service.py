"""The quote stream as a hub service: listener, housekeeping task, and the hooks the root connects.

Runs on the hub's event loop (granian path: our own uvloop; robyn path:
Robyn's loop, entered through its startup handler), so it shares the market
state and the tick bus with the HTTP handlers without locks. The composition
root (server/root.py) subscribes `core.fanout.on_ticks` to the applied-tick bus and
`on_revoked` to the key watch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import aiofastnet

from server.config import Settings
from server.core.errors import CloseCode
from server.core.keys import ApiKey
from server.core.limits import Gcra
from server.core.metrics import Registry
from server.core.usage import UsageMeter
from server.market.catalogue import Catalogue
from server.market.state import MarketState
from server.store.accounts.key_cache import KeyCache
from server.stream.connection import CLOSE_TIMEOUT_S, StreamConnection
from server.stream.core import IngestFrame, StreamCore
from server.stream.delivery.candle_frames import CandleFrames
from server.stream.delivery.clock import run_clock
from server.stream.delivery.resume_history import TickHistory
from server.stream.delivery.venue_status import Stale
from server.stream.limits import StreamLimits
from server.stream.metrics import StreamMetrics

log = logging.getLogger("market.stream")
BACKLOG = 4096


def stream_limits(s: Settings) -> StreamLimits:
    """The stream's limits from the settings (the keepalive and handshake timings keep their defaults)."""
    return StreamLimits(max_conn=dict(s.ws_max_conn), slow_close_s=s.ws_slow_close_s, heartbeat_s=s.heartbeat_s,
                        handshake_rate=s.ws_handshake_rate, trusted_proxies=s.trusted_proxies)


class StreamService:
    def __init__(self, settings: Settings, state: MarketState, catalogue: Catalogue, epoch: str, registry: Registry,
                 keys: KeyCache, buckets: Gcra, history: TickHistory, clock: Callable[[], float],
                 limits: StreamLimits, meter: UsageMeter | None, stale: Stale | None = None,
                 ingest: IngestFrame | None = None) -> None:
        """`buckets`: this hub's local GCRA buckets (the handshake rate; pruned with the HTTP ones); `history`:
        the resume history, filled from every applied batch (and, on redis, the stream's tail at start); `clock`:
        the time every part of the stream reads (the sweeper's rounds, the stream clock, the connections);
        `limits`: `stream_limits(settings)`, or shorter timings in tests; `meter`: the console's usage per key (the
        connections and messages of each key's sessions; None counts nothing); `stale(venue, ms)`: the venue's feed is
        silent (the `stale` status frame, SPEC 20); `ingest`: a /ws/ingest batch -> its answer (SPEC 20)."""
        self.settings = settings
        self.keys, self.clock = keys, clock
        self.limits = limits
        self.core = StreamCore(
            state, catalogue, epoch, self.limits,
            StreamMetrics(registry, lambda: float(self.core.sessions.open_count)), keys.lookup, buckets, history,
            CandleFrames(state), meter, stale, state.mains.resolve, ingest,
        )
        self.conns: dict[int, StreamConnection] = {}  # session id -> connection, until connection_lost
        self._server: asyncio.AbstractServer | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._clock: asyncio.Task[None] | None = None
        self._all_lost = asyncio.Event()

    # --- Service -------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        s = self.settings
        # aiofastnet's transports (C, on this loop's add_reader/add_writer) rather than the loop's own: a write
        # is one send() at once (uvloop's is a write() after the loop iteration, through the VFS and a queue), so
        # the fan-out's one write per connection per batch costs less CPU (bench/README.md, "WebSocket fan-out")
        self._server = await aiofastnet.create_server(
            loop, self._new_connection, s.host, s.ws_port, backlog=BACKLOG, reuse_address=True,
            reuse_port=s.worker_id > 0)  # `serve --workers N`: N hubs share the port (server/workers.py)
        self._sweeper = loop.create_task(self._sweep_forever(), name="ws-sweep")
        # the stream clock: candle runs and heartbeats
        self._clock = loop.create_task(run_clock(self.core.schedule, self.clock), name="ws-clock")
        log.info("websocket stream listening on ws://%s:%s/ws/quotes", s.host, s.ws_port)

    @property
    def listening(self) -> bool:
        """The WebSocket listener accepts connections (/api/v1/status's `stream` component)."""
        return self._server is not None and self._server.is_serving()

    async def stop(self) -> None:
        """Stop accepting, close every session with 1001, drop stragglers after the close timeout."""
        if self._server is not None:
            self._server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._clock is not None:
            self._clock.cancel()
        for conn in list(self.conns.values()):
            conn.close(CloseCode.GOING_AWAY, "server shutting down")
        if self.conns:
            self._all_lost.clear()
            try:
                await asyncio.wait_for(self._all_lost.wait(), CLOSE_TIMEOUT_S + 0.2)
            except TimeoutError:
                for conn in list(self.conns.values()):
                    conn.abort()
        log.info("websocket stream stopped")

    # --- hooks -------------------------------------------------------------------
    def _new_connection(self) -> StreamConnection:
        return StreamConnection(self.core, self.clock, self._made, self._lost, self.keys.load,
                                self.settings.ws_deflate)

    def _made(self, conn: StreamConnection) -> None:
        assert conn.session is not None
        self.conns[conn.session.id] = conn

    def _lost(self, conn: StreamConnection) -> None:
        if conn.session is not None:
            self.conns.pop(conn.session.id, None)
        if not self.conns:
            self._all_lost.set()

    def on_revoked(self, key_ids: set[str]) -> None:
        for session in self.core.sessions.of_keys(key_ids):
            conn = self.conns.get(session.id)
            if conn is not None:
                conn.close(CloseCode.KEY_REVOKED, "API key revoked")
        log.info("closed stream sessions of revoked keys %s", ", ".join(sorted(key_ids)))

    def on_plans(self, key_of: Callable[[str], ApiKey | None]) -> None:
        """After a key refresh: sessions whose key's plan changed take the new plan; those it no longer covers
        (no stream on the plan, or over its connection cap: the newest first) are closed with 4003."""
        for session in self.core.sessions.replanned(key_of):
            conn = self.conns.get(session.id)
            if conn is not None:
                conn.close(CloseCode.PLAN_CHANGED, f"The {session.plan} plan does not cover this session")

    async def _sweep_forever(self) -> None:
        interval = min(1.0, self.limits.slow_close_s / 4)
        while True:
            await asyncio.sleep(interval)
            try:
                self.sweep_round()
            except Exception:
                log.exception("stream sweep failed")

    def sweep_round(self) -> None:
        """One round of the sweeper at the injected clock's time: keepalive pings due, and the closes due (pong
        overdue 1011, slow consumer 4008, stuck handshake). The sweep task runs one every second (every quarter of
        the slow-consumer grace when that is shorter); tests call it."""
        due = self.core.keepalive.sweep(self.clock())
        for session in due.ping:
            conn = self.conns.get(session.id)
            if conn is not None:
                conn.ping()
        for session, code in due.close:
            conn = self.conns.get(session.id)
            if conn is not None:
                if code is CloseCode.SLOW_CONSUMER:
                    log.info("closing slow consumer session=%s key=%s", session.id, session.key_id)
                conn.close(code)
