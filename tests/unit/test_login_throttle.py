"""server/core/login_throttle.py on a fake clock: free failures, doubling waits, the lockout, forgetting."""

from __future__ import annotations

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
