"""Engines (SPEC 12): where the state that several hubs must share lives, chosen once by the composition root.

Six seams, each a small protocol with a complete memory implementation (server/engine/memory.py: one hub,
nothing shared, nothing installed) and a complete Redis implementation (server/engine/redis_*.py), after
Centrifugo's broker.go / presence.go split. The node never asks which engine it has: no part is None, and
the same code path serves both.

- `limiter` (the limiter store): where the GCRA buckets of keys, client IPs and routes live. Memory: this
  hub's `Gcra`, answered synchronously. Redis: one Lua script on Redis time, so every hub draws from one
  bucket; it answers `Pending.AWAIT` to the synchronous calls (the caller then awaits `check`, or `join`'s future:
  the requests of one bucket in one loop iteration share one script call), and while
  Redis cannot be reached it answers synchronously from this hub's buckets.
- `bus` (the tick bus): feed batches in, numbered batches out to every hub's tick path. Memory: numbered and
  handed back at once. Redis: a Lua script numbers them and appends them to a Redis Stream that every hub
  (the leader too) reads.
- `ticks` (the tick log): what a starting hub continues from (each instrument's last seq and newest tick)
  and who runs the feed (the lease). Memory: nothing to continue from; this hub always leads. Redis: the
  stream and its seq hash; the lease key.
- `history` (the resume history's source): the batches before this hub started, for resumes (SPEC 7).
  Memory: none (nothing ran before). Redis: the stream's tail.
- `revocations` (the revocation channel): publishing runs this hub's listeners at once and, on Redis, tells
  every other hub over pub/sub.
- `inbox` (a dedicated data source's batches, SPEC 20): the account's ticks a second, then onto the tick bus from
  any hub. Memory: this hub's `TickBuckets`, then the bus at once. Redis: one Lua script takes the shared bucket and
  keeps the batch in a Redis Stream inbox, which the lease holder consumes into the tick log
  (server/engine/redis_inbox.py), so every hub accepts ingest.
- `logins` (failed logins per account, issue 45): memory: this hub's `LoginThrottle`; Redis: one hash per account
  updated by a Lua script on Redis time (server/engine/redis_logins.py), this hub's throttle while Redis is away.

On Redis one object (`RedisTicks`) is the bus, the log and the history, as one Redis Stream is all three;
on memory `MemoryTicks` is. `server.root.make_engine` is the only place that looks at `settings.engine`.

May import `core`, `config` and `market` (layer 3, beside `store`, which it never imports).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from server.config import EngineKind, ServiceUnreachable
from server.core.limits import Decision, Rate
from server.market.tick import Tick

RevocationListener = Callable[[set[str]], None]
RateFields = tuple[tuple[str, str], ...]  # an allowed request's rate-limit header fields (Gcra.take)
Numbered = list[tuple[Tick, int]]  # the ticks of one batch with the seqs the bus gave them


class EngineUnavailable(ServiceUnreachable):
    """The engine's backing service cannot be reached at start (one line for the operator)."""


class Pending(enum.Enum):
    """What a synchronous limiter call answers when the answer needs I/O: await `Limiter.check` (or, for `take`,
    the future `Limiter.join` gives) instead."""

    AWAIT = "await"


class Limiter(Protocol):
    """The limiter store: GCRA buckets (`key:<id>`, `ip:<addr>`, `<route bucket>:<addr>`), memory or shared."""

    def decide(self, key: str, per_minute: int, now: float, policy: str) -> Decision | Pending:
        """Take one request from the bucket now, if that needs no I/O (`Gcra.check`); else Pending.AWAIT."""
        ...

    def take(self, key: str, rate: Rate, now: float) -> RateFields | Pending | None:
        """The hot path's `decide` (`rate`: made once by `Gcra.rate`): an allowed request's header fields, None for
        a refusal (the bucket left as it was: the pipeline then answers the 429), or Pending.AWAIT (`Gcra.take`)."""
        ...

    def join(self, key: str, rate: Rate) -> tuple[asyncio.Future[list[RateFields | None]], int]:
        """`take` when it answered Pending.AWAIT: the future of the answers (header fields, or None for a refusal)
        of the requests on this bucket that share one store call, in order, and this request's place among them.
        The future never fails: on a backend failure the Redis store answers from this hub's buckets."""
        ...

    async def check(self, key: str, per_minute: int, policy: str) -> Decision:
        """Take one request from the bucket, awaiting the store if it has to (never raises for a backend failure:
        the Redis store falls back to this hub's buckets)."""
        ...


