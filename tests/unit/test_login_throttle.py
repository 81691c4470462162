"""server/core/login_throttle.py on a fake clock: free failures, doubling waits, the lockout, forgetting."""

from __future__ import annotations

import pytest

from server.core import login_throttle
from server.core.login_throttle import FORGET_S, FREE_FAILURES, LOCK_AFTER, LOCK_S, MAX_BACKOFF_S, LoginThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_free_failures_then_doubling_waits() -> None:
    clock = Clock()
    t = LoginThrottle(clock)
    for _ in range(FREE_FAILURES - 1):
        assert not t.failed("a@x") and t.wait_s("a@x") == 0
    waits = []
    for _ in range(4):
        t.failed("a@x")
        waits.append(t.wait_s("a@x"))
        clock.now += waits[-1]
    assert waits == [1.0, 2.0, 4.0, 8.0]
    assert t.wait_s("b@x") == 0  # another account is not slowed


def test_the_lockout_is_told_once_and_a_success_resets() -> None:
    clock = Clock()
    t = LoginThrottle(clock)
    told = [t.failed("a@x") for _ in range(LOCK_AFTER + 2)]
    assert told.count(True) == 1 and told[LOCK_AFTER - 1]
    assert t.wait_s("a@x") == LOCK_S
    clock.now += LOCK_S
    assert t.wait_s("a@x") == 0
    t.succeeded("a@x")
    t.failed("a@x")
    assert t.wait_s("a@x") == 0  # counting again from the first failure


def test_waits_stop_growing_and_old_failures_are_forgotten() -> None:
    clock = Clock()
    t = LoginThrottle(clock)
    assert max(LoginThrottle.delay_s(n) for n in range(LOCK_AFTER)) <= MAX_BACKOFF_S
    for _ in range(LOCK_AFTER - 1):
        t.failed("a@x")
    clock.now += MAX_BACKOFF_S + FORGET_S
    assert t.wait_s("a@x") == 0
    t.failed("a@x")
    assert t.wait_s("a@x") == 0  # the count started again: not the lockout


def test_the_lockout_starts_at_the_tenth_failure() -> None:
    assert LoginThrottle.delay_s(LOCK_AFTER - 1) <= MAX_BACKOFF_S < LoginThrottle.delay_s(LOCK_AFTER) == LOCK_S
    assert LoginThrottle.delay_s(FREE_FAILURES - 1) == 0 < LoginThrottle.delay_s(FREE_FAILURES)


def test_the_accounts_kept_are_bounded_the_longest_quiet_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46's mutation run: the bound and its order (by the last failure, not the first) had no test."""
    monkeypatch.setattr(login_throttle, "MAX_ACCOUNTS", 4)
    clock = Clock()
    t = LoginThrottle(clock)
    for account in ("a@x", "b@x", "c@x", "a@x", "d@x"):  # a's last failure is newer than b's and c's
        for _ in range(FREE_FAILURES):
            t.failed(account)
    t.failed("e@x")  # a fifth account: b, the longest quiet, goes (a failed again after it, below the bound)
    assert t.wait_s("b@x") == 0 and t.wait_s("a@x") > 0 and t.wait_s("c@x") > 0 and t.wait_s("d@x") > 0
    t.succeeded("nobody@x")  # an account with no failures: nothing to forget, no error
    t.succeeded("a@x")
    assert t.wait_s("a@x") == 0 and t.wait_s("c@x") > 0
