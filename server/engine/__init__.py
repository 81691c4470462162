"""Engines (SPEC 12): where the state that several hubs must share lives, chosen once by the composition root.

Two seams so far, each a small protocol with a memory and a Redis implementation
(Centrifugo's broker / presence-manager split):

- `limiter`: the shared GCRA check. The memory engine has none (None): the
  process-local `Gcra` answers synchronously, exactly as with one hub. The Redis
  engine checks buckets with one Lua script on Redis time, falling back to the
  local buckets while Redis cannot be reached.
- `revocations`: the key-revocation channel. Publishing runs every subscriber of
  this hub at once and, on Redis, tells every other hub over pub/sub.
- `ticks`: the tick log. None on memory (the feed writes the market state). On
  Redis one hub holds the feed lease and appends tick batches to a Redis Stream;
  every hub applies them, with the seqs the log gave them, to its own state.

`server.root.make_engine` is the only place that looks at `settings.engine`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from server.api.auth.limits import Decision
from server.config import EngineKind
from server.market.feed import Tick

RevocationListener = Callable[[set[str]], None]


class EngineUnavailable(Exception):
    """The engine's backing service cannot be reached at start (one line for the operator)."""


class SharedLimiter(Protocol):
    async def check(self, key: str, per_minute: int, policy: str) -> Decision:
        """Take one request from `key`'s bucket on the shared clock (never raises for a backend failure)."""
        ...


class RevocationChannel(Protocol):
    def subscribe(self, listener: RevocationListener) -> None: ...

    async def publish(self, key_ids: set[str]) -> None:
        """Run this hub's listeners now, then tell the other hubs (best effort: their key refresh is the backstop)."""
        ...


class TickLog(Protocol):
    """Where ticks go between the feed and the market state when several hubs serve one market."""

    leading: bool  # this hub holds the feed lease

    async def load_seqs(self) -> dict[str, int]:
        """The last seq of each instrument id (a new hub continues from there)."""
        ...

    async def last_ticks(self) -> list[tuple[Tick, int]]:
        """The newest tick (and its seq) of each instrument still in the log, oldest first."""
        ...

    async def tail(self, enough: Callable[[list[int], float], bool]) -> list[list[tuple[Tick, int]]]:
        """The log's batches up to where this hub joins, oldest first, going back until `enough(ticks per
        instrument, seconds spanned)`: the resume history (server/market/history.py) of a hub that starts."""
        ...

    def start(self, on_batch: Callable[[list[tuple[Tick, int]]], None], on_lead: Callable[[bool], None]) -> None: ...

    async def lease_tried(self, timeout: float = 2.0) -> None:
        """After start(): wait (bounded) until this hub has tried once to take the feed lease."""
        ...

    def append(self, ticks: list[Tick], floors: list[int]) -> None:
        """A batch from this hub's feed (only while leading); `floors`: each tick's instrument's seq here."""
        ...

    def healthy(self) -> bool:
        """The log is reachable and this hub is not lagging."""
        ...

    async def stop(self) -> None: ...


class Engine(Protocol):
    kind: EngineKind
    node: str  # this hub's id (the lease holder's name in Redis; /readyz shows it)
    limiter: SharedLimiter | None  # None: the process-local Gcra is the only bucket store (no await on the hot path)
    revocations: RevocationChannel
    ticks: TickLog | None  # None: the feed writes this hub's market state directly

    def epoch(self, proposed: str) -> str:
        """The epoch of the tick history this hub serves: `proposed`, or the shared one that already exists."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def settle(aws: list[Awaitable[object]], timeout: float) -> None:
    """Run these to completion or give up after `timeout`: for shutdown steps that must not hang the
    hub's stop. Their errors and cancellations are absorbed; a cancellation of the caller is not."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    if not tasks:
        return
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    for task in done:
        if not task.cancelled():
            task.exception()  # retrieved: an error while stopping is not worth a traceback at exit
