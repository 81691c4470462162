"""The resume history and the core's since/epoch subscribe, without an event loop."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.market.state import AppliedTick
from server.stream.delivery.resume_history import TickHistory
from server.stream.protocol import messages as msg
from server.stream.protocol.messages import tick_frame
from tests.unit.test_stream_core import IDS, Sink, make_core, open_session, tick


def applied(row: int, seq: int, ts: float = 1_700_000_000.0) -> AppliedTick:
    return AppliedTick(row, IDS[row], 10.0 + seq / 100, 0.5, ts, seq)


def seqs_of(data: bytes | None) -> list[int]:
    assert data is not None
    sink = Sink()
    sink(data)
    return [m["seq"] for m in sink.messages()]


# --- TickHistory -------------------------------------------------------------------------------------


def small(**kw: Any) -> TickHistory:
    return TickHistory(3, tick_frame, **{"min_ticks": 8, "min_age_s": 60.0, "max_ticks": 32, "chunk": 4, **kw})


def test_replay_gives_exactly_the_missed_frames_across_chunks() -> None:
    h = small()
    frames = h.add([applied(0, s) for s in range(1, 11)])
    assert h.held(0) == (1, 10) and h.held(1) is None
    assert h.replay(0, 3, 10) == b"".join(frames[3:])  # the very frames sent live
    assert seqs_of(h.replay(0, 0, 10)) == list(range(1, 11))
    assert h.replay(0, 10, 10) == b"" and h.replay(1, 0, 0) == b""  # nothing missed
    assert h.replay(0, 11, 10) is None  # ahead of the server
    assert h.replay(0, 3, 12) is None  # the history does not reach the current seq


def test_count_floor_when_ticks_are_old_and_age_floor_when_they_are_many() -> None:
    h = small()
    h.add([applied(0, s, ts=float(s)) for s in range(1, 41)])  # one a second: 40 s, all within 60 s
    assert h.held(0) == (9, 40)  # over max_ticks (32): whole chunks dropped, the newest 32 kept
    assert h.replay(0, 7, 40) is None and seqs_of(h.replay(0, 8, 40)) == list(range(9, 41))
    old = small()
    old.add([applied(1, s, ts=100.0 * s) for s in range(1, 41)])  # 100 s apart: all but the newest are old
    first, last = old.held(1)  # type: ignore[misc]
    assert last == 40 and 8 <= last - first + 1 < 8 + 4  # the count floor (min_ticks), to a chunk


def test_a_gap_in_seq_starts_the_history_again() -> None:
    h = small()
    h.add([applied(2, s) for s in range(1, 6)])
    h.add([applied(2, 9)])  # 6..8 never came (a gap in the log)
    assert h.held(2) == (9, 9)
    assert h.replay(2, 5, 9) is None and seqs_of(h.replay(2, 8, 9)) == [9]


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        TickHistory(1, tick_frame, min_ticks=4, max_ticks=6, chunk=4)


# --- the core: since / epoch -------------------------------------------------------------------------


def resume(core: Any, sink: Sink, ids: list[str], since: dict[str, int], epoch: str = "epoch-1") -> list[dict]:
    sink.clear()
    s = next(iter(core.sessions.by_id.values()))
    message = {"op": "subscribe", "ids": ids, "since": since, "epoch": epoch, "reqId": 1}
    core.messages.on_text(s, orjson.dumps(message), 1.0)
    return sink.messages()


def test_resume_acks_recovered_then_the_missed_ticks_then_live_ones() -> None:
    core, state, _ = make_core()
    _, sink = open_session(core)
    for seq in range(1, 6):
        state.seq[0] = seq
        core.fanout.on_ticks([tick(0, seq)])
    got = resume(core, sink, [IDS[0]], {IDS[0]: 2})
    assert got[0] == {"type": "subscribed", "ids": [IDS[0]], "reqId": 1, "recovered": True}
    assert [(m["type"], m["seq"]) for m in got[1:]] == [("tick", 3), ("tick", 4), ("tick", 5)]
    sink.clear()
    state.seq[0] = 6
    core.fanout.on_ticks([tick(0, 6)])
    assert [m["seq"] for m in sink.messages()] == [6]


@pytest.mark.parametrize(("since", "epoch", "ids"), [
    ({IDS[0]: 2}, "other-epoch", [IDS[0]]),
    ({IDS[0]: 9}, "epoch-1", [IDS[0]]),  # ahead of the server
    ({IDS[0]: 3}, "epoch-1", [IDS[0], IDS[1]]),  # nothing known of IDS[1]
])
def test_resume_that_cannot_recover_gets_recovered_false_and_a_snapshot(
        since: dict[str, int], epoch: str, ids: list[str]) -> None:
    core, state, _ = make_core()
    _, sink = open_session(core)
    state.seq[0] = 3
    core.fanout.on_ticks([tick(0, 1), tick(0, 2), tick(0, 3)])
    got = resume(core, sink, ids, since, epoch)
    assert got[0]["recovered"] is False
    assert got[1]["type"] == "snapshot" and got[1]["seqs"][IDS[0]] == 3 and len(got) == 2


def test_snapshot_names_each_instruments_seq() -> None:
    core, state, _ = make_core()
    state.seq[1] = 42
    _, sink = open_session(core)
    snap = sink.messages()[0]
    assert snap["epoch"] == "epoch-1" and snap["seqs"][IDS[1]] == 42 and set(snap["seqs"]) == set(IDS)


@pytest.mark.parametrize(("body", "words"), [
    ({"op": "subscribe", "ids": ["a"], "since": {"a": 1}}, "go together"),
    ({"op": "subscribe", "ids": ["a"], "since": {"a": -1}, "epoch": "e"}, "integer >= 0"),
    ({"op": "subscribe", "ids": ["a"], "since": {"a": 2**53 + 1}, "epoch": "e"}, "integer >= 0"),
    ({"op": "subscribe", "ids": ["a"], "since": "a", "epoch": "e"}, "must be an object"),
    ({"op": "unsubscribe", "ids": ["a"], "since": {"a": 1}, "epoch": "e"}, "subscribe only"),
])
def test_parser_refuses_bad_since_and_epoch(body: dict[str, Any], words: str) -> None:
    parsed = msg.parse_client_message(orjson.dumps(body))
    assert isinstance(parsed, msg.MessageError) and words in parsed.detail


def test_handshake_takes_the_header_key_first() -> None:
    core, _, _ = make_core()
    s = core.sessions.connect(Sink(), 0.0)
    assert core.sessions.admit(s, "/ws/quotes?key=nope", ["pro"]) is None
    s2 = core.sessions.connect(Sink(), 0.0)
    refusal = core.sessions.admit(s2, "/ws/quotes?key=pro", ["pro", "pro"])
    assert refusal is not None and refusal.error.status == 401


def test_asyncapi_documents_resume_and_the_header_key() -> None:
    from server.api.docs.asyncapi import build_asyncapi
    from server.config import Settings

    doc = build_asyncapi(Settings(), Settings())  # its http and stream groups
    schemas = doc["components"]["schemas"]
    assert {"since", "epoch"} <= set(schemas["Subscribe"]["properties"])
    assert "recovered" in schemas["Subscribed"]["properties"] and "seqs" in schemas["Snapshot"]["required"]
    assert doc["components"]["securitySchemes"]["headerKey"] == {"type": "httpApiKey", "name": "X-SERVICE-Key",
                                                                 "in": "header"}
    assert "X-SERVICE-Key" in doc["channels"]["quotes"]["bindings"]["ws"]["headers"]["properties"]
