"""Webhook requests in each platform's own format, their signatures, and how to read the answer. Pure.

- WeCom group robot: `{"msgtype": "markdown", "markdown": {"content"}}` (content <= 4096 bytes).
- DingTalk robot: `{"msgtype": "markdown", "markdown": {"title", "text"}}`; with a secret the URL
  gets `timestamp=<ms>&sign=<urlencoded base64 HMAC-SHA256(key=secret, msg="<ms>\\n<secret>")>`.
- Feishu/Lark bot: `{"msg_type": "text", "content": {"text"}}`; with a secret the body gets
  `timestamp` (seconds) and `sign` = base64 HMAC-SHA256(key="<s>\\n<secret>", msg="").
- generic: `{"kind", "id", "record"}`; with a secret, `X-Market-Timestamp` and
  `X-Market-Signature: sha256=<hex HMAC-SHA256(key=secret, msg="<s>.<body>")>`.
Every request carries `Idempotency-Key` and `X-Idempotency-Key` (the job's idempotency id).
A 2xx is a failure when the platform's error field says so (WeCom/DingTalk `errcode`,
Feishu `code` or `StatusCode` other than 0).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

import orjson

from server.notify import message

WECOM_MAX_BYTES = 4096
DINGTALK_MAX_BYTES = 18_000
FEISHU_MAX_BYTES = 18_000


@dataclass(frozen=True, slots=True)
class Notice:
    """What a webhook message is about: the record and the job's idempotency id."""

    kind: str
    record_id: str
    record: Mapping[str, Any]
    idempotency_id: str


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    url: str
    headers: dict[str, str]
    body: bytes


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256).digest()
    return quote_plus(base64.b64encode(digest).decode())


def feishu_sign(secret: str, timestamp_s: int) -> str:
    digest = hmac.new(f"{timestamp_s}\n{secret}".encode(), b"", hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def generic_signature(secret: str, timestamp_s: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), str(timestamp_s).encode() + b"." + body, hashlib.sha256).hexdigest()
    return "sha256=" + digest


def _headers(notice: Notice) -> dict[str, str]:
    return {
        "Content-Type": "application/json; charset=utf-8",
        "Idempotency-Key": notice.idempotency_id,
        "X-Idempotency-Key": notice.idempotency_id,
    }


def _wecom(url: str, secret: str | None, notice: Notice, now: float) -> WebhookRequest:
    text = message.truncate_utf8(message.markdown(notice.kind, notice.record_id, notice.record), WECOM_MAX_BYTES)
    body = {"msgtype": "markdown", "markdown": {"content": text}}
    return WebhookRequest(url, _headers(notice), orjson.dumps(body))


def _dingtalk(url: str, secret: str | None, notice: Notice, now: float) -> WebhookRequest:
    text = message.markdown(notice.kind, notice.record_id, notice.record)
    body = {"msgtype": "markdown", "markdown": {
        "title": message.subject(notice.kind, notice.record_id),
        "text": message.truncate_utf8(text, DINGTALK_MAX_BYTES),
    }}
    if secret:
        ms = int(now * 1000)
        url += ("&" if "?" in url else "?") + f"timestamp={ms}&sign={dingtalk_sign(secret, ms)}"
    return WebhookRequest(url, _headers(notice), orjson.dumps(body))


def _feishu(url: str, secret: str | None, notice: Notice, now: float) -> WebhookRequest:
    text = message.text_body(notice.kind, notice.record_id, notice.record)
    subject = message.subject(notice.kind, notice.record_id)
    body: dict[str, Any] = {
        "msg_type": "text",
        "content": {"text": message.truncate_utf8(f"{subject}\n{text}", FEISHU_MAX_BYTES)},
    }
    if secret:
        body = {"timestamp": str(int(now)), "sign": feishu_sign(secret, int(now)), **body}
    return WebhookRequest(url, _headers(notice), orjson.dumps(body))


def _generic(url: str, secret: str | None, notice: Notice, now: float) -> WebhookRequest:
    record = message.public_fields({**notice.record, "id": notice.record_id})
    body = orjson.dumps({"kind": notice.kind, "id": notice.record_id, "record": record}, default=str)
    headers = _headers(notice)
    if secret:
        headers["X-Market-Timestamp"] = str(int(now))
        headers["X-Market-Signature"] = generic_signature(secret, int(now), body)
    return WebhookRequest(url, headers, body)


Builder = Callable[[str, "str | None", Notice, float], WebhookRequest]
BUILDERS: dict[str, Builder] = {"wecom": _wecom, "dingtalk": _dingtalk, "feishu": _feishu, "generic": _generic}


def build(kind: str, url: str, secret: str | None, notice: Notice, now: float) -> WebhookRequest:
    return BUILDERS[kind](url, secret, notice, now)


# platform -> the JSON fields that carry its error code (0 = ok) and message
ERROR_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "wecom": (("errcode", "errmsg"),),
    "dingtalk": (("errcode", "errmsg"),),
    "feishu": (("code", "msg"), ("StatusCode", "StatusMessage")),
    "generic": (),
}


def response_error(kind: str, status: int, body: bytes) -> str | None:
    """None when the far side accepted the message, else a short reason (no URL, no secret)."""
    if not 200 <= status < 300:
        return f"HTTP {status}"
    fields = ERROR_FIELDS[kind]
    if not fields:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None  # a 2xx without a JSON body: nothing says it failed
    if not isinstance(data, dict):
        return None
    for code_field, msg_field in fields:
        code = data.get(code_field)
        if code not in (None, 0, "0"):
            return f"{kind} {code_field} {code}: {str(data.get(msg_field, ''))[:200]}"
    return None
