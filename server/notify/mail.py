"""E-mail over SMTP with aiosmtplib: smtp:// (STARTTLS when the server offers it) or smtps:// (implicit TLS).

The message is text/plain UTF-8, bilingual, with every field of the record and
its id; its Message-ID carries the job's idempotency id, so a receiving system
can drop the duplicate of an at-least-once redelivery.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from urllib.parse import unquote, urlsplit

import aiosmtplib

from server.notify import message
from server.notify.jobs import DeliveryFailed
from server.store.outbox.queue import Job

log = logging.getLogger("market.notify.mail")


@dataclass(frozen=True, slots=True)
class SmtpServer:
    host: str
    port: int
    username: str | None
    password: str | None
    implicit_tls: bool

    def __repr__(self) -> str:  # never show the password
        return f"SmtpServer({self.host}:{self.port}, tls={'implicit' if self.implicit_tls else 'starttls-if-offered'})"


def parse_smtp_url(url: str) -> SmtpServer:
    """smtp://[user:pass@]host[:port] (default 25) or smtps://... (default 465); ValueError if malformed."""
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ValueError("must be smtp://[user:pass@]host[:port] or smtps://...")
    implicit = parts.scheme == "smtps"
    port = parts.port or (465 if implicit else 25)  # .port raises ValueError when out of range
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return SmtpServer(parts.hostname, port, user, password, implicit)


def message_id(idempotency_id: str, mail_from: str) -> str:
    domain = mail_from.rpartition("@")[2].strip("> ") or "market-server.local"
    return f"<{idempotency_id}@{domain}>"


def build_email(job: Job, mail_from: str, now: float) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = mail_from
    msg["To"] = ", ".join(job.target.split(","))
    msg["Subject"] = message.subject(job.record_kind, job.record_id)
    msg["Date"] = format_datetime(datetime.fromtimestamp(now, UTC))
    msg["Message-ID"] = message_id(job.idempotency_id, mail_from)
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(message.text_body(job.record_kind, job.record_id, job.payload), charset="utf-8")
    return msg


class MailSender:
    def __init__(self, smtp_url: str, mail_from: str, timeout_s: float) -> None:
        self.server = parse_smtp_url(smtp_url)
        self.mail_from = mail_from
        self.timeout_s = timeout_s

    async def send(self, job: Job, now: float) -> None:
        msg = build_email(job, self.mail_from, now)
        s = self.server
        try:
            async with asyncio.timeout(self.timeout_s * 4):  # connect, EHLO/TLS, AUTH, DATA each have timeout_s
                refused, _ = await aiosmtplib.send(
                    msg, hostname=s.host, port=s.port, username=s.username, password=s.password,
                    use_tls=s.implicit_tls, start_tls=False if s.implicit_tls else None, timeout=self.timeout_s,
                )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            raise DeliveryFailed(f"smtp: all recipients refused ({_codes(exc)})") from None
        except aiosmtplib.SMTPResponseException as exc:
            raise DeliveryFailed(f"smtp {exc.code}: {exc.message[:200]}") from None
        except (TimeoutError, aiosmtplib.SMTPTimeoutError):
            raise DeliveryFailed(f"smtp: timed out after {self.timeout_s:g}s") from None
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise DeliveryFailed(f"smtp {type(exc).__name__}: {exc}") from None
        if refused:  # some recipients accepted: retrying would duplicate their copy
            log.warning("smtp host=%s refused recipients %s", s.host, ", ".join(sorted(refused)))

    async def close(self) -> None:
        """Nothing to close: each delivery opens and closes its own SMTP connection."""


def _codes(exc: aiosmtplib.SMTPRecipientsRefused) -> str:
    return ", ".join(f"{r.recipient} {r.code}" for r in exc.recipients)
