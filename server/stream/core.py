"""The quote stream without I/O: sessions, the client protocol, fan-out and housekeeping.

Push inputs in (a handshake target, a client text message, a tick batch, the
time), and it writes complete frames through each session's injected
``write`` and returns decisions (refuse, close with a code, ping) for the
connection pump to carry out. No sockets, no awaits: tests drive it directly.

Invariants:
- only OPEN sessions are in ``registry``; a session leaves it in the same
  call that moves it out of OPEN, so no tick frame follows a close frame;
- everything runs on the hub's single event-loop thread, and every write is
  whole frames, so writes to one connection never interleave mid-frame;
- ``write`` never removes a member from the registry synchronously (a
  transport reports a lost connection later, through the loop), but it may
  hold one (a transport calls ``pause_writing`` from inside ``write``): the
  fan-out iterates a copy of each group's ready writers;
- a session is ready in its groups exactly while its buffer is under the cap
  (``paused`` holds it, ``resumed`` releases it): the fan-out calls the ready
  writers only, and holds the batch for the others.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter as Tally
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol

from server.api.auth.limits import Gcra
from server.core.client_ip import client_address
from server.core.errors import ApiError, CloseCode
from server.core.metrics import Registry
from server.core.usage import UsageMeter
from server.market.catalogue import Catalogue
from server.market.history import TickHistory
from server.market.state import AppliedTick, MarketState
from server.market.timefmt import iso
from server.store.keys import ApiKey
from server.stream import messages as msg
from server.stream.candles import GRACE_S, CandleFrames, K
from server.stream.handshake import Refusal, decide
from server.stream.messages import Payload
from server.stream.outbuf import OutBuffer
from server.stream.registry import Group, SubscriptionRegistry
from server.stream.session import Session
from server.stream.states import SessionState
from server.stream.wire import PING_FRAME, text_frame

KEEPALIVE_INTERVAL_S = 20.0
KEEPALIVE_TIMEOUT_S = 20.0
HANDSHAKE_TIMEOUT_S = 10.0
SLOW_CLOSE_S = 10.0
MAX_REPLAY_BYTES = 8 * 1024 * 1024  # one resume's replay: about 75,000 ticks; a bigger gap gets a snapshot
HEARTBEAT_S = 5.0  # SPEC 14 default (--heartbeat-s; 0 turns heartbeats off)
BEAT_WAIT_S = 0.25  # a heartbeat waits at most this long (and a quarter of its interval) for a tick batch to ride
INTERVAL_INDEX = {name: k for k, name in enumerate(msg.CANDLE_INTERVALS)}


class QuoteSource(Protocol):
    """What the stream reads from the market state (MarketState satisfies it)."""

    version: int
    updated: float
    seq: Any  # per row: the seq of its last applied tick (numpy int64 array in MarketState)

    def quotes(self, rows: list[int]) -> list[dict]: ...  # type: ignore[type-arg]


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


class StreamMetrics:
    def __init__(self, registry: Registry, open_sessions: Callable[[], float]) -> None:
        registry.gauge("market_ws_connections", "Open WebSocket sessions.", open_sessions)
        self.delivered = registry.counter("market_ws_ticks_delivered_total", "Tick frames written to clients.")
        self.conflated = registry.counter(
            "market_ws_ticks_conflated_total", "Ticks superseded in a slow client's buffer before it read them.")
        self.slow_closes = registry.counter(
            "market_ws_slow_consumer_closes_total", "Sessions closed 4008 for staying over the buffer cap.")
        self.refusals = registry.counter("market_ws_handshake_refusals_total", "Refused handshakes by reason.")
        self.closes = registry.counter("market_ws_server_closes_total", "Sessions the server closed, by code.")
        self.fanout = registry.histogram("market_ws_fanout_seconds", "Time to frame and write one tick batch.")
        self.resumes = registry.counter("market_ws_resumes_total", "Subscribes with since/epoch, by recovered.")
        self.replayed = registry.counter("market_ws_ticks_replayed_total", "Tick frames replayed by resumes.")
        self.replay_time = registry.histogram(
            "market_ws_resume_seconds", "Server time of a recovered resume: from its subscribe to the replay written.")
        self.candles = registry.counter("market_ws_candles_delivered_total", "Candle frames written to clients.")
        self.heartbeats = registry.counter("market_ws_heartbeats_total", "Heartbeat frames written to clients.")


@dataclass(frozen=True, slots=True)
class Sweep:
    ping: list[Session]
    close: list[tuple[Session, CloseCode]]


class StreamCore:
    def __init__(
        self,
        state: QuoteSource,
        catalogue: Catalogue,
        epoch: str,
        limits: StreamLimits,
        metrics: StreamMetrics,
        lookup: Callable[[str], ApiKey | None],
        limiter: Gcra | None = None,
        history: TickHistory | None = None,
    ) -> None:
        self.state = state
        self.catalogue = catalogue
        self.epoch = epoch
        self.limits = limits
        self.metrics = metrics
        self.lookup = lookup
        self.limiter = limiter if limiter is not None else Gcra()
        self.ids = [inst.id for inst in catalogue.instruments]
        self.history = history if history is not None else TickHistory(len(self.ids), msg.tick_frame)
        self.all_rows = frozenset(range(len(self.ids)))
        self.registry: SubscriptionRegistry[Session] = SubscriptionRegistry(len(self.ids))
        # SPEC 14 live candles: channel row * K + k (k in msg.CANDLE_INTERVALS) -> subscribed sessions
        self.candle_registry: SubscriptionRegistry[Session] = SubscriptionRegistry(len(self.ids) * K)
        self.candles = CandleFrames(state) if isinstance(state, MarketState) else None
        self._next_run = -math.inf  # the stream clock: candle runs at whole seconds + GRACE_S
        self._next_beat = -math.inf  # heartbeats at multiples of limits.heartbeat_s
        self._beats: dict[Group[Session], bytes] | None = None  # a beat's frames waiting for the next tick batch
        self._beats_due = math.inf  # ... or until then, when they go out alone
        self._beat_now = 0.0  # when it was built (the pings' sent time)
        self.sessions: dict[int, Session] = {}  # every session not yet CLOSED
        self.per_key: Tally[str] = Tally()  # key id -> OPEN sessions
        self._next_id = itertools.count(1)
        self._snapshots: dict[frozenset[int], bytes] = {}
        self._snapshots_version = -1
        self.meter: UsageMeter | None = None  # issue 32: console usage (set by the root)

    # --- lifecycle -----------------------------------------------------------
    def connect(self, write: Callable[[bytes], object], now: float) -> Session:
        session = Session(next(self._next_id), write, now, OutBuffer(self.limits.buffer_cap, self.limits.hard_cap))
        self.sessions[session.id] = session
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
        session.key_id, session.plan = verdict.id, verdict.plan
        self.per_key[verdict.id] += 1  # counted now, so two handshakes in one read cannot both pass
        return None

    def refuse(self, session: Session, reason: str) -> None:
        """A handshake the protocol layer refused before `admit` (bad upgrade request)."""
        session.transition(SessionState.REJECTED)
        self.metrics.refusals.inc((("reason", reason),))

    def open(self, session: Session) -> None:
        """The 101 went out: join the full set and send the first snapshot."""
        session.transition(SessionState.OPEN)
        meter = self.meter  # issue 32: count the key's connection and each write to it
        if meter is not None and session.key_id is not None:
            meter.ws_opened(session.key_id)
            session.write = meter.counting(session.key_id, session.write)
        self.registry.join(session, self.all_rows, self._writer(session))
        session.write(self.snapshot_frame(self.all_rows))

    @staticmethod
    def _writer(session: Session) -> Callable[[bytes], object] | None:
        """The session's write while it is ready (under its buffer cap), else None (held)."""
        return session.write if session.out.over_since is None else None

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
        self.sessions.pop(session.id, None)

    def _leave_open(self, session: Session) -> None:
        self.registry.leave(session)
        self.candle_registry.leave(session)
        session.out.drop_pending()
        if session.key_id is not None:
            self._release(session.key_id)

    def _release(self, key_id: str) -> None:
        """One session of the key is gone; a key with none left has no entry (keys come and go)."""
        left = self.per_key[key_id] - 1
        if left > 0:
            self.per_key[key_id] = left
        else:
            self.per_key.pop(key_id, None)

    # --- client messages -----------------------------------------------------
    def on_text(self, session: Session, data: Payload, now: float) -> CloseCode | None:
        """Handle one client message; a close code means: close the session with it."""
        if not session.rate.allow(now):
            return CloseCode.POLICY_VIOLATION
        if not session.is_open:
            return None
        parsed = msg.parse_client_message(data)
        if isinstance(parsed, msg.MessageError):
            session.write(text_frame(msg.error_payload(parsed.code, parsed.detail, parsed.req_id)))
        elif parsed.op is msg.Op.PING:
            session.write(text_frame(msg.pong_payload(iso(now), parsed.req_id)))
        else:
            self._change_subscription(session, parsed)
        return None

    def on_control(self, session: Session, now: float) -> CloseCode | None:
        """A client ping or pong frame (the protocol answers pings); it counts toward the message rate."""
        return None if session.rate.allow(now) else CloseCode.POLICY_VIOLATION

    def on_binary(self, session: Session, now: float) -> CloseCode | None:
        if not session.rate.allow(now):
            return CloseCode.POLICY_VIOLATION
        if session.is_open:
            session.write(text_frame(msg.error_payload(
                msg.ErrorCode.UNSUPPORTED_BINARY, "Send client messages as JSON text frames.", None)))
        return None

    def _change_subscription(self, session: Session, op: msg.ClientOp) -> None:
        started = perf_counter()
        index = self.catalogue.index
        unknown = [i for i in (*op.ids, *(op.since or ())) if i not in index]
        if unknown:
            detail = "Unknown instrument ids: " + ", ".join(u[:64] for u in dict.fromkeys(unknown[:20]))
            session.write(text_frame(msg.error_payload(msg.ErrorCode.UNKNOWN_IDS, detail, op.req_id)))
            return
        if op.since is not None and not op.since.keys() <= set(op.ids):
            extra = [i for i in op.since if i not in op.ids]
            detail = "'since' names ids that are not in 'ids': " + ", ".join(e[:64] for e in extra[:20])
            session.write(text_frame(msg.error_payload(msg.ErrorCode.INVALID_MESSAGE, detail, op.req_id)))
            return
        named = frozenset(index[i] for i in op.ids)
        current = self.registry.rows_of(session)
        channels = self._channels(session, op, named, current)
        if op.op is msg.Op.SUBSCRIBE:
            rows = named
        elif op.candles is None:
            rows = current - named
        else:
            rows = current  # unsubscribe with candles removes intervals only
        ids = [self.ids[r] for r in sorted(rows)]
        intervals = None if op.candles is None else [
            name for k, name in enumerate(msg.CANDLE_INTERVALS) if any(ch % K == k for ch in channels)]
        replay = self._replay(rows, op.since, op.epoch) if op.since is not None and op.epoch is not None else None
        # Everything below runs in this one call on the loop thread: no tick batch can land between the
        # join and the replay, so the replay (seqs since+1 .. current) and the live ticks that follow it
        # meet with no gap and no duplicate.
        writer = self._writer(session)
        self.registry.join(session, rows, writer)
        self.candle_registry.join(session, channels, writer)
        session.out.drop_pending()  # the snapshot (or the replay, which holds them) supersedes held ticks
        current_candles = self._current_candles(channels)
        if op.since is None:
            session.write(text_frame(msg.subscribed_payload(ids, op.req_id, None, intervals))
                          + self.snapshot_frame(rows) + current_candles)
            return
        self.metrics.resumes.inc((("recovered", "true" if replay is not None else "false"),))
        if replay is None:
            session.write(text_frame(msg.subscribed_payload(ids, op.req_id, False, intervals))
                          + self.snapshot_frame(rows) + current_candles)
            return
        session.out.grant(len(replay))  # a replay may pass the hard cap once (it is bounded by MAX_REPLAY_BYTES)
        session.write(text_frame(msg.subscribed_payload(ids, op.req_id, True, intervals)) + replay + current_candles)
        self.metrics.replay_time.observe(perf_counter() - started)

    def _channels(self, session: Session, op: msg.ClientOp, named: frozenset[int],
                  current: frozenset[int]) -> frozenset[int]:
        """The session's candle channels after ``op`` (SPEC 14): a subscribe sets ids x candles (none without
        candles); an unsubscribe without candles drops the ids' channels, with candles those intervals of the
        ids (of every subscribed id when ids is empty)."""
        held = self.candle_registry.rows_of(session)
        if op.op is msg.Op.SUBSCRIBE:
            ks = [INTERVAL_INDEX[c] for c in op.candles or ()]
            return frozenset(row * K + k for row in named for k in ks)
        if op.candles is None:
            return frozenset(ch for ch in held if ch // K not in named)
        drop = {INTERVAL_INDEX[c] for c in op.candles}
        rows = named or current
        return frozenset(ch for ch in held if not (ch // K in rows and ch % K in drop))

    def _current_candles(self, channels: frozenset[int]) -> bytes:
        """Each channel's current bucket (final: false) when it has ticks, in catalogue then interval order."""
        if not channels or self.candles is None:
            return b""
        frames = [self.candles.current(ch) for ch in sorted(channels)]
        return b"".join(f for f in frames if f is not None)

    def _replay(self, rows: frozenset[int], since: dict[str, int], epoch: str) -> bytes | None:
        """The missed ticks of every row, or None when any of them is not held (or the epoch differs)."""
        if epoch != self.epoch:
            return None
        current = self.state.seq
        parts: list[bytes] = []
        size = count = 0
        for row in sorted(rows):
            seen = since.get(self.ids[row])
            if seen is None:
                return None  # nothing known of this id: it needs the snapshot
            now = int(current[row])
            part = self.history.replay(row, seen, now)
            if part is None:
                return None
            size += len(part)
            count += now - seen
            if size > MAX_REPLAY_BYTES:
                return None
            parts.append(part)
        self.metrics.replayed.inc(amount=count)
        return b"".join(parts)

    # --- server messages -----------------------------------------------------
    def snapshot_frame(self, rows: frozenset[int]) -> bytes:
        """The snapshot frame for a set of rows, built once per data version and set."""
        if self._snapshots_version != self.state.version:
            self._snapshots.clear()
            self._snapshots_version = self.state.version
        frame = self._snapshots.get(rows)
        if frame is None:
            if len(self._snapshots) > 64:
                self._snapshots.clear()
            updated = self.state.updated
            ordered = sorted(rows)
            quotes = self.state.quotes(ordered)
            seq = self.state.seq
            seqs = {self.ids[r]: int(seq[r]) for r in ordered}
            payload = msg.snapshot_payload(iso(updated) if updated > 0 and math.isfinite(updated) else None,
                                           self.epoch, seqs, quotes)
            frame = self._snapshots[rows] = text_frame(payload)
        return frame

    def on_ticks(self, ticks: list[AppliedTick]) -> None:
        """Fan one bus batch out: each tick framed once, one write per connection per batch."""
        started = perf_counter()
        by_row = self.registry.by_row
        touched: dict[Any, list[tuple[int, bytes]]] = {}
        frames = self.history.add(ticks)  # framed once: kept for resumes, and sent live below
        for t, frame in zip(ticks, frames, strict=True):
            groups = by_row[t.row]
            if not groups:
                continue
            item = (t.row, frame)
            for group in groups:
                items = touched.get(group)
                if items is None:
                    touched[group] = [item]
                else:
                    items.append(item)
        beats, self._beats, self._beats_due = self._beats, None, math.inf
        delivered = conflated = beats_sent = 0
        for group, items in touched.items():
            data = items[0][1] if len(items) == 1 else b"".join([frame for _, frame in items])
            beat = beats.pop(group, None) if beats else None
            if beat is None:
                delivered += len(items) * self._write_ready(group, data)
            else:  # the waiting heartbeat heads the batch's write: the same send, still after what it accounts for
                written = self._write_beat(group, beat + data)
                delivered += len(items) * written
                beats_sent += written
            for session in group.held():
                conflated += session.out.hold(items)
                if beat is not None:
                    session.out.hold_last(beat)
        if delivered:
            self.metrics.delivered.inc(amount=delivered)
        if conflated:
            self.metrics.conflated.inc(amount=conflated)
        if beats_sent:
            self.metrics.heartbeats.inc(amount=beats_sent)
        if beats:
            self._send_beats(beats)  # groups this batch did not touch: their heartbeat alone
        if self.candles is not None:
            finals = self.candles.on_ticks(ticks)
            if finals:
                self._fan_candles(finals)
        if touched:
            self.metrics.fanout.observe(perf_counter() - started)

    def _fan_candles(self, frames: list[tuple[int, bytes]]) -> None:
        """Candle frames out as ticks go: each built once, joined once per subscription group, one write per
        connection; a slow connection holds the latest frame per channel (as it holds ticks per instrument)."""
        by_ch = self.candle_registry.by_row
        touched: dict[Any, list[tuple[int, bytes]]] = {}
        for ch, frame in frames:
            for group in by_ch[ch]:
                items = touched.get(group)
                if items is None:
                    touched[group] = [(-1 - ch, frame)]  # held under a negative key: rows are >= 0
                else:
                    items.append((-1 - ch, frame))
        delivered = 0
        for group, items in touched.items():
            data = items[0][1] if len(items) == 1 else b"".join([frame for _, frame in items])
            delivered += len(items) * self._write_ready(group, data)
            for session in group.held():
                session.out.hold(items)
        if delivered:
            self.metrics.candles.inc(amount=delivered)

    # --- the stream clock (server/stream/clock.py calls on_clock at next_wakeup) -------------------------------------
    def next_wakeup(self, now: float) -> float:
        """When on_clock is due next: the next candle run (whole second + GRACE_S), or heartbeat."""
        run = math.floor(now - GRACE_S) + 1 + GRACE_S
        if self.candles is not None and self.candles.deferred_to is not None:
            run = min(run, self.candles.deferred_to)
        beat = self.limits.heartbeat_s
        if beat > 0:
            return min(run, (math.floor(now / beat) + 1) * beat, self._beats_due)
        return run

    def on_clock(self, now: float) -> None:
        """Candle runs and heartbeats that are due at ``now``."""
        candles = self.candles
        deferred = candles is not None and candles.deferred_to is not None and now >= candles.deferred_to
        if now >= self._next_run or deferred:
            if now >= self._next_run:
                self._next_run = math.floor(now - GRACE_S) + 1 + GRACE_S
            if candles is not None:
                frames = candles.on_run(now, self.candle_registry.by_row)
                if frames:
                    self._fan_candles(frames)
        if self._beats is not None and now >= self._beats_due:  # no tick batch came to carry them
            beats, self._beats, self._beats_due = self._beats, None, math.inf
            self._send_beats(beats)
        beat = self.limits.heartbeat_s
        if beat > 0 and now >= self._next_beat:
            first = self._next_beat == -math.inf
            self._next_beat = (math.floor(now / beat) + 1) * beat
            if not first or now % beat < 0.25:
                self.heartbeat(math.floor(now / beat + 1e-9) * beat, now)  # ts: the beat's instant

    def heartbeat(self, ts: float, now: float) -> None:
        """SPEC 14: every session gets its subscribed ids' last seqs as of ``ts``, one frame per subscription
        group, built now. The frames then wait for the next tick batch (at most BEAT_WAIT_S, or a quarter of the
        interval): each group's heads that batch's write, so a heartbeat costs no send of its own; a group the
        batch does not touch gets its frame alone. Either way it is written after the ticks it accounts for (every
        tick frame is written when its batch is applied, on this thread; a slow connection holds the heartbeat
        behind its held ticks)."""
        if self._beats is not None:  # the previous beat found no batch within its wait
            beats, self._beats = self._beats, None
            self._send_beats(beats)
        self._beat_now = now
        stamp = iso(ts)
        seq = self.state.seq
        ids = self.ids
        self._beats = {
            group: text_frame(msg.heartbeat_payload(stamp, {ids[r]: int(seq[r]) for r in sorted(group.rows)}))
            for group in self.registry.groups() if group.members}
        self._beats_due = now + min(BEAT_WAIT_S, self.limits.heartbeat_s / 4)

    def _send_beats(self, beats: dict[Group[Session], bytes]) -> None:
        """Heartbeat frames alone, to the groups that still exist (a group left by all its members is gone)."""
        sent = 0
        for group, frame in beats.items():
            if group.members:
                sent += self._write_beat(group, frame)
                for session in group.held():
                    session.out.hold_last(frame)
        if sent:
            self.metrics.heartbeats.inc(amount=sent)

    @staticmethod
    def _write_ready(group: Group[Session], data: bytes) -> int:
        """``data`` to every ready member of ``group``; returns how many writes went out. Walks a copy: a write
        may hold its session (the transport calls pause_writing from inside write), after that write."""
        failed = 0
        writers = tuple(group.ready.values())
        for write in writers:
            try:
                write(data)
            except RuntimeError:  # transport already closed; its connection_lost is queued
                failed += 1
        return len(writers) - failed

    def _ping_after(self) -> float | None:
        """Keepalive pings ride the heartbeats' writes when a beat comes at least once per keepalive interval: a
        session is pinged with the first beat at least this long after its last ping (or its open), so every
        keepalive_interval_s exactly when that is a multiple of the beat (20 s and 5 s), the first one 17.5-22.5 s
        after the open. None: the sweep pings."""
        beat, keep = self.limits.heartbeat_s, self.limits.keepalive_interval_s
        return keep - beat / 2 if 0 < beat <= keep else None

    def _write_beat(self, group: Group[Session], data: bytes) -> int:
        """A write that carries a heartbeat, to every ready member of ``group``; the members due a keepalive ping
        (and awaiting no pong) get a ping frame after it, in the same write: the pong timeout runs from the beat.
        Returns how many writes went out."""
        after = self._ping_after()
        if after is None:
            return self._write_ready(group, data)
        now, pinged = self._beat_now, data + PING_FRAME
        failed = 0
        members = tuple(group.ready.items())
        for session, write in members:
            try:
                if session.ping_sent_at is None and now - session.last_ping_at >= after:
                    write(pinged)
                    session.ping_sent(now)
                else:
                    write(data)
            except RuntimeError:
                failed += 1
        return len(members) - failed

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
            session.write(held)

    # --- time ------------------------------------------------------------------
    def sweep(self, now: float) -> Sweep:
        """Keepalive pings due, and sessions to close: pong overdue, slow consumer, stuck handshake."""
        lim = self.limits
        by_beats = self._ping_after() is not None
        ping: list[Session] = []
        close: list[tuple[Session, CloseCode]] = []
        for s in self.sessions.values():
            if s.state is SessionState.OPEN:
                if s.out.overdue(now, lim.slow_close_s):
                    close.append((s, CloseCode.SLOW_CONSUMER))
                elif s.pong_overdue(now, lim.keepalive_timeout_s):
                    close.append((s, CloseCode.INTERNAL_ERROR))
                elif not by_beats and s.ping_due(now, lim.keepalive_interval_s):
                    ping.append(s)  # (with heartbeats at least once per keepalive interval, the pings ride them)
            elif s.state is SessionState.CONNECTING and now - s.created_at >= lim.handshake_timeout_s:
                close.append((s, CloseCode.POLICY_VIOLATION))
        return Sweep(ping, close)

    def sessions_of_keys(self, key_ids: set[str]) -> list[Session]:
        return [s for s in self.sessions.values() if s.is_open and s.key_id in key_ids]

    def open_sessions(self) -> list[Session]:
        return [s for s in self.sessions.values() if s.is_open]

    @property
    def open_count(self) -> int:
        return len(self.registry)  # every OPEN session is a member (possibly of the empty set)
