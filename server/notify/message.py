"""Bilingual notification text for a record: subject, plain-text body, markdown. Pure.

Every field of the record appears (id first), except keys that look secret
(password, token, secret...), which a record should never hold anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

KINDS: dict[str, tuple[str, str]] = {
    "inquiry": ("Inquiry", "询价"),
    "cooperation": ("Cooperation", "合作意向"),
    "subscription": ("Subscription request", "订阅申请"),  # issue 32: the console's plan requests
    "login_locked": ("Sign-in locked", "登录已锁定"),  # issue 45: to the account's owner
    "ticket": ("Support ticket", "技术支持工单"),  # issue 43: a ticket's first message, to the operators
    "ticket_reply": ("Support ticket reply", "工单回复"),  # issue 43: any later message, to the other side
    "incident": ("Incident update", "故障通报"),  # issue 42: each update, to the accounts told of incidents
}

# field -> (English, Chinese); also the display order
FIELDS: dict[str, tuple[str, str]] = {
    "id": ("ID", "编号"),
    "title": ("Title", "标题"),  # issue 42: incidents
    "impact": ("Impact", "影响"),
    "components": ("Components", "组件"),
    "createdAt": ("Submitted", "提交时间"),
    "status": ("Status", "状态"),
    "product": ("Product", "产品"),
    "quantity": ("Quantity", "数量"),
    "unit": ("Unit", "单位"),
    "deliveryPlace": ("Delivery place", "交货地"),
    "company": ("Company", "公司"),
    "contactName": ("Contact", "联系人"),
    "contactPhone": ("Contact phone", "联系电话"),
    "phone": ("Phone", "电话"),
    "email": ("E-mail", "邮箱"),
    "type": ("Type", "类型"),
    "userId": ("User", "用户"),
    "userEmail": ("User e-mail", "用户邮箱"),
    "message": ("Message", "留言"),
    "currentPlan": ("Current plan", "当前套餐"),  # issue 32
    "requestedPlan": ("Requested plan", "申请套餐"),
    "subject": ("Subject", "主题"),  # issue 43: support tickets
    "severity": ("Severity", "严重级别"),
    "author": ("From", "来自"),
    "messageId": ("Message ID", "消息编号"),
}
SECRET_WORDS = ("password", "secret", "token")
MISSING = "-"


def kind_label(kind: str) -> str:
    en, zh = KINDS.get(kind, (kind.capitalize(), kind))
    return f"{en} {zh}"


def subject(kind: str, record_id: str) -> str:
    """E.g. `[Inquiry 询价] inq_123`."""
    return f"[{kind_label(kind)}] {record_id}"


def public_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The record without secret-looking keys, in display order (known fields first)."""
    keys = [k for k in FIELDS if k in payload] + sorted(k for k in payload if k not in FIELDS)
    return {k: payload[k] for k in keys if not any(w in k.lower() for w in SECRET_WORDS)}


def label(key: str) -> str:
    en, zh = FIELDS.get(key, (key, ""))
    return f"{zh} {en}" if zh else en


def value_text(value: Any) -> str:
    if value is None or value == "":
        return MISSING
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return orjson.dumps(value, default=str).decode()


def lines(kind: str, record_id: str, payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    fields = public_fields({**payload, "id": record_id})
    return [(label(k), value_text(v)) for k, v in fields.items()]


def text_body(kind: str, record_id: str, payload: Mapping[str, Any]) -> str:
    en, zh = KINDS.get(kind, (kind.capitalize(), kind))
    head = [f"新{zh}: {record_id}", f"New {en.lower()}: {record_id}", ""]
    rows = [f"{name}: {value}" for name, value in lines(kind, record_id, payload)]
    foot = ["", "此邮件由 market-server 自动发送。 Sent automatically by market-server."]
    return "\n".join(head + rows + foot) + "\n"


def markdown(kind: str, record_id: str, payload: Mapping[str, Any]) -> str:
    rows = [f"> **{name}**: {_md(value)}" for name, value in lines(kind, record_id, payload)]
    return "\n".join([f"### {subject(kind, record_id)}", *rows])


def _md(value: str) -> str:
    """Keep a multi-line value inside its quote block."""
    return value.replace("\r\n", "\n").replace("\n", "\n> ")


def truncate_utf8(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, cut on a character boundary, marked with an ellipsis."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode(errors="ignore") + "…"
