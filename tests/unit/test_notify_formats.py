"""Notification text and webhook formats, pure: subjects, bodies, platform payloads, signatures, answers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from server.config import ConfigError
from server.notify import formats, message
from server.notify.mail import build_email, parse_smtp_url
from server.store.outbox.queue import Job, JobState

RECORD = {
    "id": "inq_01ABC", "status": "received", "createdAt": "2026-03-02T10:00:00.000+08:00", "userId": "usr_1",
    "product": "对二甲苯 PX", "quantity": 500.0, "unit": "吨", "message": "请报价\n含运费", "deliveryPlace": None,
    "contactPhone": "13800000000", "campaign": "spring", "passwordHash": "must-not-appear", "apiToken": "nor-this",
}
NOTICE = formats.Notice("inquiry", "inq_01ABC", RECORD, "idem-123")
NOW = 1_772_420_000.25


def test_subject_names_the_kind_and_id_in_both_languages() -> None:
    assert message.subject("inquiry", "inq_1") == "[Inquiry 询价] inq_1"
    assert message.subject("cooperation", "coop_9") == "[Cooperation 合作意向] coop_9"


def test_text_body_has_every_field_and_nothing_secret() -> None:
    body = message.text_body("inquiry", "inq_01ABC", RECORD)
    for expected in ("编号 ID: inq_01ABC", "产品 Product: 对二甲苯 PX", "数量 Quantity: 500", "单位 Unit: 吨",
                     "交货地 Delivery place: -", "联系电话 Contact phone: 13800000000", "用户 User: usr_1",
                     "campaign: spring", "提交时间 Submitted: 2026-03-02T10:00:00.000+08:00",
                     "请报价\n含运费", "New inquiry", "新询价"):
        assert expected in body
    assert "must-not-appear" not in body and "nor-this" not in body


def _json(req: formats.WebhookRequest) -> dict:  # type: ignore[type-arg]
    return json.loads(req.body)


def test_every_request_carries_the_idempotency_key() -> None:
    for kind in formats.BUILDERS:
        req = formats.build(kind, "https://h.example/x", None, NOTICE, NOW)
        assert req.headers["Idempotency-Key"] == req.headers["X-Idempotency-Key"] == "idem-123"
        assert b"inq_01ABC" in req.body and "must-not-appear" not in req.body.decode()


def test_wecom_markdown_and_its_size_limit() -> None:
    body = _json(formats.build("wecom", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K", None, NOTICE, NOW))
    assert body["msgtype"] == "markdown"
    assert "[Inquiry 询价] inq_01ABC" in body["markdown"]["content"]
    assert "对二甲苯 PX" in body["markdown"]["content"]
    huge = formats.Notice("inquiry", "inq_2", {**RECORD, "message": "长" * 3000}, "k")
    content = _json(formats.build("wecom", "https://q/x", None, huge, NOW))["markdown"]["content"]
    assert len(content.encode()) <= formats.WECOM_MAX_BYTES and content.endswith("…")


def test_dingtalk_markdown_and_signature_checked_independently() -> None:
    secret = "SEC0123456789abcdef"
    req = formats.build("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=T", secret, NOTICE, NOW)
    body = _json(req)
    assert body["msgtype"] == "markdown" and body["markdown"]["title"] == "[Inquiry 询价] inq_01ABC"
    assert "对二甲苯 PX" in body["markdown"]["text"]
    query = parse_qs(urlsplit(req.url).query)
    assert query["access_token"] == ["T"]
    timestamp = query["timestamp"][0]
    assert timestamp == str(int(NOW * 1000))
    # DingTalk's documented recipe: base64(HmacSHA256(key=secret, "timestamp\nsecret")), URL-encoded
    expected = base64.b64encode(
        hmac.new(secret.encode(), (timestamp + "\n" + secret).encode(), hashlib.sha256).digest()
    ).decode()
    assert query["sign"] == [expected]  # parse_qs undoes the URL-encoding
    assert req.url.endswith("&sign=" + quote(expected, safe=""))  # URL-encoded: base64's +/= must not leak raw
    unsigned = formats.build("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=T", None, NOTICE, NOW)
    assert "sign=" not in unsigned.url


def test_feishu_text_and_signature_checked_independently() -> None:
    secret = "feishu-secret"
    body = _json(formats.build("feishu", "https://open.feishu.cn/open-apis/bot/v2/hook/X", secret, NOTICE, NOW))
    assert body["msg_type"] == "text" and "inq_01ABC" in body["content"]["text"]
    assert body["timestamp"] == str(int(NOW))
    # Feishu's documented recipe: base64(HmacSHA256(key="timestamp\nsecret", message=empty))
    key = f"{body['timestamp']}\n{secret}".encode()
    assert body["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def test_generic_json_and_its_signature() -> None:
    req = formats.build("generic", "https://hooks.example/in", "gs", NOTICE, NOW)
    body = _json(req)
    assert body["kind"] == "inquiry" and body["id"] == "inq_01ABC"
    assert body["record"]["product"] == "对二甲苯 PX" and body["record"]["quantity"] == 500.0
    assert "passwordHash" not in body["record"] and "apiToken" not in body["record"]
    signed = req.headers["X-Market-Timestamp"].encode() + b"." + req.body
    assert req.headers["X-Market-Signature"] == "sha256=" + hmac.new(b"gs", signed, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(("kind", "status", "body", "failed"), [
    ("generic", 200, b"", False),
    ("generic", 204, b"", False),
    ("generic", 302, b"", True),
    ("generic", 500, b"{}", True),
    ("wecom", 200, b'{"errcode":0,"errmsg":"ok"}', False),
    ("wecom", 200, b'{"errcode":93000,"errmsg":"invalid webhook url"}', True),
    ("dingtalk", 200, b'{"errcode":310000,"errmsg":"sign not match"}', True),
    ("dingtalk", 200, b'{"errcode":0,"errmsg":"ok"}', False),
    ("feishu", 200, b'{"code":19021,"msg":"sign match fail or timestamp is not within one hour"}', True),
    ("feishu", 200, b'{"StatusCode":0,"StatusMessage":"success"}', False),
    ("feishu", 200, b'{"code":0,"msg":"success"}', False),
    ("feishu", 429, b'{"code":0}', True),
])
def test_response_errors(kind: str, status: int, body: bytes, failed: bool) -> None:
    error = formats.response_error(kind, status, body)
    assert (error is not None) is failed
    if failed and status == 200:
        assert kind in error  # type: ignore[operator]


def test_smtp_urls() -> None:
    plain = parse_smtp_url("smtp://user%40x.cn:p%3Ass@mail.example:587")
    assert (plain.host, plain.port, plain.username, plain.password, plain.implicit_tls) == (
        "mail.example", 587, "user@x.cn", "p:ss", False)
    assert "p:ss" not in repr(plain)
    tls = parse_smtp_url("smtps://smtp.example")
    assert (tls.port, tls.implicit_tls, tls.username) == (465, True, None)
    assert parse_smtp_url("smtp://relay").port == 25
    for bad in ("http://x", "smtp://", "smtp://h:99999"):
        with pytest.raises(ValueError):
            parse_smtp_url(bad)
    assert issubclass(ConfigError, ValueError)


def test_email_message() -> None:
    job = Job("job_1", "inquiry", "inq_01ABC", "email", "a@x.cn,b@x.cn", RECORD, JobState.SENDING, 1, 0.0,
              None, "idem-123", 0.0, 0.0, None)
    msg = build_email(job, "Market <noreply@market.example>", NOW)
    assert msg["Subject"] == "[Inquiry 询价] inq_01ABC"
    assert msg["To"] == "a@x.cn, b@x.cn" and msg["From"] == "Market <noreply@market.example>"
    assert msg["Message-ID"] == "<idem-123@market.example>"
    assert msg.get_content_type() == "text/plain" and msg.get_content_charset() == "utf-8"
    text = msg.get_content()
    assert "对二甲苯 PX" in text and "inq_01ABC" in text and "must-not-appear" not in text
