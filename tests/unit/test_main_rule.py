"""The main contract's rule (SPEC 19; server/market/contracts/main.py): decided after the close from that day's
data only, +10% open interest, never backwards, rolled on the main's last trading day whatever the margin."""

from __future__ import annotations

import math

from server.market.contracts.main import Candidate, Roll, next_main, replay

DAY = 100  # the day that closed (an ordinal)


def c(key: str, last_day: int, oi: float) -> Candidate:
    return Candidate(key, last_day, oi)


def test_a_later_contract_needs_more_than_ten_percent_more_open_interest() -> None:
    assert next_main("A", [c("A", 120, 1000), c("B", 140, 1100)], DAY) == "A"  # exactly 10%: not more
    assert next_main("A", [c("A", 120, 1000), c("B", 140, 1101)], DAY) == "B"


def test_the_largest_of_the_later_contracts_takes_over() -> None:
    got = next_main("A", [c("A", 120, 1000), c("B", 140, 1500), c("C", 160, 2000), c("D", 180, 1900)], DAY)
    assert got == "C"


def test_never_an_earlier_expiring_contract() -> None:
    assert next_main("B", [c("A", 120, 9000), c("B", 140, 1000), c("C", 160, 1050)], DAY) == "B"


def test_a_tie_goes_to_the_nearer_expiry() -> None:
    assert next_main("A", [c("A", 120, 100), c("B", 140, 500), c("C", 160, 500)], DAY) == "B"
    assert next_main(None, [c("B", 140, 500), c("C", 160, 500)], DAY) == "B"


def test_on_the_mains_last_trading_day_it_rolls_whatever_the_margin() -> None:
    assert next_main("A", [c("A", DAY, 5000), c("B", 140, 10), c("C", 160, 20)], DAY) == "C"
    assert next_main("A", [c("A", DAY + 1, 5000), c("B", 140, 10)], DAY) == "A"  # the day before it: no


def test_without_a_main_the_largest_still_trading_tomorrow() -> None:
    assert next_main(None, [c("A", DAY, 9000), c("B", 140, 10), c("C", 160, 20)], DAY) == "C"
    assert next_main(None, [], DAY) is None


def test_unknown_open_interest_counts_as_none() -> None:
    assert next_main("A", [c("A", 120, math.nan), c("B", 140, 1)], DAY) == "B"
    assert next_main("A", [c("A", 120, 10), c("B", 140, math.nan)], DAY) == "A"


def test_a_main_with_no_later_contract_stays() -> None:
    assert next_main("B", [c("A", 120, 9000), c("B", 140, 10)], DAY) == "B"


def test_replay_uses_the_day_before_and_never_switches_back() -> None:
    days = [1, 2, 3, 4, 5]
    oi = [{"A": 100, "B": 50}, {"A": 100, "B": 120}, {"A": 200, "B": 100}, {"A": 10, "B": 100}, {"A": 1, "B": 1}]
    cands = [[c(k, {"A": 4, "B": 9}[k], v) for k, v in day.items()] for day in oi]
    closes = [{"A": 10.0 + k, "B": 20.0 + k} for k in range(5)]
    mains, rolls = replay(days, cands, closes)
    assert mains == ["A", "A", "B", "B", "B"]  # day 2's data (B +20%) makes day 3's main; A's comeback is ignored
    assert rolls == [Roll(3, "A", "B", 11.0, 21.0)]


def test_replay_rolls_on_the_last_trading_day_and_starts_from_the_largest() -> None:
    days = [1, 2, 3]
    cands = [[c("A", 2, 100), c("B", 9, 60)], [c("A", 2, 100), c("B", 9, 60)], [c("B", 9, 60)]]
    mains, rolls = replay(days, cands, [{"A": 1.0, "B": 2.0}] * 3)
    assert mains == ["A", "A", "B"] and [(r.day, r.from_key, r.to_key) for r in rolls] == [(3, "A", "B")]
