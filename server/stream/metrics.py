"""The stream's metrics (docs/stream.md lists them), registered once and shared by its parts."""

from __future__ import annotations

from collections.abc import Callable

from server.core.metrics import Registry


class StreamMetrics:
    def __init__(self, registry: Registry, open_sessions: Callable[[], float]) -> None:
        registry.gauge("market_ws_connections", "Open WebSocket sessions.", open_sessions)
        self.delivered = registry.counter("market_ws_ticks_delivered_total", "Tick frames written to clients.")
        self.conflated = registry.counter(
            "market_ws_ticks_conflated_total", "Ticks superseded in a slow client's buffer before it read them.")
        self.slow_closes = registry.counter(
            "market_ws_slow_consumer_closes_total", "Sessions closed 4008 for staying over the buffer cap.")
        self.refusals = registry.counter("market_ws_handshake_refusals_total", "Refused handshakes by reason.")
        self.closes = registry.counter("market_ws_server_closes_total", "Sessions the server closed, by code.")
        self.fanout = registry.histogram("market_ws_fanout_seconds", "Time to frame and write one tick batch.")
        self.resumes = registry.counter("market_ws_resumes_total", "Subscribes with since/epoch, by recovered.")
        self.replayed = registry.counter("market_ws_ticks_replayed_total", "Tick frames replayed by resumes.")
        self.replay_time = registry.histogram(
            "market_ws_resume_seconds", "Server time of a recovered resume: from its subscribe to the replay written.")
        self.candles = registry.counter("market_ws_candles_delivered_total", "Candle frames written to clients.")
        self.heartbeats = registry.counter("market_ws_heartbeats_total", "Heartbeat frames written to clients.")
