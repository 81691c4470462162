"""Webhook delivery with httpx: builds the platform's request (notify.formats), posts it, reads the answer.

The signing secret is looked up by (kind, URL) in the current settings at
send time, so it is never stored in the database. Errors name the platform's
status or error code only: never the URL (its query holds the token).
"""

from __future__ import annotations

import asyncio
import logging

import httpx

from server.config import Webhook
from server.notify import formats
from server.notify.jobs import DeliveryFailed
from server.store.outbox.queue import Job

MAX_RESPONSE_BYTES = 64 * 1024


def quiet_http_client_logs() -> None:
    """httpx logs every request's full URL at INFO: webhook URLs carry tokens, so keep it to warnings."""
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)


class WebhookSender:
    def __init__(self, webhooks: tuple[Webhook, ...], timeout_s: float) -> None:
        quiet_http_client_logs()
        self.secrets = {(w.kind, w.url): w.secret for w in webhooks}
        self.timeout_s = timeout_s
        self.client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False)

    async def send(self, job: Job, now: float) -> None:
        notice = formats.Notice(job.record_kind, job.record_id, job.payload, job.idempotency_id)
        secret = self.secrets.get((job.channel, job.target))
        request = formats.build(job.channel, job.target, secret, notice, now)
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self.client.post(request.url, content=request.body, headers=request.headers)
        except (TimeoutError, httpx.TimeoutException):
            raise DeliveryFailed(f"timed out after {self.timeout_s:g}s") from None
        except httpx.HTTPError as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
        error = formats.response_error(job.channel, response.status_code, response.content[:MAX_RESPONSE_BYTES])
        if error:
            raise DeliveryFailed(error)

    async def close(self) -> None:
        await self.client.aclose()
