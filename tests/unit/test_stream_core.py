"""The stream core without an event loop: handshake decisions, protocol, fan-out, conflation, sweep."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from websockets.frames import Frame, Opcode

from server.core.errors import CloseCode
from server.core.keys import ApiKey
from server.core.limits import Gcra
from server.core.metrics import Registry
from server.market.catalogue import default_catalogue
from server.market.state import AppliedTick
from server.stream.core import StreamCore
from server.stream.delivery.resume_history import TickHistory
from server.stream.limits import StreamLimits
from server.stream.metrics import StreamMetrics
from server.stream.protocol.messages import tick_frame
from server.stream.protocol.session import Session
from server.stream.protocol.states import SessionState

CAT = default_catalogue()
IDS = [i.id for i in CAT.instruments]
KEYS = {
    "pro": ApiKey("key_pro", "professional", None, None, 0.0, None),
    "ent": ApiKey("key_ent", "enterprise", None, None, 0.0, None),
    "free": ApiKey("key_free", "free", None, None, 0.0, None),
}


@dataclass
class FakeState:
    version: int = 1
    updated: float = 1_700_000_000.0
    calls: list[list[int]] = field(default_factory=list)
    seq: list[int] = field(default_factory=lambda: [0] * len(IDS))

    def quotes(self, rows: list[int]) -> list[dict[str, Any]]:
        self.calls.append(rows)
        return [{"id": IDS[r]} for r in rows]


class Sink:
    """What a connection received: the list of writes, decoded into messages."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def __call__(self, data: bytes) -> None:
        self.writes.append(data)

    def messages(self) -> list[dict[str, Any]]:
        out = []
        for data in self.writes:
            buf = bytearray(data)
            while buf:
                frame = Frame.parse(_reader(buf), mask=False, max_size=None, extensions=[])
                f = _run(frame)
                if f.opcode is Opcode.PING:  # a keepalive ping riding a heartbeat's write: not a message
                    continue
                assert f.opcode is Opcode.TEXT and f.fin
                out.append(orjson.loads(f.data))
        return out

    def clear(self) -> None:
        self.writes.clear()


def _reader(buf: bytearray):  # type: ignore[no-untyped-def]
    def read_exact(n: int):  # type: ignore[no-untyped-def]
        chunk = bytes(buf[:n])
        del buf[:n]
        return chunk
        yield  # pragma: no cover

    return read_exact


def _run(gen):  # type: ignore[no-untyped-def]
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value


def make_core(**limits: Any) -> tuple[StreamCore, FakeState, Registry]:
    reg = Registry()
    state = FakeState()
    lim = StreamLimits(max_conn={"professional": 2, "enterprise": 50}, **limits)
    core = StreamCore(state, CAT, "epoch-1", lim, StreamMetrics(reg, lambda: 0.0), _lookup, Gcra(),
                      TickHistory(len(IDS), tick_frame), None)
    return core, state, reg


def _lookup(secret: str) -> ApiKey | None:
    return KEYS.get(secret)


def open_session(core: StreamCore, key: str = "pro", now: float = 0.0) -> tuple[Session, Sink]:
    sink = Sink()
    s = core.sessions.connect(sink, now)
    assert core.sessions.admit(s, f"/ws/quotes?key={key}") is None
    core.sessions.open(s)
    return s, sink


def tick(row: int, seq: int, price: float = 1.0) -> AppliedTick:
    return AppliedTick(row, IDS[row], price, 0.5, 1_700_000_000.5, seq)


# --- handshake ------------------------------------------------------------------

