"""Notification channels: which ones the settings configure, and how to name one safely.

A channel is (kind, target): kind "email" with target the comma-separated
recipients, or a webhook kind (wecom, dingtalk, feishu, generic) with target
its URL. Webhook URLs carry access tokens in their query (and sometimes their
path), so logs, errors and `outbox list` show a channel as kind and host only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from server.config import NotifySettings

EMAIL = "email"


@dataclass(frozen=True, slots=True)
class Channel:
    kind: str
    target: str

    def describe(self) -> str:
        return describe(self.kind, self.target)


def configured_channels(settings: NotifySettings) -> tuple[Channel, ...]:
    """E-mail when both --smtp-url and --notify-email are set, plus one channel per --webhook."""
    channels: list[Channel] = []
    if settings.smtp_url and settings.notify_email:
        channels.append(Channel(EMAIL, ",".join(settings.notify_email)))
    channels += [Channel(w.kind, w.url) for w in settings.webhooks]
    return tuple(channels)


def describe(kind: str, target: str) -> str:
    """`email to a@x,b@y` or `dingtalk oapi.dingtalk.com`: never a token or secret."""
    if kind == EMAIL:
        return f"email to {target}"
    return f"{kind} {safe_host(target)}"


def safe_host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "?"


_URL = re.compile(r"(?P<scheme>https?|smtps?)://(?P<rest>[^\s'\"<>]+)")


def scrub(text: str, sensitive: Iterable[str] = ()) -> str:
    """Remove configured secrets and reduce any URL to scheme://host (tokens live in paths and queries)."""
    text = _URL.sub(lambda m: f"{m['scheme']}://{safe_host(m[0])}/…", text)
    for secret in sorted((s for s in sensitive if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def sensitive_strings(settings: NotifySettings) -> tuple[str, ...]:
    """Everything of the channel configuration that must never reach a log line or a stored error."""
    out: list[str] = []
    for w in settings.webhooks:
        parts = urlsplit(w.url)
        out += [w.url, parts.query, parts.path if len(parts.path) > 1 else "", w.secret or ""]
    if settings.smtp_url:
        parts = urlsplit(settings.smtp_url)
        out += [settings.smtp_url, parts.password or "", unquote(parts.password or "")]
    return tuple(s for s in out if s)
