"""The stream's bookkeeping (market_client.resume.ResumeState) driven directly: no socket, exact cases."""

from __future__ import annotations

from datetime import datetime

import msgspec
from market_client.events import Gap, Snapshot, Subscribed, Tick
from market_client.resume import ResumeState

TS = datetime.fromisoformat("2026-11-23T10:00:00+08:00")


def tick(i: str, seq: int) -> Tick:
    return Tick(id=i, price=1.0, change=0.0, ts=TS, seq=seq)


def snapshot(epoch: str, seqs: dict[str, int]) -> Snapshot:
    return Snapshot(updated=TS, quotes=[], epoch=epoch, seqs=seqs)


def handed_on(state: ResumeState, *msgs: object) -> list[object]:
    out: list[object] = []
    for m in msgs:
        out += state.on_ack(m) if isinstance(m, Subscribed) else state.on_message(m)  # type: ignore[arg-type]
    return out


def test_first_subscribe_has_no_resume_and_later_ones_resume_from_the_last_seq() -> None:
    state = ResumeState(["brent", "wti"])
    assert msgspec.json.decode(state.subscribe_message("c1") or b"") == {
        "op": "subscribe", "ids": ["brent", "wti"], "reqId": "c1"}
    handed_on(state, Subscribed(ids=["brent", "wti"], req_id="c1"), snapshot("E1", {"brent": 10, "wti": 4}),
              tick("brent", 11), tick("brent", 12))
    assert msgspec.json.decode(state.subscribe_message("c2") or b"") == {
        "op": "subscribe", "ids": ["brent", "wti"], "reqId": "c2", "since": {"brent": 12, "wti": 4}, "epoch": "E1"}


def test_all_instruments_subscribe_only_to_resume() -> None:
    state = ResumeState(None)
    assert state.subscribe_message("c1") is None  # the connection's snapshot is the full set already
    handed_on(state, Snapshot(updated=TS, quotes=[], epoch="E1", seqs={"a": 1, "b": 2}), tick("a", 2))
    state.known_ids = ["a", "b"]
    assert msgspec.json.decode(state.subscribe_message("c2") or b"")["since"] == {"a": 2, "b": 2}


def test_duplicates_are_dropped_and_a_live_jump_is_a_gap_with_its_exact_range() -> None:
    state = ResumeState(["brent"])
    out = handed_on(state, snapshot("E1", {"brent": 5}), tick("brent", 6), tick("brent", 6), tick("brent", 5),
                    tick("brent", 9), tick("brent", 10))
    assert [o.seq for o in out if isinstance(o, Tick)] == [6, 9, 10]
    gaps = [o for o in out if isinstance(o, Gap)]
    assert len(gaps) == 1 and gaps[0].reason == "seq_jump" and gaps[0].missed == {"brent": (7, 8)}
    assert out.index(gaps[0]) == out.index(tick("brent", 9)) - 1


def test_recovered_resume_hands_on_the_replay_without_gap_or_duplicate() -> None:
    state = ResumeState(["brent"])
    handed_on(state, snapshot("E1", {"brent": 5}), tick("brent", 6), tick("brent", 7))
    state.subscribe_message("c2")
    out = handed_on(state, Subscribed(ids=["brent"], req_id="c2", recovered=True), tick("brent", 7),
                    tick("brent", 8), tick("brent", 9))
    assert out == [tick("brent", 8), tick("brent", 9)] and state.resumes == {"recovered": 1, "refused": 0}


def test_refused_resume_is_one_gap_from_the_first_missed_seq_then_a_fresh_baseline() -> None:
    state = ResumeState(["brent", "wti"])
    handed_on(state, snapshot("E1", {"brent": 5, "wti": 3}), tick("brent", 6))
    state.subscribe_message("c2")
    out = handed_on(state, Subscribed(ids=["brent", "wti"], req_id="c2", recovered=False))
    assert out == [Gap(reason="not_recovered", missed={"brent": (7, None), "wti": (4, None)}, epoch="E1")]
    assert state.resumes == {"recovered": 0, "refused": 1}
    # same epoch, no seqs in the snapshot (an older server): the next tick starts afresh, no second gap
    out = handed_on(state, Snapshot(updated=TS, quotes=[], epoch="E1"), tick("brent", 40), tick("wti", 20),
                    tick("brent", 42))
    assert [type(o) for o in out] == [Snapshot, Tick, Tick, Gap, Tick]
    assert out[3] == Gap(reason="seq_jump", missed={"brent": (41, 41)}, epoch="E1")


def test_a_new_epoch_starts_every_instrument_afresh() -> None:
    state = ResumeState(["brent"])
    handed_on(state, snapshot("E1", {"brent": 500}), tick("brent", 501))
    state.subscribe_message("c2")
    handed_on(state, Subscribed(ids=["brent"], req_id="c2", recovered=False))
    out = handed_on(state, snapshot("E2", {"brent": 3}), tick("brent", 4), tick("brent", 5))
    assert [o.seq for o in out if isinstance(o, Tick)] == [4, 5] and state.epoch == "E2"
    assert state.last == {"brent": 5}