@pytest.mark.parametrize(("target", "status", "reason"), [
    ("/ws/other?key=pro", 404, "not_found"),
    ("/ws/quotes", 401, "missing_key"),
    ("/ws/quotes?key=", 401, "missing_key"),
    ("/ws/quotes?key=nope", 401, "invalid_key"),
    ("/ws/quotes?key=free", 403, "free_plan"),
])
def test_handshake_refusals_are_problems_with_reasons(target: str, status: int, reason: str) -> None:
    core, _, reg = make_core()
    s = core.sessions.connect(Sink(), 0.0)
    refusal = core.sessions.admit(s, target)
    assert refusal is not None and refusal.error.status == status and refusal.reason == reason
    problem = refusal.error.problem()
    assert problem["status"] == status and problem["code"] and problem["detail"]
    assert "nope" not in problem["detail"]  # the secret is never echoed
    assert s.state is SessionState.REJECTED
    assert b'reason="%s"} 1' % reason.encode() in reg.render()


def test_connection_limit_per_key_and_release_on_close() -> None:
    core, _, _ = make_core()
    a, _ = open_session(core)
    open_session(core)
    third = core.sessions.connect(Sink(), 0.0)
    refusal = core.sessions.admit(third, "/ws/quotes?key=pro")
    assert refusal is not None and refusal.error.status == 429 and refusal.error.code == "too_many_connections"
    open_session(core, "ent")  # other keys are counted separately
    core.sessions.closing(a, CloseCode.NORMAL)
    fourth = core.sessions.connect(Sink(), 0.0)
    assert core.sessions.admit(fourth, "/ws/quotes?key=pro") is None


def test_admitted_but_never_opened_releases_its_slot() -> None:
    core, _, _ = make_core()
    s = core.sessions.connect(Sink(), 0.0)
    assert core.sessions.admit(s, "/ws/quotes?key=pro") is None
    core.sessions.closed(s)
    assert core.sessions.per_key["key_pro"] == 0
    assert not core.sessions.by_id


# --- protocol -------------------------------------------------------------------

def test_snapshot_first_with_epoch_and_full_set() -> None:
    core, _, _ = make_core()
    _, sink = open_session(core)
    first = sink.messages()[0]
    assert first["type"] == "snapshot" and first["epoch"] == "epoch-1"
    assert [q["id"] for q in first["quotes"]] == IDS
    assert first["updated"].endswith("+08:00")


def test_snapshot_serialised_once_per_version_and_set() -> None:
    core, state, _ = make_core()
    open_session(core)
    open_session(core, "ent")
    assert len(state.calls) == 1
    state.version += 1
    open_session(core, "ent")
    assert len(state.calls) == 2


def test_subscribe_narrows_and_acks_then_snapshot() -> None:
    core, _, _ = make_core()
    s, sink = open_session(core)
    sink.clear()
    assert core.messages.on_text(s, b'{"op":"subscribe","ids":["wti","brent"],"reqId":"a1"}', 1.0) is None
    ack, snap = sink.messages()
    assert ack == {"type": "subscribed", "ids": ["brent", "wti"], "reqId": "a1"}  # catalogue order
    assert snap["type"] == "snapshot" and [q["id"] for q in snap["quotes"]] == ["brent", "wti"]
    sink.clear()
    core.fanout.on_ticks([tick(CAT.index["lpg"], 1), tick(CAT.index["wti"], 4)])
    assert [m["id"] for m in sink.messages()] == ["wti"]


def test_unknown_ids_reject_the_whole_request_and_keep_the_set() -> None:
    core, _, _ = make_core()
    s, sink = open_session(core)
    core.messages.on_text(s, b'{"op":"subscribe","ids":["brent"]}', 1.0)
    sink.clear()
    core.messages.on_text(s, b'{"op":"subscribe","ids":["wti","nope","zzz"],"reqId":9}', 1.1)
    (err,) = sink.messages()
    assert err["type"] == "error" and err["code"] == "unknown_ids" and err["reqId"] == 9
    assert "nope" in err["detail"] and "zzz" in err["detail"]
    assert core.registry.rows_of(s) == {CAT.index["brent"]}


def test_unsubscribe_removes_and_reports_full_set() -> None:
    core, _, _ = make_core()
    s, sink = open_session(core)
    sink.clear()
    core.messages.on_text(s, b'{"op":"unsubscribe","ids":["brent"]}', 1.0)
    ack = sink.messages()[0]
    assert ack["type"] == "subscribed" and ack["reqId"] is None
    assert ack["ids"] == [i for i in IDS if i != "brent"]


