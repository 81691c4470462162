"""The ticks-a-second bucket of dedicated data sources (SPEC 20, docs/ingest.md) with an injected clock: the rate is
the account's at each call, so an operator's lower or higher rate applies from the next batch."""

from __future__ import annotations

from server.core.tick_buckets import TickBuckets


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_batch_may_overdraw_then_the_account_waits_out_its_debt_at_its_rate() -> None:
    clock = Clock()
    buckets = TickBuckets(clock)
    assert buckets.take("acme", 30, 10) == 0.0  # full at 10, 20 into debt
    assert buckets.take("acme", 1, 10) == 2.1  # 20 ticks at 10 a second, plus one tick's time
    assert buckets.take("other", 30, 10) == 0.0  # another account's bucket is its own
    clock.now += 2.2
    assert buckets.take("acme", 1, 10) == 0.0


def test_the_rate_is_the_accounts_at_each_call() -> None:
    clock = Clock()
    buckets = TickBuckets(clock)
    assert buckets.take("acme", 100, 3000) == 0.0
    assert buckets.take("acme", 30, 10) == 0.0  # lowered: the bucket keeps at most one second of the new rate
    assert buckets.take("acme", 1, 10) == 2.1
    clock.now += 0.001
    assert buckets.take("acme", 1, 1_000_000) == 0.0  # raised: out of debt in a millisecond
