"""The stream's limits and timings: one frozen object the stream service builds from the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEEPALIVE_INTERVAL_S = 20.0
KEEPALIVE_TIMEOUT_S = 20.0
HANDSHAKE_TIMEOUT_S = 10.0
SLOW_CLOSE_S = 10.0
HEARTBEAT_S = 5.0  # SPEC 14 default (--heartbeat-s; 0 turns heartbeats off)


@dataclass(frozen=True, slots=True)
class StreamLimits:
    max_conn: dict[str, int]  # plan -> open sessions per key; a plan absent here has no access
    slow_close_s: float = SLOW_CLOSE_S
    keepalive_interval_s: float = KEEPALIVE_INTERVAL_S
    keepalive_timeout_s: float = KEEPALIVE_TIMEOUT_S
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S
    buffer_cap: int = 64 * 1024
    hard_cap: int = 256 * 1024
    handshake_rate: int = 60  # handshakes per client IP per minute (GCRA: a burst of this many, then spaced)
    trusted_proxies: tuple[Any, ...] = ()  # peers whose X-Forwarded-For names the client
    heartbeat_s: float = HEARTBEAT_S  # 0: no heartbeats

    @property
    def pings_after(self) -> float | None:
        """Keepalive pings ride the heartbeats' writes when a beat comes at least once per keepalive interval: a
        session is pinged with the first beat at least this long after its last ping (or its open), so every
        keepalive_interval_s exactly when that is a multiple of the beat (20 s and 5 s), the first one 17.5-22.5 s
        after the open. None: the sweep pings."""
        beat, keep = self.heartbeat_s, self.keepalive_interval_s
        return keep - beat / 2 if 0 < beat <= keep else None