def test_ping_pong_echoes_req_id() -> None:
    core, _, _ = make_core()
    s, sink = open_session(core)
    sink.clear()
    core.messages.on_text(s, b'{"op":"ping","reqId":"p-1"}', 1_700_000_000.0)
    (pong,) = sink.messages()
    assert pong["type"] == "pong" and pong["reqId"] == "p-1" and pong["ts"].endswith("+08:00")


@pytest.mark.parametrize(("raw", "code"), [
    (b"{nope", "invalid_json"),
    (b"[1,2]", "invalid_message"),
    (b'{"op":"dance"}', "unknown_op"),
    (b'{"op":"subscribe","ids":"brent"}', "invalid_message"),
    (b'{"op":"subscribe","ids":[1]}', "invalid_message"),
    (b'{"op":7}', "invalid_message"),
])
def test_bad_messages_answer_errors_and_keep_the_session(raw: bytes, code: str) -> None:
    core, _, _ = make_core()
    s, sink = open_session(core)
    sink.clear()
    assert core.messages.on_text(s, raw, 1.0) is None
    (err,) = sink.messages()
    assert err["type"] == "error" and err["code"] == code
    assert s.is_open


def test_more_than_20_messages_a_second_is_a_policy_violation() -> None:
    core, _, _ = make_core()
    s, _ = open_session(core)
    results = [core.messages.on_text(s, b'{"op":"ping"}', 5.0 + i * 0.001) for i in range(21)]
    assert results[:20] == [None] * 20
    assert results[20] is CloseCode.POLICY_VIOLATION
    # a steady 20 per second is fine
    s2, _ = open_session(core, "ent")
    assert all(core.messages.on_text(s2, b'{"op":"ping"}', 10.0 + i * 0.05) is None for i in range(100))


# --- fan-out ----------------------------------------------------------------------

def test_each_tick_framed_once_and_one_write_per_connection_per_batch() -> None:
    core, _, reg = make_core()
    sessions = [open_session(core, "ent") for _ in range(3)]
    for _, sink in sessions:
        sink.clear()
    batch = [tick(0, 1), tick(1, 1), tick(2, 1)]
    core.fanout.on_ticks(batch)
    writes = [sink.writes for _, sink in sessions]
    assert all(len(w) == 1 for w in writes)
    assert writes[0][0] is writes[1][0] is writes[2][0]  # the same bytes object for everyone
    msgs = sessions[0][1].messages()
    assert msgs[0] == {"type": "tick", "id": IDS[0], "price": 1.0, "change": 0.5,
                       "ts": "2023-11-15T06:13:20.500+08:00", "seq": 1}
    assert b"market_ws_ticks_delivered_total 9" in reg.render()


def test_tick_touches_only_its_subscribers() -> None:
    core, _, _ = make_core()
    a, sink_a = open_session(core, "ent")
    b, sink_b = open_session(core, "ent")
    core.messages.on_text(a, b'{"op":"subscribe","ids":["brent"]}', 1.0)
    core.messages.on_text(b, b'{"op":"subscribe","ids":["wti"]}', 1.0)
    sink_a.clear()
    sink_b.clear()
    core.fanout.on_ticks([tick(CAT.index["brent"], 2), tick(CAT.index["wti"], 3)])
    assert [m["id"] for m in sink_a.messages()] == ["brent"]
    assert [m["id"] for m in sink_b.messages()] == ["wti"]


def test_slow_session_conflates_to_latest_per_instrument_then_resumes() -> None:
    core, _, reg = make_core()
    _fast, fast_sink = open_session(core, "ent")
    slow, slow_sink = open_session(core, "ent")
    fast_sink.clear()
    slow_sink.clear()
    core.sessions.paused(slow, 10.0)
    for seq in range(1, 6):
        core.fanout.on_ticks([tick(0, seq, price=float(seq)), tick(1, seq)])
    assert not slow_sink.writes
    assert len(fast_sink.writes) == 5
    assert b"market_ws_ticks_conflated_total 8" in reg.render()
    core.sessions.resumed(slow)
    assert len(slow_sink.writes) == 1  # held ticks go out in one write
    got = slow_sink.messages()
    assert sorted((m["id"], m["seq"]) for m in got) == sorted([(IDS[0], 5), (IDS[1], 5)])
    core.fanout.on_ticks([tick(0, 6)])
    assert slow_sink.messages()[-1]["seq"] == 6


