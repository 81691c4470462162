"""The client protocol of a session (SPEC 7 and 14, docs/stream.md): subscribe and unsubscribe (with candles,
and with since/epoch to resume), ping, and the error replies. Each answer is one write to the session.

A subscription change runs in one call on the loop thread: no tick batch can land between the session's join of
its new set and the replay, so the replay (seqs since+1 .. current) and the live ticks that follow meet with no
gap and no duplicate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from time import perf_counter

from server.core.errors import CloseCode
from server.market.catalogue import Catalogue
from server.market.timefmt import iso
from server.stream.delivery.candle_frames import CandleFrames, K
from server.stream.delivery.registry import SubscriptionRegistry
from server.stream.delivery.replay import Replay
from server.stream.delivery.snapshots import Snapshots
from server.stream.metrics import StreamMetrics
from server.stream.protocol import messages as msg
from server.stream.protocol.messages import Payload
from server.stream.protocol.session import Session
from server.stream.protocol.wire import text_frame

INTERVAL_INDEX = {name: k for k, name in enumerate(msg.CANDLE_INTERVALS)}
# a /ws/ingest batch (its key's account, its key, the lines) -> the answer's JSON (SPEC 20, IngestApi.frame)
IngestFrame = Callable[[str | None, str | None, bytes], Awaitable[bytes]]
Resolve = Callable[[str, float], int | None]  # a continuous id (`methanol.c.0`) at an instant -> its contract's row


class ClientMessages:
    def __init__(self, catalogue: Catalogue, registry: SubscriptionRegistry[Session],
                 candle_registry: SubscriptionRegistry[Session], snapshots: Snapshots, replay: Replay,
                 candles: CandleFrames | None, metrics: StreamMetrics, resolve: Resolve | None = None,
                 ingest: IngestFrame | None = None) -> None:
        """`resolve`: the contract a continuous id names now (SPEC 19, `MainSeries.resolve`; None: ids only);
        `ingest`: a /ws/ingest session's batch of JSON lines (its key's account, the lines) -> the answer's JSON
        (SPEC 20: the ingest route's, `{accepted, rejected}` or `{error}`); None: no dedicated data sources."""
        self.index = catalogue.index
        self.resolve = resolve
        self.visible = catalogue.visible
        self.ids = catalogue.ids  # the catalogue's list: a reserved row's id changes when it is bound (SPEC 20)
        self.registry = registry
        self.candle_registry = candle_registry
        self.snapshots = snapshots
        self.replay = replay
        self.candles = candles
        self.metrics = metrics
        self.ingest = ingest
        self._answering: set[asyncio.Task[None]] = set()  # /ws/ingest batches waiting for their answers

    def on_text(self, session: Session, data: Payload, now: float) -> CloseCode | None:
        """Handle one client message; a close code means: close the session with it."""
        if session.ingest:  # a batch of ticks (SPEC 20): the account's ticks a second limit it, not the message rate
            if session.is_open and self.ingest is not None:
                batch = data.encode() if isinstance(data, str) else bytes(data)
                self._answer(session, self.ingest(session.owner, session.key_id, batch))
            return None
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
            self._change_subscription(session, parsed, now)
        return None

    def _answer(self, session: Session, answer: Awaitable[bytes]) -> None:
        """Write a batch's answer when it is there (Redis: once kept there). Tasks run in the order they were made
        and the engine's calls are answered in the order they were sent, so a session's answers keep its batches'
        order, and so do their ticks in the log."""
        async def write() -> None:
            frame = await answer
            if session.is_open:
                session.write(text_frame(frame))

        task = asyncio.get_running_loop().create_task(write())
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

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

    def _refusal(self, op: msg.ClientOp, owner: str | None) -> bytes | None:
        """The error frame of a subscription change that names unknown ids (another account's declared instrument
        too, SPEC 20: as if it did not exist), or since ids not in ids; else None."""
        index, visible = self.index, self.visible
        unknown = [i for i in (*op.ids, *(op.since or ())) if i not in index or not visible(index[i], owner)]
        if unknown:
            detail = "Unknown instrument ids: " + ", ".join(u[:64] for u in dict.fromkeys(unknown[:20]))
            return text_frame(msg.error_payload(msg.ErrorCode.UNKNOWN_IDS, detail, op.req_id))
        if op.since is not None and not op.since.keys() <= set(op.ids):
            extra = [i for i in op.since if i not in op.ids]
            detail = "'since' names ids that are not in 'ids': " + ", ".join(e[:64] for e in extra[:20])
            return text_frame(msg.error_payload(msg.ErrorCode.INVALID_MESSAGE, detail, op.req_id))
        return None

    def _resolved(self, op: msg.ClientOp, now: float) -> tuple[msg.ClientOp, dict[str, str]]:
        """``op`` with each continuous id (`methanol.c.0`, `methanol.n.1`; in ids and since) replaced by the contract
        it names at ``now`` (SPEC 19), and those names. Resolved once, as Databento's live API does: the session then
        holds the contract, which a later roll does not change (a new subscribe resolves again)."""
        if self.resolve is None:
            return op, {}
        index, names = self.index, {}
        for i in (*op.ids, *(op.since or ())):
            if i not in index and i not in names:
                row = self.resolve(i, now)
                if row is not None:
                    names[i] = self.ids[row]
        if not names:
            return op, {}
        since = None if op.since is None else {names.get(i, i): seq for i, seq in op.since.items()}
        return replace(op, ids=tuple(names.get(i, i) for i in op.ids), since=since), names

    def _change_subscription(self, session: Session, op: msg.ClientOp, now: float) -> None:
        started = perf_counter()
        op, resolved = self._resolved(op, now)
        refusal = self._refusal(op, session.owner)
        if refusal is not None:
            session.write(refusal)
            return
        named = frozenset(self.index[i] for i in op.ids)
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
        replay = self.replay.missed(rows, op.since, op.epoch) if op.since is not None and op.epoch is not None \
            else None
        # from here to the write, nothing yields: see the module's docstring
        writer = session.ready_write()
        self.registry.join(session, rows, writer)
        self.candle_registry.join(session, channels, writer)
        session.out.drop_pending()  # the snapshot (or the replay, which holds them) supersedes held ticks
        current_candles = self._current_candles(channels)
        if op.since is None:
            session.write(text_frame(msg.subscribed_payload(ids, op.req_id, None, intervals, resolved))
                          + self.snapshots.frame(rows) + current_candles)
            return
        self.metrics.resumes.inc((("recovered", "true" if replay is not None else "false"),))
        if replay is None:
            session.write(text_frame(msg.subscribed_payload(ids, op.req_id, False, intervals, resolved))
                          + self.snapshots.frame(rows) + current_candles)
            return
        session.out.grant(len(replay))  # a replay may pass the hard cap once (it is bounded by MAX_REPLAY_BYTES)
        session.write(text_frame(msg.subscribed_payload(ids, op.req_id, True, intervals, resolved)) + replay
                      + current_candles)
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