class RevocationChannel(Protocol):
    def subscribe(self, listener: RevocationListener) -> None: ...

    async def publish(self, key_ids: set[str]) -> None:
        """Run this hub's listeners now, then tell the other hubs (best effort: their key refresh is the backstop)."""
        ...


class TickBus(Protocol):
    """Feed batches in (the lease holder's), numbered batches out (every hub's)."""

    def start(self, on_batch: Callable[[Numbered], None], on_lead: Callable[[bool], None]) -> None:
        """Deliver every numbered batch to `on_batch`, in log order, and lease changes to `on_lead`."""
        ...

    def append(self, ticks: list[Tick], floors: list[int]) -> None:
        """A batch from this hub's feed (only while leading); `floors`: each tick's instrument's seq here."""
        ...

    def healthy(self) -> bool:
        """The bus is reachable and this hub is not lagging."""
        ...


class TickLog(Protocol):
    """What a joining hub continues from, and which hub runs the feed."""

    leading: bool  # this hub holds the feed lease (runs the feed, anchors evidence)
    shared: bool  # other hubs apply the same log (a market snapshot boundary must be the same on each)

    async def load_seqs(self) -> dict[str, int]:
        """The last seq of each instrument id (a new hub continues from there)."""
        ...

    async def last_ticks(self) -> Numbered:
        """The newest tick (and its seq) of each instrument still in the log, oldest first."""
        ...

    async def lease_tried(self, timeout: float = 2.0) -> None:
        """After the bus started: wait (bounded) until this hub has tried once to take the feed lease."""
        ...


class InboxUnavailable(Exception):
    """A batch could not be kept (Redis unreachable): nothing of it was kept (or, after a timeout, perhaps it was)."""


class InboxFull(InboxUnavailable):
    """A batch was not kept: the inbox holds --ingest-inbox-max batches the feed lease holder has not taken yet (none
    holds it, or it is behind)."""


ONCE_TTL_S = 86_400  # how long a batch's Idempotency-Key is remembered (docs/ingest.md)


@dataclass(frozen=True, slots=True)
class Once:
    """A batch sent with an Idempotency-Key: kept with its answer under (account, key) for ONCE_TTL_S, in the same
    step as the batch itself, so a batch sent again is answered from there and kept once."""

    key: str
    fingerprint: str  # the body's digest: the same key with another body is not the same batch
    answer: bytes  # what the first request was answered


@dataclass(frozen=True, slots=True)
class Replayed:
    """What `put` answers for a key already kept: the fingerprint and answer kept with it (nothing kept now)."""

    fingerprint: str
    answer: bytes


Put = float | Replayed


class TickInbox(Protocol):
    """A dedicated data source's batches (SPEC 20) onto the tick bus, from any hub."""

    def put(self, account: str, ticks: list[Tick], rate: int, floors: list[int],
            once: Once | None = None) -> Put | Awaitable[Put]:
        """Take the batch's ticks from the account's bucket (`rate` ticks a second) and keep the batch for the tick
        log: 0.0 once kept, else the seconds to wait (nothing kept). `floors`: each tick's instrument's seq on this
        hub (memory's numbering; on Redis the lease holder's own are used). `once`: the batch's Idempotency-Key;
        if the account kept that key already, `Replayed` and nothing else happens. Raises InboxUnavailable."""
        ...


class ResumeHistory(Protocol):
    async def tail(self, enough: Callable[[list[int], float], bool]) -> list[Numbered]:
        """The log's batches up to where this hub joins, oldest first, going back until `enough(ticks per
        instrument, seconds spanned)`: the resume history (stream/delivery/resume_history.py) of a hub that starts."""
        ...


class LoginFailures(Protocol):
    """Failed logins per account (server/core/login_throttle.py's rule), memory or shared."""

    async def wait_s(self, account: str) -> float:
        """Seconds until the account may try again (0: now)."""
        ...

    async def failed(self, account: str) -> bool:
        """Count a failure; True when it locks the account (once per lockout)."""
        ...

    async def succeeded(self, account: str) -> None: ...


class Engine(Protocol):
    kind: EngineKind
    node: str  # this hub's id (the lease holder's name in Redis; /readyz shows it)
    limiter: Limiter
    logins: LoginFailures
    revocations: RevocationChannel
    bus: TickBus
    ticks: TickLog
    history: ResumeHistory
    inbox: TickInbox

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
