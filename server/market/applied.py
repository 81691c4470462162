"""Applied ticks, in process: the hop from the market state's writer to everything that reacts to ticks.

The tick path (server/ticks.py) calls `before` with each batch about to be applied, then `publish` with what the
state made of it; listeners run synchronously on the event loop, in the order they subscribed. Who listens is
decided by the root: the public market snapshot (`before`: it closes a refresh boundary there, the same on every
hub), the stream core and a live feed's candle keeper (`publish`). It is the same on both engines: what is shared
between hubs is the engine's tick bus before the market state (server/engine/__init__.py), not this.
"""

from __future__ import annotations

from collections.abc import Callable

from server.market.state import AppliedTick
from server.market.tick import Tick

TickListener = Callable[[list[AppliedTick]], None]
BatchListener = Callable[[float], None]  # the newest tick time of a batch about to be applied


class AppliedTicks:
    def __init__(self) -> None:
        self._listeners: list[TickListener] = []
        self._before: list[BatchListener] = []

    def subscribe(self, listener: TickListener) -> None:
        self._listeners.append(listener)

    def subscribe_before(self, listener: BatchListener) -> None:
        self._before.append(listener)

    def before(self, ticks: list[Tick]) -> None:
        """A non-empty batch is about to be applied."""
        if self._before:
            newest = max(t.ts for t in ticks)
            for listener in self._before:
                listener(newest)

    def publish(self, ticks: list[AppliedTick]) -> None:
        for listener in self._listeners:
            listener(ticks)
