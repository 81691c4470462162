"""The memory engine: one hub, nothing shared, nothing installed. Every seam complete, in process.

- `MemoryLimiter`: this hub's `Gcra`, answered synchronously (never Pending.AWAIT);
- `MemoryTicks`: the tick bus, log and history of one hub: a feed batch is numbered (each instrument's seq
  counts on from this hub's) and handed to the tick path at once; this hub always leads; nothing ran before
  it, so there is nothing to continue from and no earlier history;
- `MemoryInbox`: a dedicated data source's batch takes this hub's `TickBuckets`, then goes onto the bus at once;
- `LocalRevocations`: revocations reach this hub's listeners (there is no other hub to tell).
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Callable

from server.config import EngineKind
from server.core.limits import Decision, Gcra, Rate
from server.core.login_throttle import LoginThrottle
from server.core.tick_buckets import TickBuckets
from server.engine import (
    ONCE_TTL_S,
    Limiter,
    LoginFailures,
    Numbered,
    Once,
    Put,
    RateFields,
    Replayed,
    ResumeHistory,
    RevocationChannel,
    RevocationListener,
    TickBus,
    TickInbox,
    TickLog,
)
from server.market.tick import Tick


class MemoryLimiter:
    def __init__(self, buckets: Gcra, clock: Callable[[], float]) -> None:
        self.buckets = buckets
        self.clock = clock
        self.take = buckets.take  # the hot path calls the Gcra's own method: one call less per request

    def decide(self, key: str, per_minute: int, now: float, policy: str) -> Decision:
        return self.buckets.check(key, per_minute, now, policy)

    async def check(self, key: str, per_minute: int, policy: str) -> Decision:
        return self.buckets.check(key, per_minute, self.clock(), policy)

    def join(self, key: str, rate: Rate) -> tuple[asyncio.Future[list[RateFields | None]], int]:
        """Never asked (`take` answers without awaiting); complete all the same: the answer, already there."""
        answers: asyncio.Future[list[RateFields | None]] = asyncio.get_running_loop().create_future()
        answers.set_result([self.buckets.take(key, rate, self.clock())])
        return answers, 0


class MemoryTicks:
    """The tick bus, tick log and resume-history source of a lone hub."""

    leading = True
    shared = False

    def __init__(self) -> None:
        self._on_batch: Callable[[Numbered], None] = _nowhere
        self._seq: dict[int, int] = {}  # row -> the last seq this bus gave

    # --- TickBus ----------------------------------------------------------------------------------------------
    def start(self, on_batch: Callable[[Numbered], None], on_lead: Callable[[bool], None]) -> None:
        self._on_batch = on_batch
        on_lead(True)

    def append(self, ticks: list[Tick], floors: list[int]) -> None:
        """Number the batch (each tick one above its instrument's last: `floors` or what this bus gave) and hand
        it on at once: the same call stack as the feed's, no loop iteration in between."""
        seqs = self._seq
        numbered: Numbered = []
        for tick, floor in zip(ticks, floors, strict=True):
            seq = seqs[tick.row] = max(floor, seqs.get(tick.row, 0)) + 1
            numbered.append((tick, seq))
        if numbered:
            self._on_batch(numbered)

    def healthy(self) -> bool:
        return True

    # --- TickLog ----------------------------------------------------------------------------------------------
    async def load_seqs(self) -> dict[str, int]:
        return {}

    async def last_ticks(self) -> Numbered:
        return []

    async def lease_tried(self, timeout: float = 2.0) -> None:
        return None

    # --- ResumeHistory ----------------------------------------------------------------------------------------
    async def tail(self, enough: Callable[[list[int], float], bool]) -> list[Numbered]:
        return []


def _nowhere(batch: Numbered) -> None:
    """Before `start`: a batch has no tick path to go to (the feed runs only after start)."""


class MemoryInbox:
    """Ingest on one hub: the account's bucket here, then the batch numbered and applied in the same call."""

    def __init__(self, bus: MemoryTicks, clock: Callable[[], float], most_kept: int = 100_000) -> None:
        """`most_kept`: Idempotency-Keys remembered at most (the oldest forgotten first, else after ONCE_TTL_S)."""
        self.bus, self.clock, self.most_kept = bus, clock, most_kept
        self.buckets = TickBuckets(clock)
        self.kept: OrderedDict[tuple[str, str], tuple[float, Replayed]] = OrderedDict()  # -> (until, kept)

    def put(self, account: str, ticks: list[Tick], rate: int, floors: list[int], once: Once | None = None) -> Put:
        now = self.clock()
        while self.kept and (len(self.kept) >= self.most_kept or next(iter(self.kept.values()))[0] <= now):
            self.kept.popitem(last=False)  # in the order kept: the oldest first
        if once is not None and (held := self.kept.get((account, once.key))) is not None:
            return held[1]
        wait = self.buckets.take(account, len(ticks), rate)
        if wait <= 0:
            self.bus.append(ticks, floors)
            if once is not None:
                self.kept[(account, once.key)] = (now + ONCE_TTL_S, Replayed(once.fingerprint, once.answer))
        return wait


class LocalRevocations:
    """Revocations reach this hub's listeners only (there is no other hub to tell)."""

    def __init__(self) -> None:
        self._listeners: list[RevocationListener] = []

    def subscribe(self, listener: RevocationListener) -> None:
        self._listeners.append(listener)

    async def publish(self, key_ids: set[str]) -> None:
        self.deliver(key_ids)

    def deliver(self, key_ids: set[str]) -> None:
        for listener in self._listeners:
            listener(key_ids)


class MemoryLogins:
    """`LoginFailures` of one hub: the throttle itself, answered at once."""

    def __init__(self, throttle: LoginThrottle) -> None:
        self.throttle = throttle

    async def wait_s(self, account: str) -> float:
        return self.throttle.wait_s(account)

    async def failed(self, account: str) -> bool:
        return self.throttle.failed(account)

    async def succeeded(self, account: str) -> None:
        self.throttle.succeeded(account)


class MemoryEngine:
    kind = EngineKind.MEMORY

    def __init__(self, buckets: Gcra, clock: Callable[[], float]) -> None:
        """`buckets`: this hub's GCRA buckets (the same store its own 401, per-user and handshake buckets use)."""
        self.node = os.urandom(6).hex()  # names this hub in /readyz
        self.limiter: Limiter = MemoryLimiter(buckets, clock)
        self.logins: LoginFailures = MemoryLogins(LoginThrottle(clock))
        self.revocations: RevocationChannel = LocalRevocations()
        ticks = MemoryTicks()  # the bus, the log and the history of one hub
        self.bus: TickBus = ticks
        self.ticks: TickLog = ticks
        self.history: ResumeHistory = ticks
        self.inbox: TickInbox = MemoryInbox(ticks, clock)

    def epoch(self, proposed: str) -> str:
        return proposed

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
