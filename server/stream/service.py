"""The quote stream as a hub `Service`: listener, housekeeping task, bus and revocation hooks.

Runs on the hub's event loop (granian path: our own uvloop; robyn path:
Robyn's loop, entered through its startup handler), so it shares the market
state and the tick bus with the HTTP handlers without locks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from server.api.docs.asyncapi import register_asyncapi
from server.core.errors import CloseCode
from server.stream.clock import run_clock
from server.stream.connection import CLOSE_TIMEOUT_S, StreamConnection
from server.stream.core import StreamCore, StreamLimits, StreamMetrics

if TYPE_CHECKING:
    from server.hub import Hub

log = logging.getLogger("market.stream")
BACKLOG = 4096


class StreamService:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        s = hub.settings
        self.limits = StreamLimits(max_conn=dict(s.ws_max_conn), slow_close_s=s.ws_slow_close_s,
                                   heartbeat_s=s.heartbeat_s,
                                   handshake_rate=s.ws_handshake_rate, trusted_proxies=s.trusted_proxies)
        self.core = StreamCore(
            hub.state, hub.catalogue, hub.epoch, self.limits,
            StreamMetrics(hub.registry, lambda: float(self.core.open_count)), hub.keys.lookup,
            hub.app.limiter,  # the HTTP limiter's store: its buckets are pruned with the others
            hub.history,  # filled from every applied batch (and, on redis, the stream's tail at start)
        )
        self.conns: dict[int, StreamConnection] = {}  # session id -> connection, until connection_lost
        self._server: asyncio.AbstractServer | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._clock: asyncio.Task[None] | None = None
        self._all_lost = asyncio.Event()
        hub.bus.subscribe(self.core.on_ticks)
        hub.revocation_listeners.append(self.on_revoked)
        register_asyncapi(hub.router, s)

    # --- Service -------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        s = self.hub.settings
        self._server = await loop.create_server(
            self._new_connection, s.host, s.ws_port, backlog=BACKLOG, reuse_address=True,
            reuse_port=s.worker_id > 0)  # `serve --workers N`: N hubs share the port (server/workers.py)
        self._sweeper = loop.create_task(self._sweep_forever(), name="ws-sweep")
        self._clock = loop.create_task(run_clock(self.core, self.hub.clock), name="ws-clock")  # candles, heartbeats
        log.info("websocket stream listening on ws://%s:%s/ws/quotes", s.host, s.ws_port)

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
        return StreamConnection(self.core, self.hub.clock, self._made, self._lost, self.hub.keys.load)

    def _made(self, conn: StreamConnection) -> None:
        assert conn.session is not None
        self.conns[conn.session.id] = conn

    def _lost(self, conn: StreamConnection) -> None:
        if conn.session is not None:
            self.conns.pop(conn.session.id, None)
        if not self.conns:
            self._all_lost.set()

    def on_revoked(self, key_ids: set[str]) -> None:
        for session in self.core.sessions_of_keys(key_ids):
            conn = self.conns.get(session.id)
            if conn is not None:
                conn.close(CloseCode.KEY_REVOKED, "API key revoked")
        log.info("closed stream sessions of revoked keys %s", ", ".join(sorted(key_ids)))

    async def _sweep_forever(self) -> None:
        interval = min(1.0, self.limits.slow_close_s / 4)
        while True:
            await asyncio.sleep(interval)
            try:
                self._sweep()
            except Exception:
                log.exception("stream sweep failed")

    def _sweep(self) -> None:
        due = self.core.sweep(self.hub.clock())
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