def test_a_write_that_pauses_its_session_holds_it_from_the_next_batch_on() -> None:
    """A transport calls pause_writing from inside write: the fan-out goes on with the other sessions."""
    core, _, _ = make_core()
    slow, slow_sink = open_session(core, "ent")
    _fast, fast_sink = open_session(core, "ent")

    def pausing_write(data: bytes) -> None:
        slow_sink(data)
        core.sessions.paused(slow, 1.0)

    slow.write = pausing_write
    core.registry.release(slow, pausing_write)
    slow_sink.clear()
    fast_sink.clear()
    core.fanout.on_ticks([tick(0, 1)])
    assert len(slow_sink.writes) == 1 and len(fast_sink.writes) == 1
    core.fanout.on_ticks([tick(0, 2)])
    assert len(slow_sink.writes) == 1 and len(fast_sink.writes) == 2
    assert list(slow.out.pending) == [0]
    slow.write = slow_sink
    core.sessions.resumed(slow)
    assert [m["seq"] for m in slow_sink.messages()] == [1, 2]
    core.fanout.on_ticks([tick(0, 3)])
    assert [m["seq"] for m in slow_sink.messages()] == [1, 2, 3]


def test_a_write_that_pauses_its_session_does_not_hold_what_it_wrote() -> None:
    """The batch that a write handed to the transport before the transport paused is not held as well: when the
    transport drains with no batch in between, the client gets nothing twice (a duplicate seq, seen under load on
    the Redis engine: `brent: seq 1860 then 1860`)."""
    core, _, _ = make_core()
    slow, slow_sink = open_session(core, "ent")

    def pausing_write(data: bytes) -> None:
        slow_sink(data)
        core.sessions.paused(slow, 1.0)

    slow.write = pausing_write
    core.registry.release(slow, pausing_write)
    slow_sink.clear()
    core.fanout.on_ticks([tick(0, 1), tick(1, 1)])
    assert not slow.out.pending
    slow.write = slow_sink
    core.sessions.resumed(slow)
    assert sorted((m["id"], m["seq"]) for m in slow_sink.messages()) == [(IDS[0], 1), (IDS[1], 1)]
    core.fanout.on_ticks([tick(0, 2)])
    assert [(m["id"], m["seq"]) for m in slow_sink.messages()][-1] == (IDS[0], 2)
    assert len(slow_sink.messages()) == 3


def test_subscription_change_drops_held_ticks() -> None:
    core, _, _ = make_core()
    s, _sink = open_session(core)
    core.sessions.paused(s, 1.0)
    core.fanout.on_ticks([tick(0, 1)])
    assert s.out.pending
    core.messages.on_text(s, b'{"op":"subscribe","ids":["wti"]}', 1.5)
    assert not s.out.pending


def test_closing_session_gets_no_more_ticks() -> None:
    core, _, _ = make_core()
    s, sink = open_session(core)
    core.sessions.closing(s, CloseCode.GOING_AWAY)
    sink.clear()
    core.fanout.on_ticks([tick(0, 1)])
    assert not sink.writes
    assert s.state is SessionState.CLOSING
    core.sessions.closed(s)
    assert s.state is SessionState.CLOSED and not core.sessions.by_id


# --- sweep ------------------------------------------------------------------------

