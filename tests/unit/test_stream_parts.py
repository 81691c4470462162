"""Pure stream parts: states, registry, outgoing buffer, message parser, frames, AsyncAPI document."""

from __future__ import annotations

import orjson
import pytest
from websockets.frames import Frame, Opcode

from server.api.docs.asyncapi import build_asyncapi
from server.config import Settings
from server.core.errors import CloseCode
from server.stream.delivery.registry import SubscriptionRegistry
from server.stream.protocol.messages import ClientOp, ErrorCode, MessageError, Op, parse_client_message
from server.stream.protocol.outbuf import OutBuffer
from server.stream.protocol.session import MessageRate
from server.stream.protocol.states import ALLOWED, IllegalTransition, SessionState, check_transition
from server.stream.protocol.wire import text_frame

# --- states -------------------------------------------------------------------------


def test_allowed_transitions() -> None:
    check_transition(SessionState.CONNECTING, SessionState.OPEN)
    check_transition(SessionState.OPEN, SessionState.CLOSING)
    check_transition(SessionState.CLOSING, SessionState.CLOSED)
    check_transition(SessionState.CONNECTING, SessionState.REJECTED)


@pytest.mark.parametrize(("a", "b"), [
    (SessionState.CLOSED, SessionState.OPEN),
    (SessionState.CLOSING, SessionState.OPEN),
    (SessionState.REJECTED, SessionState.OPEN),
    (SessionState.OPEN, SessionState.CONNECTING),
])
def test_illegal_transitions_raise_a_named_error(a: SessionState, b: SessionState) -> None:
    with pytest.raises(IllegalTransition) as info:
        check_transition(a, b)
    assert info.value.current is a and info.value.target is b


def test_every_state_has_a_row() -> None:
    assert set(ALLOWED) == set(SessionState)


# --- registry -----------------------------------------------------------------------

def test_registry_groups_identical_sets_and_indexes_rows() -> None:
    reg: SubscriptionRegistry[str] = SubscriptionRegistry(5)
    reg.join("a", [0, 1])
    reg.join("b", [1, 0])
    reg.join("c", [2])
    assert reg.group_count == 2
    assert reg.subscribers(0) == ["a", "b"] and reg.subscribers(2) == ["c"] and reg.subscribers(4) == []
    reg.join("a", [2])  # replace the set
    assert reg.subscribers(0) == ["b"] and sorted(reg.subscribers(2)) == ["a", "c"]
    reg.leave("b")
    assert reg.subscribers(0) == [] and reg.by_row[0] == [] and reg.group_count == 1
    assert len(reg) == 2 and "b" not in reg


def test_registry_empty_set_member_and_bounds() -> None:
    reg: SubscriptionRegistry[str] = SubscriptionRegistry(3)
    reg.join("a", [])
    assert "a" in reg and reg.rows_of("a") == frozenset()
    with pytest.raises(IndexError):
        reg.join("b", [3])
    reg.leave("zz")  # unknown member: no-op


def test_registry_ready_writers_follow_hold_release_and_leave() -> None:
    reg: SubscriptionRegistry[str] = SubscriptionRegistry(3)
    reg.join("a", [0], print)
    reg.join("b", [0], len)
    (group,) = reg.by_row[0]
    assert group.ready == {"a": print, "b": len} and group.held() == []
    reg.hold("a")
    assert list(group.ready) == ["b"] and group.held() == ["a"]
    reg.join("a", [0])  # same set, joined while held: stays held
    assert group.held() == ["a"]
    reg.release("a", print)
    assert group.ready == {"b": len, "a": print} and group.held() == []
    reg.join("b", [1], len)  # moves group: ready there, gone from the old one
    assert list(group.ready) == ["a"] and list(reg.by_row[1][0].ready) == ["b"]
    reg.leave("a")
    assert reg.by_row[0] == []
    reg.hold("zz")  # unknown member: no-op
    reg.release("zz", print)


def test_registry_counts_each_members_frames_per_group() -> None:
    """The fan-out adds a batch's frames to its group once; each member's count is what went out while ready."""
    reg: SubscriptionRegistry[str] = SubscriptionRegistry(3)
    reg.join("a", [0, 1], print)
    reg.join("b", [0, 1], len)
    (group,) = reg.by_row[0]
    group.sent += 3  # a batch of three frames to both
    reg.hold("b")
    group.sent += 2  # b is held: not counted for b
    assert reg.drain("a") == 5 and reg.drain("a") == 0
    reg.release("b", len)
    group.sent += 1
    assert reg.drain("b") == 4
    reg.join("a", [2], print)  # moves group: the 1 it had since its drain is kept, the 4 below are not its
    group.sent += 4
    (other,) = reg.by_row[2]
    other.sent += 10
    assert reg.drain("a") == 1 + 10 and reg.leave("b") == 4
    other.sent += 1
    assert reg.leave("a") == 1 and reg.leave("a") == 0 and reg.drain("zz") == 0


# --- outgoing buffer -------------------------------------------------------------------

