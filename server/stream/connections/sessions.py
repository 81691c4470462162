"""Sessions from connect to close: the handshake's admission, the per-key count, the fan-out index's members.

Invariants:
- only OPEN sessions are in the subscription registries; a session leaves them in the same call that moves it
  out of OPEN, so no tick frame follows a close frame;
- a session is ready in its groups exactly while its buffer is under the cap (``paused`` holds it, ``resumed``
  releases it): the fan-out calls the ready writers only, and holds the batch for the others;
- ``per_key`` counts a key's sessions from its admission to its close, and keeps no zero entries.
"""

from __future__ import annotations

import itertools
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Sequence

from server.core.client_ip import client_address
from server.core.errors import ApiError, CloseCode
from server.core.keys import ApiKey
from server.core.limits import Gcra
from server.core.usage import UsageMeter
from server.stream.delivery.registry import SubscriptionRegistry
from server.stream.delivery.snapshots import Snapshots
from server.stream.limits import StreamLimits
from server.stream.metrics import StreamMetrics
from server.stream.protocol.handshake import Refusal, decide
from server.stream.protocol.outbuf import OutBuffer
from server.stream.protocol.session import Session
from server.stream.protocol.states import SessionState


class Sessions:
    def __init__(self, limits: StreamLimits, metrics: StreamMetrics, lookup: Callable[[str], ApiKey | None],
                 limiter: Gcra, registry: SubscriptionRegistry[Session],
                 candle_registry: SubscriptionRegistry[Session], snapshots: Snapshots,
                 meter: UsageMeter | None = None, default_rows: Iterable[int] | None = None) -> None:
        """`limiter`: the hub's local buckets (the per-IP handshake rate); `registry`, `candle_registry`: the
        fan-out's indexes of ticks and candle channels, which an OPEN session joins and a closing one leaves;
        `meter`: the console's usage per key (a key's connections, and the frames delivered to its sessions)."""
        self.limits = limits
        self.metrics = metrics
        self.lookup = lookup
        self.limiter = limiter
        self.registry = registry
        self.candle_registry = candle_registry
        self.snapshots = snapshots
        self.meter = meter
        if meter is not None:
            meter.collect_with(self._collect)
        # what a new session streams until it subscribes: the listed instruments, not the futures contracts (SPEC 19)
        self.all_rows = frozenset(range(registry.n_rows) if default_rows is None else default_rows)
        self.by_id: dict[int, Session] = {}  # every session not yet CLOSED
        self.per_key: Tally[str] = Tally()  # key id -> sessions admitted and not yet closed
        self._next_id = itertools.count(1)

    # --- the handshake ---------------------------------------------------------------------------------------
    def connect(self, write: Callable[[bytes], object], now: float) -> Session:
        session = Session(next(self._next_id), write, now, OutBuffer(self.limits.buffer_cap, self.limits.hard_cap))
        self.by_id[session.id] = session
        return session

    def admit_peer(self, session: Session, peer: str, forwarded: str | None, now: float) -> Refusal | None:
        """The per-client-IP handshake bucket, checked before the key (so a flood reads no storage)."""
        ip = client_address(peer, forwarded, self.limits.trusted_proxies)
        decision = self.limiter.check("ws:" + ip, self.limits.handshake_rate, now, "ws-handshake")
        if decision.allowed:
            return None
        session.transition(SessionState.REJECTED)
        self.metrics.refusals.inc((("reason", "rate_limited"),))
        return Refusal("rate_limited", ApiError(
            "rate_limited",
            f"More than {decision.limit} WebSocket handshakes per minute from this address; "
            f"retry in {decision.retry_after_s} s.",
            headers=decision.headers(),
            extra={"retryAfter": decision.retry_after_s},
        ))

    def admit(self, session: Session, target: str, header_keys: Sequence[str] = ()) -> Refusal | None:
        """Decide the handshake; on success the session is bound to its key (call `open` after the 101).
        `header_keys`: the values of the request's X-SERVICE-Key headers."""
        verdict = decide(target, header_keys, self.lookup, self.limits.max_conn, lambda kid: self.per_key[kid])
        if isinstance(verdict, Refusal):
            session.transition(SessionState.REJECTED)
            self.metrics.refusals.inc((("reason", verdict.reason),))
            return verdict
        session.key_id, session.plan, session.owner = verdict.id, verdict.plan, verdict.owner
        session.ingest = verdict.scope == "ingest"  # decide() let it in on /ws/ingest only
        self.per_key[verdict.id] += 1  # counted now, so two handshakes in one read cannot both pass
        return None

    def refuse(self, session: Session, reason: str) -> None:
        """A handshake the protocol layer refused before `admit` (bad upgrade request)."""
        session.transition(SessionState.REJECTED)
        self.metrics.refusals.inc((("reason", reason),))

    def open(self, session: Session) -> None:
        """The 101 went out: join the full set and send the first snapshot."""
        session.transition(SessionState.OPEN)
        meter = self.meter
        if meter is not None and session.key_id is not None:
            meter.ws_opened(session.key_id)
            meter.ws_delivered(session.key_id, 0 if session.ingest else 1)  # the snapshot below
        if session.ingest:  # publishes only: no subscription, no snapshot (SPEC 20)
            return
        self.registry.join(session, self.all_rows, session.ready_write())
        session.write(self.snapshots.frame(self.all_rows))

    # --- the close -------------------------------------------------------------------------------------------
    def closing(self, session: Session, code: CloseCode | None = None) -> None:
        """The session sent or received a close frame: no more ticks."""
        if session.state is SessionState.OPEN:
            self._leave_open(session)
            session.transition(SessionState.CLOSING)
            if code is not None:
                self.metrics.closes.inc((("code", str(int(code))),))
                if code is CloseCode.SLOW_CONSUMER:
                    self.metrics.slow_closes.inc()

    def closed(self, session: Session) -> None:
        """The TCP connection is gone."""
        if session.state is SessionState.OPEN:
            self._leave_open(session)
        elif session.state is SessionState.CONNECTING and session.key_id is not None:
            self._release(session.key_id)  # admitted, 101 never sent
        if session.state is not SessionState.CLOSED:
            session.transition(SessionState.CLOSED)
        self.by_id.pop(session.id, None)

    def _leave_open(self, session: Session) -> None:
        frames = self.registry.leave(session) + self.candle_registry.leave(session)
        session.out.drop_pending()
        if session.key_id is not None:
            self._release(session.key_id)
            if self.meter is not None:
                self.meter.ws_delivered(session.key_id, frames)

    def _collect(self, meter: UsageMeter) -> None:
        """The frames the fan-out sent to each open keyed session since the last take (the meter's collector)."""
        for session in self.by_id.values():
            if session.key_id is not None and session.is_open:
                meter.ws_delivered(session.key_id, self.registry.drain(session) + self.candle_registry.drain(session))

    def _release(self, key_id: str) -> None:
        """One session of the key is gone; a key with none left has no entry (keys come and go)."""
        left = self.per_key[key_id] - 1
        if left > 0:
            self.per_key[key_id] = left
        else:
            self.per_key.pop(key_id, None)

    # --- the transport's buffer ------------------------------------------------------------------------------
    def paused(self, session: Session, now: float) -> None:
        """The connection's buffer passed its cap: hold its ticks from now on (conflated per instrument)."""
        session.out.pause(now)
        self.registry.hold(session)
        self.candle_registry.hold(session)

    def resumed(self, session: Session) -> None:
        """The connection drained below its low-water mark: send the held (conflated) ticks."""
        held, count = session.out.resume()
        self.registry.release(session, session.write)  # before the write: it may hold the session again
        self.candle_registry.release(session, session.write)
        if held and session.is_open:
            if count:
                self.metrics.delivered.inc(amount=count)
                if self.meter is not None and session.key_id is not None:
                    self.meter.ws_delivered(session.key_id, count)
            session.write(held)

    def replanned(self, key_of: Callable[[str], ApiKey | None]) -> list[Session]:
        """Open sessions take their key's current plan (`key_of`: id -> the active key, None once revoked: the
        revocation closes those); returns the sessions the new plan does not cover, the newest over its cap."""
        out: list[Session] = []
        count: dict[str, int] = {}
        for session in self.all_open():  # oldest first (sessions are numbered as they connect)
            key_id = session.key_id
            key = key_of(key_id) if key_id is not None else None
            if key is None or key_id is None:
                continue
            session.plan = key.plan
            count[key_id] = count.get(key_id, 0) + 1
            if count[key_id] > self.limits.max_conn.get(key.plan, 0):
                out.append(session)
        return out

    # --- who is there ----------------------------------------------------------------------------------------
    def of_keys(self, key_ids: set[str]) -> list[Session]:
        return [s for s in self.by_id.values() if s.is_open and s.key_id in key_ids]

    def all_open(self) -> list[Session]:
        return [s for s in self.by_id.values() if s.is_open]

    @property
    def open_count(self) -> int:
        return len(self.registry)  # every OPEN session is a member (possibly of the empty set)