def test_sweep_pings_closes_slow_and_silent_sessions() -> None:
    core, _, reg = make_core(slow_close_s=10.0, heartbeat_s=0.0)  # no heartbeats: the sweep pings
    quiet, _ = open_session(core, "ent", now=0.0)
    slow, _ = open_session(core, "ent", now=0.0)
    stuck = core.sessions.connect(Sink(), 0.0)  # TCP open, no handshake
    core.sessions.paused(slow, 5.0)
    due = core.keepalive.sweep(9.9)
    assert due.ping == [] and due.close == []
    assert core.keepalive.sweep(10.0).close == [(stuck, CloseCode.POLICY_VIOLATION)]
    assert (slow, CloseCode.SLOW_CONSUMER) in core.keepalive.sweep(15.0).close
    due = core.keepalive.sweep(20.0)
    assert due.ping == [quiet]  # the slow one is being closed, not pinged
    quiet.ping_sent(20.0)
    assert core.keepalive.sweep(30.0).ping == []
    assert (quiet, CloseCode.INTERNAL_ERROR) not in core.keepalive.sweep(39.9).close
    assert (quiet, CloseCode.INTERNAL_ERROR) in core.keepalive.sweep(40.0).close
    quiet.pong_received()
    assert (quiet, CloseCode.INTERNAL_ERROR) not in core.keepalive.sweep(40.0).close
    core.sessions.closing(slow, CloseCode.SLOW_CONSUMER)
    assert b"market_ws_slow_consumer_closes_total 1" in reg.render()


def test_sessions_of_revoked_keys() -> None:
    core, _, _ = make_core()
    a, _ = open_session(core, "pro")
    open_session(core, "ent")
    assert core.sessions.of_keys({"key_pro"}) == [a]


# --- per-IP handshake bucket and per-key bookkeeping -------------------------------

def test_handshakes_are_limited_per_client_ip() -> None:
    core, _, reg = make_core(handshake_rate=3)
    sessions = core.sessions
    for _ in range(3):
        assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "10.0.0.1", None, 0.0) is None
    refused = sessions.connect(Sink(), 0.0)
    refusal = sessions.admit_peer(refused, "10.0.0.1", None, 0.0)
    assert refusal is not None and refusal.reason == "rate_limited" and refused.state is SessionState.REJECTED
    problem = refusal.error.problem()
    assert refusal.error.status == 429 and problem["code"] == "rate_limited" and problem["retryAfter"] == 20
    assert ("retry-after", "20") in refusal.error.headers  # 60/3 s until the next handshake
    assert b'reason="rate_limited"} 1' in reg.render()
    assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "10.0.0.2", None, 0.0) is None  # another IP, own bucket
    assert sessions.admit_peer(sessions.connect(Sink(), 20.0), "10.0.0.1", None, 20.0) is None  # refilled


def test_forwarded_for_counts_only_from_a_trusted_proxy() -> None:
    import ipaddress

    core, _, _ = make_core(handshake_rate=1, trusted_proxies=(ipaddress.ip_network("10.9.0.0/16"),))
    sessions = core.sessions
    assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "10.9.0.1", "203.0.113.5", 0.0) is None
    assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "10.9.0.1", "203.0.113.6", 0.0) is None  # another client
    assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "10.9.0.1", "203.0.113.5", 0.0) is not None
    assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "192.0.2.1", "203.0.113.7", 0.0) is None
    assert sessions.admit_peer(sessions.connect(Sink(), 0.0), "192.0.2.1", "203.0.113.8", 0.0) is not None  # untrusted


def test_per_key_count_keeps_no_zero_entries() -> None:
    core, _, _ = make_core()
    admitted = core.sessions.connect(Sink(), 0.0)
    assert core.sessions.admit(admitted, "/ws/quotes?key=pro") is None
    assert core.sessions.per_key == {"key_pro": 1}
    core.sessions.closed(admitted)  # admitted, but the connection dropped before the 101 went out
    assert core.sessions.per_key == {}
    a, _ = open_session(core)
    b, _ = open_session(core)
    core.sessions.closing(a)
    core.sessions.closed(a)
    assert core.sessions.per_key == {"key_pro": 1}
    core.sessions.closed(b)
    assert core.sessions.per_key == {}
