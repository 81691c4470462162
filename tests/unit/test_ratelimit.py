"""GCRA with an injected clock: exact burst, spacing, refill and headers."""

from __future__ import annotations

import pytest

from server.core.limits import MAX_RATE, Gcra, MemoryStore, bounded_rate


def test_burst_of_n_then_refusal() -> None:
    gcra = Gcra()
    decisions = [gcra.check("k", 60, now=1000.0) for _ in range(61)]
    assert all(d.allowed for d in decisions[:60])
    assert [d.remaining for d in decisions[:3]] == [59, 58, 57]
    assert decisions[59].remaining == 0
    refused = decisions[60]
    assert not refused.allowed
    assert refused.retry_after == pytest.approx(1.0)
    assert refused.retry_after_s == 1
    assert refused.reset == pytest.approx(60.0)


def test_one_request_per_interval_after_the_burst() -> None:
    gcra = Gcra()
    for _ in range(10):
        assert gcra.check("k", 10, now=0.0).allowed
    assert not gcra.check("k", 10, now=5.99).allowed
    assert gcra.check("k", 10, now=6.0).allowed  # 60/10 = 6 s later, exactly one more
    assert not gcra.check("k", 10, now=6.0).allowed


def test_full_refill_after_a_minute_and_idle_buckets_pruned() -> None:
    store = MemoryStore()
    gcra = Gcra(store)
    for _ in range(5):
        gcra.check("a", 5, now=0.0)
    assert not gcra.check("a", 5, now=0.0).allowed
    assert gcra.check("a", 5, now=60.0).remaining == 4
    assert store.prune(now=1000.0) == 1
    assert len(store) == 0


def test_buckets_are_independent() -> None:
    gcra = Gcra()
    assert gcra.check("a", 1, now=0.0).allowed
    assert not gcra.check("a", 1, now=0.0).allowed
    assert gcra.check("b", 1, now=0.0).allowed


def test_refusal_headers() -> None:
    gcra = Gcra()
    gcra.check("k", 2, now=0.0)
    gcra.check("k", 2, now=0.0)
    headers = dict(gcra.check("k", 2, now=0.5, policy="free").headers())
    assert headers["retry-after"] == "30"  # next slot at t=30
    assert headers["x-ratelimit-limit"] == "2"
    assert headers["x-ratelimit-remaining"] == "0"
    assert headers["ratelimit-policy"] == '"free";q=2;w=60'
    assert headers["ratelimit"].startswith('"free";r=0;t=')


def test_retry_after_is_at_least_one_second() -> None:
    gcra = Gcra()
    for _ in range(600):
        gcra.check("k", 600, now=0.0)
    refused = gcra.check("k", 600, now=0.05)
    assert not refused.allowed
    assert refused.retry_after == pytest.approx(0.05)
    assert refused.retry_after_s == 1


@pytest.mark.parametrize("rate", [60_000_000_001, 10**20, 0, -5])
def test_any_stored_rate_is_safe(rate: int) -> None:
    """A rate above ~6e10/min made the interval 0 and divided by zero; 0 or negative ones too."""
    gcra = Gcra()
    decision = gcra.check("k", rate, now=0.0)
    assert decision.allowed and 1 <= decision.limit <= MAX_RATE
    assert gcra.would_allow("k", rate, now=0.0) == (decision.limit > 1)


@pytest.mark.parametrize(("rate", "bounded"), [(float("inf"), MAX_RATE), (float("nan"), 1), (0.5, 1), (7.9, 7)])
def test_bounded_rate(rate: float, bounded: int) -> None:
    assert bounded_rate(rate) == bounded


def test_would_allow_takes_nothing() -> None:
    gcra = Gcra()
    for _ in range(3):
        assert gcra.would_allow("k", 3, now=0.0)
        assert gcra.check("k", 3, now=0.0).allowed
    assert not gcra.would_allow("k", 3, now=0.0)
    assert not gcra.check("k", 3, now=0.0).allowed
    assert gcra.would_allow("k", 3, now=20.0)  # 60/3 s later one request is allowed again
    assert gcra.check("k", 3, now=20.0).allowed
