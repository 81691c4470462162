"""The client's charting bookkeeping without a socket (SPEC 14): range-query paging (`Pager`), the candle gaps a
reconnect leaves (`ResumeState`), and a heartbeat that names ticks the stream never got."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import msgspec
import pytest
from market_client import _calls as c
from market_client.errors import MarketError
from market_client.events import CandleGap, CandleUpdate, Heartbeat, Snapshot, Subscribed, Tick
from market_client.models import Candle, CandleSeries
from market_client.paging import Pager
from market_client.resume import ResumeState

TS = datetime.fromisoformat("2026-11-23T10:00:00+08:00")


def minute(n: int) -> str:
    return (TS + timedelta(minutes=n)).isoformat()


def candle(t: str) -> Candle:
    return Candle(t=t, open=1.0, high=2.0, low=0.5, close=1.5, volume=10.0)


def series(ts: list[str], nxt: str | None = None) -> CandleSeries:
    return CandleSeries(id="brent", updated=TS, demo=True, interval="1m", series=[candle(t) for t in ts], next=nxt)


def update(t: str, final: bool, interval: str = "1m") -> CandleUpdate:
    return CandleUpdate(id="brent", interval=interval, t=t, open=1.0, high=2.0, low=0.5, close=1.5, volume=10.0,
                        final=final, seq=1)


def test_range_bounds_are_sent_as_the_server_reads_them() -> None:
    call = c.kline("brent", interval="1m", limit=5, start=TS, end=1_764_000_000_000)
    assert call.params == {"interval": "1m", "limit": "5", "from": "2026-11-23T10:00:00+08:00",
                           "to": "1764000000000"}
    assert c.kline("brent", start=date(2026, 11, 2), end="2026-11-20").params == {"from": "2026-11-02",
                                                                                   "to": "2026-11-20"}
    with pytest.raises(ValueError, match="naive datetime"):
        c.kline("brent", start=datetime(2026, 11, 2, 10, 0))
    with pytest.raises(TypeError):
        c.kline("brent", start=True)
    assert c.kline("brent", start=datetime(2026, 11, 2, 2, tzinfo=UTC)).params["from"] == (
        "2026-11-02T02:00:00+00:00")


def test_forward_pages_follow_next_until_it_is_absent() -> None:
    pager = Pager("brent", "1m", start=minute(0), end=minute(10), page=3)
    got: list[str] = []
    answers = [series([minute(0), minute(1), minute(2)], minute(4)),  # minute 3 had no tick
               series([minute(4), minute(5), minute(6)], minute(7)), series([minute(7)])]
    for answer in answers:
        assert not pager.done
        sent = pager.call().params
        assert sent["to"] == minute(10) and sent["limit"] == "3"
        got += [x.t for x in pager.take(answer)]
    assert pager.done and pager.pages == 3
    assert got == [minute(i) for i in (0, 1, 2, 4, 5, 6, 7)]


def test_forward_cursor_sequence() -> None:
    pager = Pager("brent", "1m", start=minute(0), end=None, page=2)
    sent = [pager.call().params.get("from")]
    pager.take(series([minute(0), minute(1)], minute(2)))
    sent.append(pager.call().params.get("from"))
    pager.take(series([minute(2)]))
    assert sent == [minute(0), minute(2)] and pager.done
    assert "to" not in pager.call().params


def test_a_cursor_that_does_not_move_on_raises() -> None:
    pager = Pager("brent", "1m", start=minute(0), end=None, page=2)
    pager.take(series([minute(0), minute(1)], minute(2)))
    with pytest.raises(MarketError, match="does not move on"):
        pager.take(series([minute(2), minute(3)], minute(2)))
    backward = Pager("brent", "1m", start=None, end=None, page=2)
    backward.take(series([minute(4), minute(5)]))
    with pytest.raises(MarketError, match="does not move on"):
        backward.take(series([minute(4), minute(5)]))


def test_without_start_pages_back_from_end_and_hands_on_ascending() -> None:
    pager = Pager("brent", "1m", start=None, end=minute(9), page=2)
    sent = []
    out: list[str] = []
    for answer in (series([minute(7), minute(8)]), series([minute(4), minute(6)]), series([minute(3)])):
        params = pager.call().params
        assert "from" not in params
        sent.append(params["to"])
        out += [x.t for x in pager.take(answer)]
    assert sent == [minute(9), minute(7), minute(4)] and pager.done
    assert out == [minute(i) for i in (3, 4, 6, 7, 8)]


def test_subscribe_carries_the_candle_intervals_and_all_ids_wait_for_the_first_snapshot() -> None:
    some = ResumeState(["brent"], candles=["1m", "1d", "1m"])
    assert msgspec.json.decode(some.subscribe_message("c1") or b"") == {
        "op": "subscribe", "ids": ["brent"], "reqId": "c1", "candles": ["1m", "1d"]}
    every = ResumeState(None, candles=["5m"])
    assert every.needs_ids
    every.learn_ids(Snapshot(updated=TS, quotes=[], epoch="E"))  # no quotes: still nothing learnt
    assert every.needs_ids
    assert ResumeState(None).subscribe_message("c1") is None  # no candles: the default full set, no subscribe


def test_a_reconnect_reports_the_buckets_it_missed_once() -> None:
    state = ResumeState(["brent"], candles=["1m"])
    state.on_ack(Subscribed(ids=["brent"], req_id="c1"))
    seen = [*state.on_message(update(minute(0), True)), *state.on_message(update(minute(1), False))]
    assert all(isinstance(e, CandleUpdate) for e in seen)
    state.new_connection()  # cut while minute 1 was filling; minutes 1..3 closed meanwhile
    first = state.on_message(update(minute(4), False))
    assert isinstance(first[0], CandleGap) and first[1] == update(minute(4), False)
    gap = first[0]
    assert (gap.start, gap.end, gap.last, gap.open) == (minute(1), minute(4), minute(1), (minute(1),))
    assert [t for t in (minute(0), minute(1), minute(2), minute(3)) if gap.wanted(t)] == [minute(1), minute(2),
                                                                                         minute(3)]
    assert state.on_message(update(minute(4), False)) == [update(minute(4), False)]  # once per reconnect


def test_no_gap_when_the_same_bucket_goes_on_and_the_earlier_one_was_final() -> None:
    state = ResumeState(["brent"], candles=["1m"])
    state.on_message(update(minute(0), True))
    state.on_message(update(minute(1), False))
    state.new_connection()
    assert state.on_message(update(minute(1), False)) == [update(minute(1), False)]
    fresh = ResumeState(["brent"], candles=["1m"])  # the first connection has nothing to compare with
    fresh.new_connection()
    assert fresh.on_message(update(minute(7), False)) == [update(minute(7), False)]


def test_an_unfinished_earlier_bucket_is_a_gap_even_when_the_latest_goes_on() -> None:
    state = ResumeState(["brent"], candles=["1m"])
    state.on_message(update(minute(1), False))
    state.on_message(update(minute(2), False))  # minute 2 started before minute 1's final frame came
    state.new_connection()
    gap, _ = state.on_message(update(minute(2), False))
    assert isinstance(gap, CandleGap) and (gap.start, gap.end, gap.open) == (minute(1), minute(2), (minute(1),))


def test_a_heartbeat_above_the_last_tick_seen_marks_the_stream_behind() -> None:
    state = ResumeState(["brent", "wti"])
    state.on_message(Snapshot(updated=TS, quotes=[], epoch="E", seqs={"brent": 5, "wti": 9}))
    state.on_message(Tick(id="brent", price=1.0, change=0.0, ts=TS, seq=6))
    hb = Heartbeat(ts=TS, seqs={"brent": 6, "wti": 9})
    assert state.on_message(hb) == [hb] and state.behind == {}
    state.on_message(Heartbeat(ts=TS, seqs={"brent": 8, "wti": 9, "sc": 3}))
    assert state.behind == {"brent": 8}  # sc: never subscribed here, nothing known
    state.new_connection()
    assert state.behind == {}
    assert msgspec.json.decode(state.subscribe_message("c2") or b"")["since"] == {"brent": 6, "wti": 9}
