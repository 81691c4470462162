"""The outbox core without an event loop: states and transitions, backoff, the SQLite repository, records + jobs."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from server.config import Settings, Webhook
from server.notify.channels import Channel, configured_channels, scrub, sensitive_strings
from server.notify.jobs import Backoff
from server.store.outbox.jobs import TRANSITIONS, IllegalTransition, JobState, transition
from server.store.outbox.queue import JobNotFound
from server.store.site.records import Cooperation
from server.store.sql.db import open_db, transaction
from server.store.sql.sqlite_sync import OutboxRepo, RecordRepo

S = JobState
ALLOWED = {
    (S.PENDING, S.SENDING),
    (S.SENDING, S.DELIVERED), (S.SENDING, S.FAILED), (S.SENDING, S.DEAD), (S.SENDING, S.PENDING),
    (S.FAILED, S.SENDING), (S.FAILED, S.PENDING),
    (S.DEAD, S.PENDING),
}


@pytest.mark.parametrize("current", list(JobState))
@pytest.mark.parametrize("target", list(JobState))
def test_transition_table_is_exactly_the_documented_one(current: JobState, target: JobState) -> None:
    if (current, target) in ALLOWED:
        assert transition(current, target) is target
    else:
        with pytest.raises(IllegalTransition) as err:
            transition(current, target)
        assert (err.value.current, err.value.target) == (current, target)
        assert f"{current.value} -> {target.value}" in str(err.value)


def test_delivered_is_terminal() -> None:
    assert TRANSITIONS[S.DELIVERED] == frozenset()


def test_backoff_is_exponential_full_jitter_capped_and_bounded() -> None:
    policy = Backoff(base_s=2.0, cap_s=20.0, max_attempts=5)
    assert policy.delay(1, lambda: 1.0) == 2.0
    assert policy.delay(2, lambda: 1.0) == 4.0
    assert policy.delay(3, lambda: 0.5) == 4.0
    assert policy.delay(4, lambda: 1.0) == 16.0
    assert policy.delay(9, lambda: 1.0) == 20.0  # capped
    assert policy.delay(3, lambda: 0.0) == 0.0  # full jitter reaches down to zero
    retry = policy.after_failure(4, now=100.0, rng=lambda: 0.25)
    assert (retry.state, retry.at) == (S.FAILED, 104.0)
    dead = policy.after_failure(5, now=100.0, rng=lambda: 0.25)
    assert (dead.state, dead.at) == (S.DEAD, None)


def test_backoff_jitter_spreads_over_the_whole_window() -> None:
    rng = random.Random(7)
    delays = [Backoff(base_s=1.0).delay(4, rng.random) for _ in range(2000)]
    assert 0.0 <= min(delays) < 0.1 and 7.9 < max(delays) <= 8.0
    assert 3.7 < sum(delays) / len(delays) < 4.3  # mean of uniform(0, 8)


@pytest.fixture
def repo(tmp_path: Path) -> OutboxRepo:
    return OutboxRepo(open_db(tmp_path / "data"))


CHANNELS = (("email", "a@example.com,b@example.com"), ("wecom", "https://qyapi.example/send?key=K"))


def test_enqueue_claim_deliver_fail_dead_and_retry(repo: OutboxRepo) -> None:
    with transaction(repo.conn):
        assert repo.add("inquiry", "inq_1", {"id": "inq_1", "product": "PX"}, CHANNELS, 10.0) == 2
    jobs = repo.for_record("inquiry", "inq_1")
    assert {j.channel for j in jobs} == {"email", "wecom"}
    assert all(j.state is S.PENDING and j.attempts == 0 for j in jobs)
    assert len({j.idempotency_id for j in jobs}) == 2
    assert repo.claim_due(now=9.0, limit=10) == []  # not due yet
    claimed = repo.claim_due(now=10.0, limit=10)
    assert {j.state for j in claimed} == {S.SENDING} and {j.attempts for j in claimed} == {1}
    assert repo.claim_due(now=10.0, limit=10) == []  # a sending job is not claimed twice
    email, wecom = sorted(claimed, key=lambda j: j.channel != "email")
    repo.mark_delivered(email.id, 11.0)
    with pytest.raises(IllegalTransition):
        repo.mark_delivered(email.id, 12.0)  # delivered is terminal
    with pytest.raises(IllegalTransition):
        repo.retry(email.id, 12.0)
    repo.mark_failed(wecom.id, Backoff(1.0, 10.0, 2).after_failure(1, 11.0, lambda: 0.5), "HTTP 500", 11.0)
    failed = repo.get(wecom.id)
    assert (failed.state, failed.next_attempt_at, failed.last_error) == (S.FAILED, 11.5, "HTTP 500")
    assert repo.claim_due(11.4, 10) == []
    again = repo.claim_due(11.5, 10)
    assert [j.attempts for j in again] == [2]
    repo.mark_failed(wecom.id, Backoff(1.0, 10.0, 2).after_failure(2, 12.0), "HTTP 500", 12.0)
    assert repo.get(wecom.id).state is S.DEAD
    assert repo.claim_due(1e12, 10) == []  # dead jobs are never claimed
    assert repo.counts()[S.DEAD] == 1 and repo.backlog() == 0
    retried = repo.retry(wecom.id, 13.0)
    assert (retried.state, retried.attempts, retried.next_attempt_at) == (S.PENDING, 0, 13.0)
    with pytest.raises(JobNotFound):
        repo.retry("job_nope", 13.0)


def test_recover_and_release_put_sending_jobs_back(repo: OutboxRepo) -> None:
    repo.add("cooperation", "coop_1", {"company": "X"}, CHANNELS, 1.0)
    first, second = repo.claim_due(1.0, 10)
    assert repo.release([first.id], 2.0) == 1
    assert repo.get(first.id).state is S.PENDING
    assert repo.recover(3.0) == 1  # the other one, as after a crash
    back = repo.get(second.id)
    assert (back.state, back.attempts, back.last_error) == (S.PENDING, 1, "interrupted by a restart")


def test_record_and_jobs_commit_or_roll_back_together(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "data")
    receipt = RecordRepo(conn, lambda: 5.0, CHANNELS).add_cooperation(
        Cooperation("ACME", "Li", "li@acme.cn", None, "data"))
    jobs = OutboxRepo(conn).for_record("cooperation", receipt.id)
    assert len(jobs) == 2 and {j.created_at for j in jobs} == {5.0}
    assert jobs[0].payload["company"] == "ACME" and jobs[0].payload["id"] == receipt.id

    # a job that cannot be written (the channel kind violates no constraint, a NULL target does)
    broken = (*CHANNELS, ("generic", None))
    with pytest.raises(sqlite3.IntegrityError):
        RecordRepo(conn, channels=broken).add_cooperation(  # type: ignore[arg-type]
            Cooperation("Gone", "Wu", None, "1", "other"))
    assert conn.execute("SELECT COUNT(*) FROM cooperations WHERE company = 'Gone'").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM outbox_jobs").fetchone()[0] == 2  # the rolled-back jobs are gone


def test_no_configured_channel_creates_no_job(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "data")
    channels = [(c.kind, c.target) for c in configured_channels(Settings())]
    RecordRepo(conn, channels=channels).add_cooperation(Cooperation("ACME", "Li", "li@acme.cn", None, "data"))
    assert conn.execute("SELECT COUNT(*) FROM outbox_jobs").fetchone()[0] == 0


def test_channels_from_settings_and_safe_descriptions() -> None:
    settings = Settings(
        smtp_url="smtp://u:pw@mail.example:587", notify_email=("a@x.cn", "b@x.cn"),
        webhooks=(Webhook("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=TOK123", "SEC456"),),
    )
    channels = configured_channels(settings)
    assert channels == (Channel("email", "a@x.cn,b@x.cn"),
                        Channel("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=TOK123"))
    assert channels[1].describe() == "dingtalk oapi.dingtalk.com"
    assert configured_channels(Settings(smtp_url="smtp://h:25")) == ()  # no recipients: no e-mail channel
    leaky = "ConnectError to https://oapi.dingtalk.com/robot/send?access_token=TOK123 sign SEC456 pw"
    cleaned = scrub(leaky, sensitive_strings(settings))
    assert "TOK123" not in cleaned and "SEC456" not in cleaned and "access_token" not in cleaned
    assert "oapi.dingtalk.com" in cleaned
