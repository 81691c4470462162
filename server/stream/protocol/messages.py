"""The /ws/quotes message vocabulary: client ops parsed and validated, server messages encoded.

Pure functions over bytes and values. A bad client message is never an
exception: `parse_client_message` returns a `MessageError` (code, detail and
the reqId when one could be read), which the session answers with an `error`
message while the connection stays open.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import orjson

from server.market.timefmt import iso
from server.stream.protocol.wire import text_frame

MAX_IDS = 500  # more ids than the catalogue could ever hold; bounds the work per message
MAX_EPOCH = 128  # characters
MAX_SEQ = 2**53  # seqs a JSON client can hold exactly
CANDLE_INTERVALS = ("1m", "5m", "15m", "1h", "1d")  # SPEC 14: the intervals a subscribe's candles may list
ReqId = str | int | None
Payload = str | bytes | bytearray | memoryview


class Op(StrEnum):
    SUBSCRIBE = "subscribe"
    UNSUBSCRIBE = "unsubscribe"
    PING = "ping"


class ErrorCode(StrEnum):
    """`code` of an `error` message (the session stays open after each)."""

    INVALID_JSON = "invalid_json"
    INVALID_MESSAGE = "invalid_message"  # not an object, or a field of the wrong type
    UNKNOWN_OP = "unknown_op"
    UNKNOWN_IDS = "unknown_ids"
    UNSUPPORTED_BINARY = "unsupported_binary"


@dataclass(frozen=True, slots=True)
class ClientOp:
    op: Op
    ids: tuple[str, ...] = ()
    req_id: ReqId = None
    since: dict[str, int] | None = None  # resume (subscribe only): id -> last seq the client saw
    epoch: str | None = None  # the epoch those seqs belong to (given exactly when since is)
    candles: tuple[str, ...] | None = None  # SPEC 14: candle intervals for the ids (None: the field was absent)


@dataclass(frozen=True, slots=True)
class MessageError:
    code: ErrorCode
    detail: str
    req_id: ReqId = None


def parse_client_message(data: Payload) -> ClientOp | MessageError:
    """Validate one client text message; never raises."""
    try:
        msg = orjson.loads(data)
    except orjson.JSONDecodeError:
        return MessageError(ErrorCode.INVALID_JSON, "The message is not valid JSON.")
    if not isinstance(msg, dict):
        return MessageError(ErrorCode.INVALID_MESSAGE, "A message must be a JSON object with an 'op' field.")
    req_id = msg.get("reqId")
    if req_id is not None and (isinstance(req_id, bool) or not isinstance(req_id, (str, int))):
        return MessageError(ErrorCode.INVALID_MESSAGE, "'reqId' must be a string or an integer.")
    if isinstance(req_id, str) and len(req_id) > 128:
        return MessageError(ErrorCode.INVALID_MESSAGE, "'reqId' must be at most 128 characters.")
    op = msg.get("op")
    if not isinstance(op, str):
        return MessageError(ErrorCode.INVALID_MESSAGE, "'op' must be a string.", req_id)
    try:
        kind = Op(op)
    except ValueError:
        detail = f"Unknown op {op[:64]!r}; use subscribe, unsubscribe or ping."
        return MessageError(ErrorCode.UNKNOWN_OP, detail, req_id)
    if kind is Op.PING:
        return ClientOp(kind, (), req_id)
    op_ = _with_ids(kind, msg.get("ids"), req_id)
    if not isinstance(op_, MessageError) and "candles" in msg:
        op_ = _with_candles(op_, msg["candles"])
    if isinstance(op_, MessageError) or ("since" not in msg and "epoch" not in msg):
        return op_
    return _with_resume(op_, msg.get("since"), msg.get("epoch"))


def _with_candles(op: ClientOp, candles: Any) -> ClientOp | MessageError:
    if not isinstance(candles, list) or not all(isinstance(c, str) and c in CANDLE_INTERVALS for c in candles):
        return MessageError(ErrorCode.INVALID_MESSAGE, "'candles' must be a list of intervals, each one of "
                            f"{', '.join(CANDLE_INTERVALS)}.", op.req_id)
    return ClientOp(op.op, op.ids, op.req_id, op.since, op.epoch,
                    tuple(c for c in CANDLE_INTERVALS if c in candles))  # interval order, duplicates dropped


def _with_ids(kind: Op, ids: Any, req_id: ReqId) -> ClientOp | MessageError:
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return MessageError(ErrorCode.INVALID_MESSAGE, "'ids' must be a list of instrument id strings.", req_id)
    if len(ids) > MAX_IDS:
        return MessageError(ErrorCode.INVALID_MESSAGE, f"'ids' may hold at most {MAX_IDS} ids.", req_id)
    return ClientOp(kind, tuple(dict.fromkeys(ids)), req_id)


def _with_resume(op: ClientOp, since: Any, epoch: Any) -> ClientOp | MessageError:
    """`since` and `epoch` (a resume): shapes only; the core checks the ids against the catalogue and `ids`."""
    def bad(detail: str) -> MessageError:
        return MessageError(ErrorCode.INVALID_MESSAGE, detail, op.req_id)

    if op.op is not Op.SUBSCRIBE:
        return bad("'since' and 'epoch' go with subscribe only.")
    if since is None or epoch is None:
        return bad("'since' and 'epoch' go together: the last seq seen per id, and the epoch of those seqs.")
    if not isinstance(epoch, str) or not epoch or len(epoch) > MAX_EPOCH:
        return bad(f"'epoch' must be a non-empty string of at most {MAX_EPOCH} characters "
                   "(the epoch of the snapshot the seqs belong to).")
    if not isinstance(since, dict):
        return bad("'since' must be an object mapping instrument id to the last seq seen (an integer >= 0).")
    if len(since) > MAX_IDS:
        return bad(f"'since' may hold at most {MAX_IDS} ids.")
    for key, seq in since.items():
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ:
            return bad(f"'since' of {key[:64]!r} must be an integer >= 0 (the last seq seen), not {str(seq)[:32]}.")
    return ClientOp(op.op, op.ids, op.req_id, dict(since), epoch, op.candles)


# --- server messages (JSON text payloads) -------------------------------------


def tick_payload(instrument_id: str, price: float, change: float, ts: str, seq: int,
                 book: dict[str, Any] | None = None) -> bytes:
    """`book`: a futures tick's `bid`, `ask`, `oi` and `vol` (the day's volume), after `change` (SPEC 19)."""
    msg = {"type": "tick", "id": instrument_id, "price": price, "change": change}
    if book:
        msg.update(book)
    msg["ts"], msg["seq"] = ts, seq
    return orjson.dumps(msg)


class AppliedTickLike(Protocol):
    id: str
    price: float
    change: float
    ts: float
    seq: int
    book: dict[str, Any] | None
    roll: dict[str, Any] | None


def tick_frame(t: AppliedTickLike) -> bytes:
    """The one frame of a tick, sent live and kept for resumes (server.stream.delivery.resume_history)."""
    return text_frame(tick_payload(t.id, t.price, t.change, iso(t.ts), t.seq, t.book))


def roll_frame(t: AppliedTickLike) -> bytes:
    """The roll frame a product's first tick under a new main contract carries (SPEC 19): sent live right before
    the tick's frame, in the same write; not kept for resumes (a replayed tick's `contract` names the main)."""
    return text_frame(orjson.dumps(t.roll)) if t.roll is not None else b""



def snapshot_payload(updated: str | None, epoch: str, seqs: dict[str, int], quotes: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"type": "snapshot", "updated": updated, "epoch": epoch, "seqs": seqs, "quotes": quotes})


def subscribed_payload(ids: list[str], req_id: ReqId, recovered: bool | None = None,
                       candles: list[str] | None = None, resolved: dict[str, str] | None = None) -> bytes:
    """`recovered` is present exactly when the subscribe carried `since`/`epoch`; `candles` exactly when the
    message carried `candles` (then: every interval the session now has candles of, for at least one id);
    `resolved` exactly when the message named continuous ids (each -> the contract id it named, SPEC 19)."""
    msg: dict[str, Any] = {"type": "subscribed", "ids": ids, "reqId": req_id}
    if candles is not None:
        msg["candles"] = candles
    if resolved:
        msg["resolved"] = resolved
    if recovered is not None:
        msg["recovered"] = recovered
    return orjson.dumps(msg)


def heartbeat_payload(ts: str, seqs: dict[str, int]) -> bytes:
    return orjson.dumps({"type": "heartbeat", "ts": ts, "seqs": seqs})


def status_payload(venue: str, status: str, ts: str) -> bytes:
    return orjson.dumps({"type": "status", "venue": venue, "status": status, "ts": ts})


def pong_payload(ts: str, req_id: ReqId) -> bytes:
    return orjson.dumps({"type": "pong", "ts": ts, "reqId": req_id})


def error_payload(code: ErrorCode, detail: str, req_id: ReqId) -> bytes:
    return orjson.dumps({"type": "error", "code": code.value, "detail": detail, "reqId": req_id})
