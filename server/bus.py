"""The tick bus: the seam between the feed's writer and everything that reacts to ticks.

In one process it is a list of callbacks run synchronously on the event loop
after each applied batch. Several hubs would replace it with a broker-backed
bus (Redis pub/sub or NATS) of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from server.market.state import AppliedTick

TickListener = Callable[[list[AppliedTick]], None]


class TickBus(Protocol):
    def subscribe(self, listener: TickListener) -> None: ...

    def publish(self, ticks: list[AppliedTick]) -> None: ...


class LocalTickBus:
    def __init__(self) -> None:
        self._listeners: list[TickListener] = []

    def subscribe(self, listener: TickListener) -> None:
        self._listeners.append(listener)

    def publish(self, ticks: list[AppliedTick]) -> None:
        for listener in self._listeners:
            listener(ticks)
