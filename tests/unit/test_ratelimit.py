"""GCRA with an injected clock: exact burst, spacing, refill and headers."""

from __future__ import annotations

import random

import pytest

from server.core import limits
from server.core.limits import MAX_RATE, Gcra, MemoryStore, Rate, bounded_rate, shared_rate


@pytest.fixture(autouse=True)
def empty_memos() -> None:
    """Each test builds its header fields and rates itself: the module's memos (shared by every caller of the
    process) would otherwise answer with what an earlier test, or a mutation run's parent process, built."""
    limits._HEADERS.clear()
    limits._RATES.clear()


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


@pytest.mark.parametrize("per_minute", [1, 2, 7, 60, 600, 1_000_000, 10**12, 0])
def test_the_hot_path_take_answers_as_check_does(per_minute: int) -> None:
    """`take` (the pipeline's hot path: a shared `Rate`, header fields kept per value) gives an allowed request
    exactly `check`'s header fields and a refusal None, over a seeded walk of bursts, gaps and refills, and leaves
    the bucket where `check` leaves it (issue 46: `take` had no in-process test)."""
    rng = random.Random(per_minute)
    fast, slow = Gcra(), Gcra()
    rate = shared_rate(per_minute, "walk")
    assert shared_rate(per_minute, "walk") is rate and shared_rate(per_minute, "other") is not rate
    now, refused = 1000.0, 0
    for _ in range(60):
        now += rng.choice((0.001, 0.25, 1.0, 7.5, 61.0))
        for _ in range(rng.choice((1, 3, min(rate.per_minute, 700) + 1))):  # now and then a burst past the rate
            decision = slow.check("k", per_minute, now, "walk")
            fields = fast.take("k", rate, now)
            if decision.allowed:
                assert fields == decision.header_tuple(), (now, decision)
            else:
                refused += 1
                assert fields is None, (now, decision)
            assert fast.store.get("k") == slow.store.get("k")
    assert refused > 0 or rate.per_minute > 700  # the walk reached the limit (it cannot at a huge rate)


def test_a_rate_is_clamped_and_its_fields_follow_the_remaining_count() -> None:
    assert (Rate(0, "p").per_minute, Rate(-3, "p").per_minute, Rate(10**12, "p").per_minute) == (1, 1, MAX_RATE)
    rate = Rate(3, "gold")
    assert (rate.interval, rate.window) == (20_000_000_000, 60_000_000_000)
    assert dict(rate.full) == {"x-ratelimit-limit": "3", "x-ratelimit-remaining": "2", "x-ratelimit-reset": "20",
                               "ratelimit-policy": '"gold";q=3;w=60', "ratelimit": '"gold";r=2;t=20'}
    gcra = Gcra()
    assert gcra.take("k", rate, 0.0) == rate.full
    second = dict(gcra.take("k", rate, 0.5) or ())
    assert second["x-ratelimit-remaining"] == "1" and second["x-ratelimit-reset"] == "40"  # 39.5 s, up
    third = dict(gcra.take("k", rate, 0.5) or ())
    assert third["x-ratelimit-remaining"] == "0" and third["ratelimit"] == '"gold";r=0;t=60'
    assert gcra.take("k", rate, 0.5) is None and gcra.take("k", rate, 19.999) is None  # the next slot: t = 20
    assert dict(gcra.take("k", rate, 20.0) or ())["x-ratelimit-remaining"] == "0"
    assert rate.fields[0 * 64 + 60] == gcra.take("k", rate, 40.5)


def test_a_refusal_leaves_the_bucket_and_the_headers_name_the_wait() -> None:
    gcra = Gcra()
    assert gcra.check("k", 1, now=10.0).allowed
    refused = gcra.check("k", 1, now=40.0, policy="free")
    assert not refused.allowed and refused.remaining == 0
    assert refused.retry_after == pytest.approx(30.0) and refused.reset == pytest.approx(30.0)
    assert dict(refused.header_tuple()) == {
        "x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "30",
        "ratelimit-policy": '"free";q=1;w=60', "ratelimit": '"free";r=0;t=30', "retry-after": "30"}
    assert not gcra.would_allow("k", 1, now=69.999) and gcra.would_allow("k", 1, now=70.0)
    assert gcra.check("k", 1, now=70.0).allowed  # the refusal took nothing


def test_prune_drops_exactly_the_buckets_that_are_full_again() -> None:
    store = MemoryStore()
    store.set("full", 5_000_000_000)
    store.set("exactly", 6_000_000_000)
    store.set("busy", 6_000_000_001)
    assert store.prune(now=6.0) == 2
    assert (store.get("full"), store.get("exactly"), store.get("busy")) == (None, None, 6_000_000_001)
    assert len(store) == 1


def test_a_check_without_a_policy_names_the_default_one() -> None:
    fields = dict(Gcra().check("k", 5, now=0.0).header_tuple())
    assert fields["ratelimit-policy"] == '"default";q=5;w=60'
