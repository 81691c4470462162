"""The outbox worker: a hub service that claims due jobs, delivers them and records the outcome.

At-least-once: a job is marked `sending` (attempt counted) before the send and
`delivered` after the far side accepted it. A job found in `sending` that this
process is not delivering (the previous process died, or a write failed) goes
back to `pending` and is sent again with the same idempotency id; so a
duplicate is possible only when a crash falls between the far side accepting
and our commit, and the idempotency id lets the far side drop it. A delivered
job is never claimed again. One hub per data dir owns delivery.

Jobs are written by the records service in the record's own transaction,
whether or not this worker runs; the service then calls `wake`, so the worker
delivers at once, and otherwise it polls every second for due retries and for
jobs another process put back (`outbox retry`). Every storage call is awaited
through the `Outbox` repository (a storage thread), never run on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from server.config import NotifySettings
from server.core.background import log_round_failure
from server.core.background import reason as failure_reason
from server.core.errors import storage_unavailable
from server.core.metrics import Registry
from server.notify.channels import EMAIL, Channel, describe, scrub, sensitive_strings
from server.notify.jobs import Backoff, DeliveryFailed
from server.notify.mail import MailSender
from server.notify.webhook import WebhookSender
from server.store.outbox.jobs import IllegalTransition, JobState
from server.store.outbox.queue import Job
from server.store.sql.db import storage_errors
from server.store.sql.repositories import Outbox
from server.store.sql.storage import StorageClosed

log = logging.getLogger("market.notify")

POLL_S = 1.0
MAX_INFLIGHT = 16
STOP_GRACE_S = 1.5
BACKOFF_CAP_S = 3600.0

# One claim of a job: (job id, its attempt number). A job failed by one attempt can be claimed again before that
# attempt's task has finished (its done callback runs a loop step later), so a worker's bookkeeping names claims,
# never bare job ids: the finishing task of attempt n must not forget attempt n + 1.
Claim = tuple[str, int]


class Sender(Protocol):
    async def send(self, job: Job, now: float) -> None: ...

    async def close(self) -> None: ...


class OutboxMetrics:
    def __init__(self, registry: Registry, worker: OutboxWorker) -> None:
        registry.gauge("market_outbox_backlog", "Notification jobs waiting (pending + failed).",
                       lambda: worker.counts[JobState.PENDING] + worker.counts[JobState.FAILED])
        registry.gauge("market_outbox_inflight", "Notification jobs being sent.",
                       lambda: worker.counts[JobState.SENDING])
        registry.gauge("market_outbox_dead", "Dead-lettered notification jobs (see `outbox list`).",
                       lambda: worker.counts[JobState.DEAD])
        self.attempts = registry.counter("market_outbox_attempts_total", "Delivery attempts by channel.")
        self.deliveries = registry.counter("market_outbox_deliveries_total", "Jobs delivered by channel.")
        self.failures = registry.counter("market_outbox_failures_total", "Failed attempts by channel.")
        self.dead = registry.counter("market_outbox_dead_letters_total", "Jobs dead-lettered by channel.")
        self.seconds = registry.histogram("market_outbox_delivery_seconds", "Delivery attempt time by channel.")


class OutboxWorker:
    def __init__(self, settings: NotifySettings, registry: Registry, outbox: Outbox, channels: Sequence[Channel],
                 clock: Callable[[], float] = time.time, rng: Callable[[], float] = random.random,
                 poll_s: float = POLL_S) -> None:
        """`outbox`: the repository of the hub's storage (the worker never opens storage of its own); `channels`:
        the configured channels (the root made them once, for the outbox's jobs too)."""
        self.settings = settings
        self.clock = clock
        self.rng = rng
        self.poll_s = poll_s
        self.channels = tuple(channels)
        self.backoff = Backoff(settings.outbox_base_s, BACKOFF_CAP_S, settings.outbox_max_attempts)
        self.sensitive = sensitive_strings(settings)
        self.metrics = OutboxMetrics(registry, self)
        self.counts: dict[JobState, int] = dict.fromkeys(JobState, 0)
        self._event = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._inflight: dict[Claim, asyncio.Task[None]] = {}
        # claims of this worker whose outcome is not recorded yet (in flight, or its write failed)
        self._claimed: set[Claim] = set()
        self._senders: dict[str, Sender] = {}
        self._repo = outbox

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._senders = self._make_senders()
        recovered = await self._repo.recover(self.clock())
        self._task = self._loop.create_task(self._run(), name="outbox")
        log.info("outbox started channels=[%s] recovered=%d",
                 ", ".join(c.describe() for c in self.channels), recovered)

    @property
    def running(self) -> bool:
        """The delivery loop runs (/api/v1/status's `notifications` component)."""
        return self._task is not None and not self._task.done()

    def _make_senders(self) -> dict[str, Sender]:
        s = self.settings
        webhooks = WebhookSender(s.webhooks, s.outbox_timeout_s)
        senders: dict[str, Sender] = {kind: webhooks for kind in ("wecom", "dingtalk", "feishu", "generic")}
        if s.smtp_url:
            senders[EMAIL] = MailSender(s.smtp_url, s.mail_from, s.outbox_timeout_s)
        return senders

    async def stop(self) -> None:
        self._stopping = True
        self._event.set()
        if self._task is not None:
            await self._task  # the loop sees _stopping at once: it only ever awaits the event
        await self._drain()
        for sender in {id(s): s for s in self._senders.values()}.values():
            await sender.close()
        log.info("outbox stopped")

    async def _drain(self) -> None:
        """Let in-flight sends finish for a moment, then cancel them and put their jobs back."""
        tasks = list(self._inflight.values())
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_GRACE_S)
        unfinished = [claim for claim, task in self._inflight.items() if not task.done()]
        for claim in unfinished:
            self._inflight[claim].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if unfinished:
            await self._repo.release([job_id for job_id, _ in unfinished], self.clock())

    def wake(self) -> None:
        """Called after jobs were committed (any thread may call it); a no-op while the worker is stopped."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._event.set)

    # --- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            self._event.clear()
            try:
                await self._round()
            except StorageClosed:
                return
            except Exception as exc:  # keep delivering: a locked or broken database is retried next round
                log_round_failure(log, "outbox round", exc)
            sleep_s = await self._sleep_s()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(sleep_s):  # not wait_for: 3.11's can swallow a cancel
                    await self._event.wait()

    async def _round(self) -> None:
        repo = self._repo
        assert self._loop is not None
        free = MAX_INFLIGHT - len(self._inflight)
        if free > 0:
            for job in await repo.claim_due(self.clock(), free):
                claim = (job.id, job.attempts)
                task = self._loop.create_task(self._deliver(job), name=f"outbox-{job.id}")
                self._inflight[claim] = task
                self._claimed.add(claim)
                task.add_done_callback(functools.partial(self._finished, claim))
        self.counts = await repo.counts()
        if self._claimed.difference(self._inflight):
            await self._release_orphans(repo)

    async def _sleep_s(self) -> float:
        """Until the next retry falls due, but at most the poll period (other processes add work too)."""
        if len(self._inflight) >= MAX_INFLIGHT:
            return self.poll_s  # due jobs wait for a free slot; a finishing task sets the event
        try:
            due = await self._repo.next_due()
        except storage_errors(StorageClosed):
            due = None
        if due is None:
            return self.poll_s
        return min(self.poll_s, max(0.0, due - self.clock()))

    async def _release_orphans(self, repo: Outbox) -> None:
        """Jobs this worker claimed and no task of its is delivering any more: the write of their outcome
        failed. Only its own: jobs in sending that another hub claimed are that hub's (several hubs on one
        database; releasing them sent them twice). A job claimed again since (the outcome was written after
        all) is in flight under its newer claim: releasing it would send it twice, so it is only forgotten."""
        orphans = sorted(self._claimed.difference(self._inflight))
        newer = {job_id for job_id, attempt in self._claimed for old_id, old in orphans
                 if job_id == old_id and attempt > old}
        released = await repo.release([job_id for job_id, _ in orphans if job_id not in newer], self.clock())
        self._claimed.difference_update(orphans)
        if released:
            log.warning("outbox released %d orphaned job(s) back to pending", released)
            self._event.set()

    def _finished(self, claim: Claim, _task: asyncio.Task[None]) -> None:
        self._inflight.pop(claim, None)
        self._event.set()  # capacity freed: claim more at once

    async def _deliver(self, job: Job) -> None:
        labels = (("channel", job.channel),)
        self.metrics.attempts.inc(labels)
        started = time.monotonic()
        reason = await self._attempt(job)
        self.metrics.seconds.observe(time.monotonic() - started, labels)
        try:
            if reason is None:
                await self._delivered(job)
            else:
                await self._failed(job, reason)
            self._claimed.discard((job.id, job.attempts))
        except storage_errors(StorageClosed, IllegalTransition) as exc:
            if isinstance(exc, IllegalTransition):  # no longer in sending: not ours to release
                self._claimed.discard((job.id, job.attempts))
            if storage_unavailable(exc):  # released to pending by a round once storage is back
                log.warning("outbox could not record the outcome of job=%s: storage unavailable (%s)",
                            job.id, failure_reason(exc))
            else:
                log.error("outbox could not record the outcome of job=%s: %s", job.id, exc)

    async def _attempt(self, job: Job) -> str | None:
        """None when delivered, else the reason (scrubbed of URLs and secrets)."""
        sender = self._senders.get(job.channel)
        try:
            if sender is None:
                raise DeliveryFailed(f"channel {job.channel} is not configured")
            await sender.send(job, self.clock())
        except DeliveryFailed as exc:
            return scrub(exc.reason, self.sensitive)
        except Exception as exc:  # an unexpected library error: still retried, and never leaks a URL
            return scrub(f"{type(exc).__name__}: {exc}", self.sensitive)
        return None

    async def _delivered(self, job: Job) -> None:
        await self._repo.mark_delivered(job.id, self.clock())
        self.metrics.deliveries.inc((("channel", job.channel),))
        log.info("outbox delivered job=%s record=%s/%s channel=%s attempt=%d",
                 job.id, job.record_kind, job.record_id, describe(job.channel, job.target), job.attempts)

    async def _failed(self, job: Job, reason: str) -> None:
        now = self.clock()
        retry = self.backoff.after_failure(job.attempts, now, self.rng)
        await self._repo.mark_failed(job.id, retry, reason, now)
        labels = (("channel", job.channel),)
        self.metrics.failures.inc(labels)
        where = describe(job.channel, job.target)
        if retry.state is JobState.DEAD:
            self.metrics.dead.inc(labels)
            log.error("outbox dead job=%s record=%s/%s channel=%s attempts=%d error=%s",
                      job.id, job.record_kind, job.record_id, where, job.attempts, reason)
        else:
            log.warning("outbox failed job=%s record=%s/%s channel=%s attempt=%d retry_in=%.1fs error=%s",
                        job.id, job.record_kind, job.record_id, where, job.attempts,
                        (retry.at or now) - now, reason)
