"""The stream clock: candle runs (whole seconds + GRACE_S) and heartbeats (multiples of --heartbeat-s) on the
server's clock, so every hub runs them in the same phase (server/stream/candle_frames.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from server.stream.core import StreamCore

log = logging.getLogger("market.stream")


async def run_clock(core: StreamCore, clock: Callable[[], float]) -> None:
    while True:
        now = clock()
        await asyncio.sleep(max(0.0, core.next_wakeup(now) - now))
        try:
            core.on_clock(clock())
        except Exception:
            log.exception("stream clock run failed")
