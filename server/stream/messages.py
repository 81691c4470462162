"""The /ws/quotes message vocabulary: client ops parsed and validated, server messages encoded.

Pure functions over bytes and values. A bad client message is never an
exception: `parse_client_message` returns a `MessageError` (code, detail and
the reqId when one could be read), which the session answers with an `error`
message while the connection stays open.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

MAX_IDS = 500  # more ids than the catalogue could ever hold; bounds the work per message
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
    return _with_ids(kind, msg.get("ids"), req_id)


def _with_ids(kind: Op, ids: Any, req_id: ReqId) -> ClientOp | MessageError:
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return MessageError(ErrorCode.INVALID_MESSAGE, "'ids' must be a list of instrument id strings.", req_id)
    if len(ids) > MAX_IDS:
        return MessageError(ErrorCode.INVALID_MESSAGE, f"'ids' may hold at most {MAX_IDS} ids.", req_id)
    return ClientOp(kind, tuple(dict.fromkeys(ids)), req_id)


# --- server messages (JSON text payloads) -------------------------------------


def tick_payload(instrument_id: str, price: float, change: float, ts: str, seq: int) -> bytes:
    return orjson.dumps({"type": "tick", "id": instrument_id, "price": price, "change": change, "ts": ts, "seq": seq})


def snapshot_payload(updated: str | None, epoch: str, quotes: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"type": "snapshot", "updated": updated, "epoch": epoch, "quotes": quotes})


def subscribed_payload(ids: list[str], req_id: ReqId) -> bytes:
    return orjson.dumps({"type": "subscribed", "ids": ids, "reqId": req_id})


def pong_payload(ts: str, req_id: ReqId) -> bytes:
    return orjson.dumps({"type": "pong", "ts": ts, "reqId": req_id})


def error_payload(code: ErrorCode, detail: str, req_id: ReqId) -> bytes:
    return orjson.dumps({"type": "error", "code": code.value, "detail": detail, "reqId": req_id})
