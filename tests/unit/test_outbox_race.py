"""The outbox worker's bookkeeping when a job is claimed again before its previous attempt's task has finished.

Issue 21: `.ci/run` failed 1 in 2 with a webhook attempted once too often and "illegal outbox job transition
failed -> delivered". The interleaving: attempt 1 records `failed` (retry due at once), the worker's round claims
attempt 2 of the same job, and only then does attempt 1's task-done callback run. It used to forget the job by
id, i.e. attempt 2's entry; the next round took attempt 2 for an orphan and released it to pending while it was
being sent, so attempt 3 went out beside it. The test replays that order with events (a gated repository around
the real SQLite outbox and a scripted sender), not with sleeps, so it fails every time on the old worker.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from server.config import Settings
from server.core.metrics import Registry
from server.notify.jobs import DeliveryFailed
from server.notify.worker import OutboxWorker, Sender
from server.store.outbox.jobs import JobState, Retry
from server.store.outbox.queue import Job
from server.store.sql.db import open_db
from server.store.sql.sqlite_repos import SqliteOutbox
from server.store.sql.sqlite_sync import OutboxRepo
from server.store.sql.storage import SqliteStorage


class GatedOutbox(SqliteOutbox):
    """The real SQLite outbox; attempt 1's `failed` is held after its commit until the round has claimed attempt 2,
    and that round resumes (with its claim) before attempt 1's task finishes: the order a loaded loop produces when
    the storage thread answers both calls before the loop runs either continuation."""

    def __init__(self, storage: SqliteStorage) -> None:
        super().__init__(storage)
        self.failed_recorded = asyncio.Event()  # attempt 1's outcome is committed
        self.resume_failed = asyncio.Event()  # attempt 1's mark_failed may return
        self.failed_returning = asyncio.Event()  # ... and is returning now (its task finishes in this loop step)
        self.second_claim_round_done = asyncio.Event()  # the round that claimed attempt 2 has ended
        self.delivered = asyncio.Event()
        self._claimed_second = False

    async def mark_delivered(self, job_id: str, now: float) -> None:
        try:
            await super().mark_delivered(job_id, now)
        finally:
            self.delivered.set()  # recorded, or refused (the old worker: "illegal ... failed -> delivered")

    async def mark_failed(self, job_id: str, retry: Retry, error: str, now: float) -> None:
        await super().mark_failed(job_id, retry, error, now)
        if not self.failed_recorded.is_set():
            self.failed_recorded.set()
            await self.resume_failed.wait()
            self.failed_returning.set()  # wakes the round first; this task's done callbacks are queued after it

    async def claim_due(self, now: float, limit: int) -> list[Job]:
        jobs = await super().claim_due(now, limit)
        if any(job.attempts == 2 for job in jobs):
            self._claimed_second = True
            self.resume_failed.set()
            await self.failed_returning.wait()
        return jobs

    async def next_due(self) -> float | None:  # called once per round, after the round (and any orphan release)
        if self._claimed_second:
            self.second_claim_round_done.set()
        return await super().next_due()


class ScriptedSender:
    """Attempt 1 fails; attempt 2 waits for `release` and then succeeds; any further attempt succeeds at once.
    Records how many sends were in flight at the same time."""

    def __init__(self) -> None:
        self.calls = 0
        self.active = 0
        self.most_active = 0
        self.second_started = asyncio.Event()
        self.release = asyncio.Event()

    async def send(self, job: Job, now: float) -> None:
        self.calls += 1
        call = self.calls
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            if call == 1:
                raise DeliveryFailed("HTTP 500")
            if call == 2:
                self.second_started.set()
                await self.release.wait()
        finally:
            self.active -= 1

    async def close(self) -> None:
        pass


class ScriptedWorker(OutboxWorker):
    def __init__(self, sender: ScriptedSender, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sender = sender

    def _make_senders(self) -> dict[str, Sender]:
        return {"generic": self.sender}


def test_a_job_claimed_again_before_its_last_attempt_finished_is_sent_once_at_a_time(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    conn = open_db(data_dir)
    with conn:
        OutboxRepo(conn).add("cooperation", "coop_1", {"company": "Acme"}, [("generic", "generic 127.0.0.1")], 0.0)
    job_id = OutboxRepo(conn).list_jobs()[0].id
    caplog.set_level(logging.INFO, logger="market.notify")

    async def scenario() -> None:
        storage = SqliteStorage(data_dir)
        repo = GatedOutbox(storage)
        sender = ScriptedSender()
        # rng 0: a failed attempt is due again at once, so the worker's next round claims it
        worker = ScriptedWorker(sender, Settings(data_dir=data_dir), Registry(), outbox=repo, channels=(),
                                rng=lambda: 0.0, poll_s=0.05)
        await worker.start()
        try:
            await asyncio.wait_for(repo.second_claim_round_done.wait(), 10)
            await asyncio.wait_for(sender.second_started.wait(), 10)
            # attempt 2 is being sent: the job must still be in sending (not released as an orphan) ...
            assert OutboxRepo(open_db(data_dir)).get(job_id).state is JobState.SENDING
            # ... and the worker knows it is in flight
            assert [job for job, _ in worker._inflight] == [job_id]
            sender.release.set()
            await asyncio.wait_for(repo.delivered.wait(), 10)
        finally:
            await worker.stop()
            await storage.aclose()
        assert (sender.calls, sender.most_active) == (2, 1)

    asyncio.run(scenario())
    job = OutboxRepo(open_db(data_dir)).get(job_id)
    assert (job.state, job.attempts) == (JobState.DELIVERED, 2)
    assert "could not record" not in caplog.text and "orphaned" not in caplog.text
