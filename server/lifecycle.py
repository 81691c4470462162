"""The one shutdown order both HTTP runtimes run (SPEC 11), defined once.

1. stop accepting HTTP; requests that still arrive are refused (503) by the edge gate;
2. drain: body reads are cut at once, in-flight requests finish (bounded);
3. the runtime lets go of its connections (bounded, never cancelled: Granian's worker must end by itself);
4. the hub's services stop: WebSockets close with 1001 (each close bounded by its 2 s timeout), then the
   workers (outbox), so no request is ever answered after the parts it relies on are gone;
5. the hub's core stops (key watch, housekeeping, feed, engine), flushes state and closes storage.

Both runtimes call it through `server.root.shut_down` (the hub's parts are built and started there).

The whole sequence runs inside SHUTDOWN_BUDGET_S, so the process exits 0 within 5 s of SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("market.lifecycle")

SHUTDOWN_BUDGET_S = 4.5
DRAIN_S = 1.5  # in-flight requests; stalled body reads are cut at once, so only slow handlers use it
RELEASE_S = 1.0  # the runtime closing its connections after the drain


class HttpRuntime(Protocol):
    def stop_accepting(self) -> None: ...

    async def drain(self, timeout_s: float) -> bool: ...

    async def release(self, timeout_s: float) -> bool: ...


class Hub(Protocol):
    async def stop_services(self) -> None:
        """Step 4 (each service bounded)."""
        ...

    async def stop_core(self) -> None:
        """Step 5."""
        ...


def on_signals(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, callback)


async def shutdown(hub: Hub, http: HttpRuntime) -> None:
    """Run the shutdown order; gives up (with a warning) once SHUTDOWN_BUDGET_S has passed."""
    log.info("shutting down")
    try:
        await asyncio.wait_for(_ordered(hub, http), SHUTDOWN_BUDGET_S)
    except TimeoutError:
        log.warning("shutdown exceeded its budget of %s s; exiting anyway", SHUTDOWN_BUDGET_S)


async def _ordered(hub: Hub, http: HttpRuntime) -> None:
    http.stop_accepting()
    if not await http.drain(DRAIN_S):
        log.warning("HTTP requests still in flight after %s s; closing anyway", DRAIN_S)
    if not await http.release(RELEASE_S):
        log.warning("HTTP server still closing connections after %s s", RELEASE_S)
    await hub.stop_services()
    await hub.stop_core()