def test_outbuf_holds_latest_per_instrument_in_arrival_order() -> None:
    out = OutBuffer(cap=10, hard_cap=100)
    assert not out.over
    out.pause(3.0)
    assert out.hold([(1, b"a1"), (2, b"b1")]) == 0
    assert out.hold([(1, b"a2")]) == 1
    assert out.hold([(2, b"b2"), (1, b"a3")]) == 2
    assert len(out.pending) == 2  # bounded by the instrument count
    data, n = out.resume()
    assert (data, n) == (b"b2a3", 2) and not out.over and not out.pending
    assert out.resume() == (b"", 0)


def test_outbuf_grace_and_hard_cap() -> None:
    out = OutBuffer(cap=10, hard_cap=100)
    out.pause(5.0)
    out.pause(7.0)  # the first time counts
    assert not out.overdue(14.9, 10.0) and out.overdue(15.0, 10.0)
    assert not out.exceeds_hard_cap(100) and out.exceeds_hard_cap(101)
    with pytest.raises(ValueError):
        OutBuffer(cap=100, hard_cap=10)


def test_message_rate_is_a_burst_of_20_then_20_per_second() -> None:
    rate = MessageRate(20)
    assert all(rate.allow(0.0) for _ in range(20))
    assert not rate.allow(0.0)
    assert rate.allow(0.05)
    assert not rate.allow(0.05)


# --- messages ---------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"op":"ping"}', ClientOp(Op.PING)),
    (b'{"op":"ping","reqId":3}', ClientOp(Op.PING, (), 3)),
    (b'{"op":"subscribe","ids":["a","b","a"],"reqId":"x"}', ClientOp(Op.SUBSCRIBE, ("a", "b"), "x")),
    (b'{"op":"unsubscribe","ids":[]}', ClientOp(Op.UNSUBSCRIBE, ())),
])
def test_parse_valid(raw: bytes, expected: ClientOp) -> None:
    assert parse_client_message(raw) == expected


@pytest.mark.parametrize(("raw", "code", "req_id"), [
    (b"", ErrorCode.INVALID_JSON, None),
    (b"\xff\xfe", ErrorCode.INVALID_JSON, None),
    (b'"ping"', ErrorCode.INVALID_MESSAGE, None),
    (b'{"op":"ping","reqId":true}', ErrorCode.INVALID_MESSAGE, None),
    (b'{"op":"ping","reqId":{"a":1}}', ErrorCode.INVALID_MESSAGE, None),
    (b'{"reqId":"r"}', ErrorCode.INVALID_MESSAGE, "r"),
    (b'{"op":"SUBSCRIBE","reqId":"r"}', ErrorCode.UNKNOWN_OP, "r"),
    (b'{"op":"subscribe"}', ErrorCode.INVALID_MESSAGE, None),
    (b'{"op":"subscribe","ids":[null]}', ErrorCode.INVALID_MESSAGE, None),
    (b'{"op":"subscribe","ids":' + orjson.dumps(["x"] * 501) + b"}", ErrorCode.INVALID_MESSAGE, None),
])
def test_parse_invalid(raw: bytes, code: ErrorCode, req_id: object) -> None:
    result = parse_client_message(raw)
    assert isinstance(result, MessageError)
    assert result.code is code and result.req_id == req_id and result.detail


# --- frames -----------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536])
def test_text_frame_header(size: int) -> None:
    payload = b"x" * size
    frame = text_frame(payload)
    assert frame[0] == 0x81  # FIN + text
    assert frame[1] & 0x80 == 0  # unmasked
    assert frame.endswith(payload)
    header = len(frame) - size
    assert header == (2 if size < 126 else 4 if size < 65536 else 10)
    assert frame == Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=[])  # websockets' own bytes


# --- AsyncAPI ------------------------------------------------------------------------------

def test_asyncapi_describes_messages_ops_close_codes_and_refusals() -> None:
    doc = build_asyncapi(Settings(), Settings())  # its http and stream groups
    assert doc["asyncapi"].startswith("3.")
    channel = doc["channels"]["quotes"]
    assert channel["address"] == "/ws/quotes"
    assert set(channel["messages"]) >= {"Snapshot", "Tick", "Subscribed", "Pong", "Error",
                                         "Subscribe", "Unsubscribe", "Ping"}
    assert {str(int(c)) for c in CloseCode} <= set(channel["x-close-codes"])
    assert set(channel["x-handshake-refusals"]["statuses"]) >= {"401", "403", "404", "429"}
    assert set(doc["operations"]) >= {"subscribe", "unsubscribe", "ping", "receiveServerMessages"}
    for name in channel["messages"]:
        assert name in doc["components"]["schemas"]
    ingest = doc["channels"]["ingest"]  # SPEC 20: a dedicated data source's batches and their answers
    assert ingest["address"] == "/ws/ingest"
    assert set(ingest["messages"]) == {"IngestBatch", "IngestAnswer", "IngestError"}
    assert set(ingest["x-handshake-refusals"]["statuses"]) >= {"401", "403"}
    assert doc["operations"]["publish"]["channel"] == {"$ref": "#/channels/ingest"}
    for name in ingest["messages"]:
        assert name in doc["components"]["schemas"]
    assert "Problem" in doc["components"]["schemas"]
    orjson.dumps(doc)
