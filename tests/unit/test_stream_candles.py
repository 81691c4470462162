"""Live candle frames and heartbeats without an event loop (SPEC 14): CandleFrames over a real MarketState,
the subscribe parser's candles, and the StreamCore's fan-out of candle frames and heartbeats."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import orjson
import pytest

from server.core.limits import Gcra
from server.core.metrics import Registry
from server.market.candles.daily import CandleBook
from server.market.catalogue import default_catalogue
from server.market.state import MarketState
from server.market.tick import Tick
from server.market.timefmt import TZ
from server.stream.core import StreamCore
from server.stream.delivery.candle_frames import GRACE_S, CandleFrames, K
from server.stream.delivery.resume_history import TickHistory
from server.stream.limits import StreamLimits
from server.stream.metrics import StreamMetrics
from server.stream.protocol import messages as msg
from server.stream.protocol.messages import tick_frame
from server.stream.protocol.outbuf import OutBuffer
from tests.unit.test_stream_core import KEYS, Sink

CAT = default_catalogue()
IDS = [inst.id for inst in CAT.instruments]
BRENT = IDS.index("brent")
T0 = datetime(2026, 11, 18, 10, 30, tzinfo=TZ).timestamp()  # a Wednesday, a minute boundary


def fresh_state() -> MarketState:
    return MarketState(CAT, CandleBook(len(IDS)), demo=False, epoch="e")


def decode(frame: bytes) -> dict[str, Any]:
    head = 2 if frame[1] < 126 else 4
    return dict(orjson.loads(frame[head:]))


def apply(state: MarketState, frames: CandleFrames, *ticks: tuple[float, float, float]) -> list[dict[str, Any]]:
    applied = state.apply([Tick(BRENT, price, ts, volume) for price, ts, volume in ticks])
    return [decode(f) for _, f in frames.on_ticks(applied)]


def kline(state: MarketState, interval: str) -> list[dict[str, Any]]:
    return state.kline_intraday(BRENT, interval, 1000) if interval != "1d" else state.kline(BRENT, 5)


def test_a_tick_in_a_newer_bucket_makes_the_old_one_final_equal_to_kline() -> None:
    state = fresh_state()
    frames = CandleFrames(state)
    assert apply(state, frames, (80.0, T0 + 1, 2), (81.0, T0 + 30.2, 1)) == []
    finals = apply(state, frames, (79.0, T0 + 61, 3))
    by = {f["interval"]: f for f in finals}
    assert set(by) == {"1m"}  # 5m, 15m, 1h and 1d still fill
    one = by["1m"]
    assert one["final"] is True and one["seq"] == 2 and one["type"] == "candle" and one["id"] == "brent"
    assert {k: one[k] for k in "tohlcv"} == kline(state, "1m")[0]
    assert list(one) == ["type", "id", "interval", "t", "o", "h", "l", "c", "v", "final", "seq"]


def test_a_run_sends_the_newest_completed_second_once() -> None:
    state = fresh_state()
    frames = CandleFrames(state)
    apply(state, frames, (80.0, T0 + 1.1, 1))
    apply(state, frames, (80.5, T0 + 1.9, 1))
    apply(state, frames, (81.0, T0 + 2.2, 1))  # second 1 complete: its state (80.5) is pending
    sent = [decode(f) for _, f in frames.on_run(T0 + 2 + GRACE_S)]  # a run at 2.5 sends second 1
    brent_1m = [f for f in sent if f["interval"] == "1m"]
    assert [(f["c"], f["seq"], f["final"]) for f in brent_1m] == [(80.5, 2, False)]
    assert len(sent) == K  # one per interval of brent
    again = [decode(f) for _, f in frames.on_run(T0 + 3 + GRACE_S)]  # second 2 (81.0), once
    assert [(f["c"], f["seq"]) for f in again if f["interval"] == "1m"] == [(81.0, 3)]
    assert frames.on_run(T0 + 4 + GRACE_S) == []  # nothing new: nothing sent
    # the frame a new subscriber gets right after its ack: the last shared one of the open bucket
    assert decode(frames.current(BRENT * K)) == again[0]


def test_a_late_run_defers_the_next_runs_frames_with_their_content() -> None:
    """Two hubs apply the same ticks; one's run at 2.5 comes late (at 3.1, in the next second of the clock). It
    sends second 1 there, so its on-time run at 3.5 may not send second 2 in the same second: that frame goes out
    at ``deferred_to`` (just past 4.0), the same bytes as the on-time hub's, never conflated into second 3."""
    hubs = [(fresh_state(), None) for _ in range(2)]
    pairs = [(state, CandleFrames(state)) for state, _ in hubs]
    sent: list[list[tuple[float, dict[str, Any]]]] = [[], []]

    def run(i: int, at: float) -> None:
        sent[i] += [(at, decode(f)) for ch, f in pairs[i][1].on_run(T0 + at) if ch == BRENT * K]  # brent 1m

    for i, (state, frames) in enumerate(pairs):
        apply(state, frames, (80.0, T0 + 1.5, 1))
        apply(state, frames, (80.5, T0 + 2.4, 1))  # second 1 complete (80.0)
        if i == 0:
            run(0, 2 + GRACE_S)
        apply(state, frames, (81.0, T0 + 3.05, 1))  # second 2 complete (80.5)
        if i == 1:
            run(1, 3.1)  # the run due at 2.5, late
        apply(state, frames, (81.5, T0 + 3.3, 1))
        run(i, 3 + GRACE_S)
        apply(state, frames, (82.0, T0 + 4.01, 1))  # second 3 complete (81.5): second 2 is not conflated into it
    late = pairs[1][1]
    assert late.deferred_to is not None and 4.0 < late.deferred_to - T0 < 4.1
    assert pairs[0][1].deferred_to is None
    run(1, late.deferred_to - T0)
    assert late.deferred_to is None
    for i in range(2):
        run(i, 4 + GRACE_S)  # second 3: on time for hub 0; for hub 1 held again (it sent in second 4 already)
    assert [f for _, f in sent[1]] == [f for _, f in sent[0]][: len(sent[1])]
    assert [(f["c"], f["seq"]) for _, f in sent[0]] == [(80.0, 1), (80.5, 2), (81.5, 4)]
    assert len(sent[1]) == 2 and late.deferred_to is not None
    run(1, late.deferred_to - T0)
    assert [f for _, f in sent[1]] == [f for _, f in sent[0]]  # the same frames, in the same order
    for i in range(2):  # never two non-final frames of a channel in one second of the clock
        seconds = [int(at // 1) for at, f in sent[i] if not f["final"]]
        assert len(seconds) == len(set(seconds)), sent[i]


def test_a_run_builds_no_frame_for_a_channel_nobody_holds_and_keeps_its_finals() -> None:
    state = fresh_state()
    frames = CandleFrames(state)
    wanted: list[list[object]] = [[] for _ in range(len(IDS) * K)]
    wanted[BRENT * K] = [object()]  # only brent 1m has a subscriber
    apply(state, frames, (80.0, T0 + 1.1, 1))
    apply(state, frames, (81.0, T0 + 2.2, 1))
    sent = [decode(f) for _, f in frames.on_run(T0 + 2 + GRACE_S, wanted)]
    assert [(f["interval"], f["c"], f["final"]) for f in sent] == [("1m", 80.0, False)]
    # a later subscriber of an unbuilt channel gets its current candle from the book (81.0, seq 2)
    five = decode(frames.current(BRENT * K + 1))  # type: ignore[arg-type]
    assert (five["interval"], five["c"], five["seq"], five["final"]) == ("5m", 81.0, 2, False)
    # finals still go out whoever holds the channel: the clock closes 1m and 5m buckets alike
    finals = [decode(f) for _, f in frames.on_run(T0 + 300 + GRACE_S, wanted) if decode(f)["final"]]
    assert {f["interval"] for f in finals} >= {"1m", "5m"}


def test_the_clock_finalises_a_live_bucket_and_seals_it() -> None:
    state = fresh_state()
    frames = CandleFrames(state)
    apply(state, frames, (80.0, T0 + 59.5, 4))
    out = [decode(f) for _, f in frames.on_run(T0 + 60 + GRACE_S)]
    finals = [f for f in out if f["final"]]
    assert [(f["interval"], f["t"]) for f in finals] == [("1m", "2026-11-18T10:30:00.000+08:00")]
    assert {k: finals[0][k] for k in "tohlcv"} == kline(state, "1m")[0]
    # a late tick stamped inside the sealed bucket counts toward the next one: the final frame stays true
    apply(state, frames, (90.0, T0 + 59.9, 1))
    series = kline(state, "1m")
    assert series[0] == {k: finals[0][k] for k in "tohlcv"}
    assert series[1]["t"] == "2026-11-18T10:31:00.000+08:00" and series[1]["c"] == 90.0
    later = [decode(f) for now in (T0 + 200, T0 + 201, T0 + 202) for _, f in frames.on_run(now)]
    assert sum(f["final"] and f["interval"] == "1m" for f in later) == 1  # the 10:31 bucket, once (when quiet)


def test_old_ticks_replayed_in_one_batch_get_one_final_per_bucket() -> None:
    state = fresh_state()
    frames = CandleFrames(state)
    old = T0 - 3600
    finals = apply(state, frames, (80.0, old + 5, 1), (81.0, old + 70, 1), (82.0, old + 130, 1))
    assert [(f["interval"], f["t"][11:16]) for f in finals] == [("1m", "09:30"), ("1m", "09:31")]
    # still ticking (seq moved since the previous run): the open bucket waits; quiet: final
    assert [f for _, f in frames.on_run(T0) if decode(f)["final"]] == []
    quiet = [decode(f) for _, f in frames.on_run(T0 + 1)]
    assert sorted((f["interval"], f["t"][11:16]) for f in quiet if f["final"]) == [
        ("15m", "09:30"), ("1h", "09:00"), ("1m", "09:32"), ("5m", "09:30")]


def test_parse_candles() -> None:
    op = msg.parse_client_message(b'{"op":"subscribe","ids":["brent"],"candles":["1d","1m","1m"]}')
    assert isinstance(op, msg.ClientOp) and op.candles == ("1m", "1d")
    plain = msg.parse_client_message(b'{"op":"subscribe","ids":["brent"]}')
    assert isinstance(plain, msg.ClientOp) and plain.candles is None
    for bad in (b'"1m"', b'["2m"]', b"[1]", b"null"):
        err = msg.parse_client_message(b'{"op":"subscribe","ids":[],"candles":' + bad + b"}")
        assert isinstance(err, msg.MessageError) and err.code is msg.ErrorCode.INVALID_MESSAGE
        assert "candles" in err.detail


def test_a_held_heartbeat_goes_out_after_the_held_ticks() -> None:
    out = OutBuffer(10, 100)
    out.pause(0.0)
    out.hold([(1, b"t1")])
    out.hold_last(b"hb1")
    out.hold([(2, b"t2"), (1, b"t1b")])
    out.hold_last(b"hb2")
    assert out.resume() == (b"t2t1bhb2", 2)
    out.hold_last(b"hb3")
    assert out.resume() == (b"hb3", 0)


def make_core(state: MarketState, lim: StreamLimits) -> StreamCore:
    """The core as the stream service builds it: the root's buckets and history, the state's candle frames."""
    return StreamCore(state, CAT, "e", lim, StreamMetrics(Registry(), lambda: 0.0), KEYS.get, Gcra(),
                      TickHistory(len(IDS), tick_frame), CandleFrames(state))


@pytest.fixture
def core() -> StreamCore:
    state = fresh_state()
    lim = StreamLimits(max_conn={"professional": 5, "enterprise": 50}, heartbeat_s=2.0)
    return make_core(state, lim)


def open_session(core: StreamCore) -> Sink:
    sink = Sink()
    s = core.sessions.connect(sink, 0.0)
    assert core.sessions.admit(s, "/ws/quotes?key=pro") is None
    core.sessions.open(s)
    sink.clear()
    return sink


def test_core_candle_subscriptions_frames_and_heartbeats(core: StreamCore) -> None:
    a, b = open_session(core), open_session(core)
    session_a = next(s for s in core.sessions.by_id.values() if s.write is a)
    core.messages.on_text(session_a, b'{"op":"subscribe","ids":["brent","wti"],"candles":["1m"],"reqId":1}', 0.0)
    ack = a.messages()[0]
    assert ack == {"type": "subscribed", "ids": ["brent", "wti"], "reqId": 1, "candles": ["1m"]}
    a.clear()
    state = core.state
    assert isinstance(state, MarketState)
    core.fanout.on_ticks(state.apply([Tick(BRENT, 80.0, T0 + 1, 1)]))
    core.fanout.on_ticks(state.apply([Tick(BRENT, 80.5, T0 + 2.1, 1)]))
    core.schedule.on_clock(T0 + 2 + GRACE_S)  # a candle run; T0 is a multiple of 2: a heartbeat comes at T0 + 4
    got_a = [m for m in a.messages() if m["type"] == "candle"]
    assert [(m["interval"], m["c"], m["final"]) for m in got_a] == [("1m", 80.0, False)]
    assert [m for m in b.messages() if m["type"] == "candle"] == []  # b subscribed to no candles
    a.clear()
    b.clear()
    core.schedule.on_clock(T0 + 4.0)  # a candle run (second 2) and a heartbeat, which waits for the next tick batch
    assert [m for m in a.messages() if m["type"] == "heartbeat"] == [] and b.messages() == []
    assert core.schedule.next_wakeup(T0 + 4.0) == T0 + 4.25  # ... for BEAT_WAIT_S at most
    a.clear()
    core.fanout.on_ticks(state.apply([Tick(BRENT, 80.7, T0 + 4.1, 1)]))  # it heads the batch's write: one write each
    assert len(a.writes) == len(b.writes) == 1
    beat_a, tick_a = a.messages()
    beat_b = b.messages()
    assert beat_a == {"type": "heartbeat", "ts": "2026-11-18T10:30:04.000+08:00", "seqs": {"brent": 2, "wti": 0}}
    assert tick_a["type"] == "tick" and tick_a["seq"] == 3
    assert beat_b[0]["type"] == "heartbeat" and len(beat_b[0]["seqs"]) == len(IDS)
    assert beat_b[0]["seqs"]["brent"] == 2 and beat_b[1]["seq"] == 3
    a.clear()
    core.messages.on_text(session_a, b'{"op":"unsubscribe","ids":[],"candles":["1m"],"reqId":2}', 0.1)
    assert a.messages()[0] == {"type": "subscribed", "ids": ["brent", "wti"], "reqId": 2, "candles": []}
    assert core.candle_registry.rows_of(session_a) == frozenset()
    assert np.array_equal(state.seq[[BRENT]], [3])


def test_a_heartbeat_rides_the_next_batch_or_goes_alone(core: StreamCore) -> None:
    """A group the batch does not touch gets its heartbeat alone in that call; with no batch, every group gets
    it alone BEAT_WAIT_S after the beat (a quarter of --heartbeat-s when that is shorter)."""
    a, b = open_session(core), open_session(core)
    session_a = next(s for s in core.sessions.by_id.values() if s.write is a)
    core.messages.on_text(session_a, b'{"op":"subscribe","ids":["brent"],"reqId":1}', 0.0)
    a.clear()
    state = core.state
    assert isinstance(state, MarketState)
    wti = IDS.index("wti")
    core.schedule.on_clock(T0 + 4.0)
    assert a.writes == b.writes == []
    core.fanout.on_ticks(state.apply([Tick(wti, 70.0, T0 + 4.1, 1)]))
    assert [m["type"] for m in a.messages()] == ["heartbeat"]  # brent's group: not touched, its beat alone
    assert len(b.writes) == 1 and [m["type"] for m in b.messages()] == ["heartbeat", "tick"]
    a.clear()
    b.clear()
    core.fanout.on_ticks(state.apply([Tick(wti, 70.1, T0 + 4.2, 1)]))
    assert a.writes == [] and [m["type"] for m in b.messages()] == ["tick"]  # a beat goes out once
    b.clear()
    core.schedule.on_clock(T0 + 6.0)
    core.schedule.on_clock(T0 + 6.2)
    assert a.writes == b.writes == []
    assert core.schedule.next_wakeup(T0 + 6.2) == T0 + 6.25
    core.schedule.on_clock(T0 + 6.25)
    assert [m["seqs"] for m in a.messages()] == [{"brent": 0}]
    assert [m["type"] for m in b.messages()] == ["heartbeat"] and b.messages()[0]["seqs"]["wti"] == 2
    a.clear()
    core.schedule.on_clock(T0 + 8.0)
    core.schedule.on_clock(T0 + 10.0)  # the beat of 8 s found no batch and no clock call in time: it goes out first
    assert [m["ts"][11:19] for m in a.messages()] == ["10:30:08"]


def test_keepalive_pings_ride_the_heartbeats() -> None:
    """--heartbeat-s 5, keepalive 20 s: a session is pinged with the first beat 17.5 s or more after its open or
    last ping (so every 20 s), its write carrying the heartbeat and then a ping frame; no ping while one awaits
    its pong; the sweep pings nobody."""
    lim = StreamLimits(max_conn={"professional": 50}, heartbeat_s=5.0)
    core = make_core(fresh_state(), lim)
    early, late = Sink(), Sink()
    for sink, opened in ((early, T0 - 1.0), (late, T0 + 4.0)):
        s = core.sessions.connect(sink, opened)
        assert core.sessions.admit(s, "/ws/quotes?key=pro") is None
        core.sessions.open(s)
        sink.clear()
    sessions = {s.write: s for s in core.sessions.by_id.values()}
    pings_at: dict[int, list[float]] = {s.id: [] for s in sessions.values()}
    for beat in range(10):  # 50 s of beats, none carried by a batch
        now = T0 + 5.0 * beat
        core.schedule.on_clock(now)
        core.schedule.on_clock(now + 0.25)
        for sink in (early, late):
            session = sessions[sink]
            (data,) = sink.writes
            assert data.startswith(b"\x81") and b'"heartbeat"' in data
            if data.endswith(b"\x89\x00"):
                pings_at[session.id].append(now)
                assert session.ping_sent_at == now  # the pong timeout runs from the beat
                session.pong_received()
            sink.clear()
        assert core.keepalive.sweep(now + 1).ping == []
    assert pings_at[sessions[early].id] == [T0 + 20.0, T0 + 40.0]  # 21 s after its open, then 20 s later
    assert pings_at[sessions[late].id] == [T0 + 25.0, T0 + 45.0]  # 21 s after, then 20 s later
    silent = sessions[early]
    for beat in (T0 + 60.0, T0 + 65.0, T0 + 80.0):
        core.schedule.on_clock(beat)
        core.schedule.on_clock(beat + 0.25)
    assert silent.ping_sent_at == T0 + 60.0  # not pinged again while the last is unanswered
