"""Applied ticks, in process: the hop from the market state's writer to everything that reacts to ticks.

`AppliedTicks.publish` runs its listeners synchronously on the event loop after each applied batch (the
stream core; the tick path calls it). It is the same on both engines: what is shared between hubs is the
engine's tick bus before the market state (server/engine/__init__.py), not this.
"""

from __future__ import annotations

from collections.abc import Callable

from server.market.state import AppliedTick

TickListener = Callable[[list[AppliedTick]], None]


class AppliedTicks:
    def __init__(self) -> None:
        self._listeners: list[TickListener] = []

    def subscribe(self, listener: TickListener) -> None:
        self._listeners.append(listener)

    def publish(self, ticks: list[AppliedTick]) -> None:
        for listener in self._listeners:
            listener(ticks)
