from datetime import date, datetime

import numpy as np
import orjson
import pytest

from server.feeds.jsonl import JsonlParser
from server.market.catalogue import default_catalogue
from server.market.demo import DemoWalk
from server.market.tick import Tick

CAT = default_catalogue()
END = date(2026, 11, 23)
WTI_TS = datetime.fromisoformat("2026-11-21T02:15:30.123+00:00").timestamp()


def batches(seed: int, k: int = 20) -> list[list[Tick]]:
    feed = DemoWalk(CAT, seed)
    return [feed.next_batch(1_795_000_000.0 + i * 0.25, 0.25) for i in range(k)]


def test_same_seed_same_batches_and_history() -> None:
    assert batches(7) == batches(7)
    h1, h2 = DemoWalk(CAT, 7).history(END), DemoWalk(CAT, 7).history(END)
    assert h1[0] == h2[0]
    for a, b in zip(h1[1:], h2[1:], strict=True):
        np.testing.assert_array_equal(a, b)


def test_different_seed_differs() -> None:
    assert batches(7) != batches(8)
    assert not np.array_equal(DemoWalk(CAT, 7).live_prices(), DemoWalk(CAT, 8).live_prices())
    assert not np.array_equal(DemoWalk(CAT, 7).history(END)[4], DemoWalk(CAT, 8).history(END)[4])


def test_history_joins_live_price_and_is_consistent() -> None:
    feed = DemoWalk(CAT, 11)
    days, o, h, low, c, v = feed.history(END, 90)
    assert len(days) == 90 and days[-1] == END
    assert o.shape == (len(CAT.instruments), 90)
    np.testing.assert_array_equal(c[:, -1], feed.live_prices())
    assert (h >= np.maximum(o, c)).all() and (low <= np.minimum(o, c)).all()
    assert (low > 0).all()
    base = np.array([i.volume_base for i in CAT.instruments])
    assert (v.mean(axis=1) / base > 0.7).all() and (v.mean(axis=1) / base < 1.4).all()


def test_live_prices_near_base_and_rounded() -> None:
    feed = DemoWalk(CAT, 3)
    prices = feed.live_prices()
    base = np.array([i.base_price for i in CAT.instruments])
    assert (np.abs(prices / base - 1) < 0.2).all()
    for inst, p in zip(CAT.instruments, prices, strict=True):
        assert round(p, inst.decimals) == p


def test_batches_move_a_subset_with_realistic_steps() -> None:
    feed = DemoWalk(CAT, 5)
    before = feed.live_prices()
    n = len(CAT.instruments)
    for i in range(50):
        batch = feed.next_batch(1_795_000_000.0 + i * 0.25, 0.25)
        rows = [t.row for t in batch]
        assert 1 <= len(batch) < n
        assert len(set(rows)) == len(rows)
        assert all(t.price > 0 and t.volume >= 1 and t.ts == 1_795_000_000.0 + i * 0.25 for t in batch)
    moved = np.abs(feed.live_prices() / before - 1)
    assert moved.max() < 0.05
    assert (moved > 0).sum() > n // 2


def test_jsonl_parser_accepts_good_lines() -> None:
    parser = JsonlParser(CAT)
    tick = parser.parse(b'{"id":"brent","price":72.5,"ts":1795000000.5,"volume":3}', now=WTI_TS + 60)
    assert tick == Tick(CAT.index["brent"], 72.5, 1795000000.5, 3.0)
    iso_tick = parser.parse('{"id":"wti","price":68,"ts":"2026-11-21T10:15:30.123+08:00"}', now=WTI_TS + 60)
    assert iso_tick is not None and iso_tick.ts == pytest.approx(WTI_TS, abs=1e-6)
    naive = parser.parse('{"id":"wti","price":68,"ts":"2026-11-21T10:15:30.123"}', now=WTI_TS + 60)
    assert naive is not None and naive.ts == pytest.approx(WTI_TS, abs=1e-6)  # naive = Shanghai time
    no_ts = parser.parse('{"id":"usdcny","price":7.1}', now=42.0)
    assert no_ts is not None and no_ts.ts == 42.0 and no_ts.volume == 0.0
    assert parser.accepted == 4 and parser.bad_lines == 0 and parser.unknown_ids == 0


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[1,2]",
        b'{"id":"brent"}',
        b'{"id":"brent","price":0}',
        b'{"id":"brent","price":-3}',
        b'{"id":"brent","price":"72"}',
        b'{"id":"brent","price":true}',
        b'{"id":5,"price":72}',
        b'{"id":"brent","price":72,"ts":"yesterday"}',
        b'{"id":"brent","price":72,"volume":-1}',
        b'{"id":"brent","price":1e999}',
    ],
)
def test_jsonl_parser_counts_bad_lines(line: bytes) -> None:
    parser = JsonlParser(CAT)
    assert parser.parse(line, now=1.0) is None
    assert (parser.bad_lines, parser.unknown_ids, parser.accepted) == (1, 0, 0)


def test_jsonl_parser_counts_unknown_ids() -> None:
    parser = JsonlParser(CAT)
    assert parser.parse('{"id":"gold","price":2000}', now=1.0) is None
    assert parser.parse('{"id":"silver","price":30}', now=1.0) is None
    assert (parser.bad_lines, parser.unknown_ids) == (0, 2)
    assert parser.parse("   \n", now=1.0) is None
    assert (parser.bad_lines, parser.unknown_ids) == (0, 2)


NOW = datetime.fromisoformat("2026-11-23T10:00:00+08:00").timestamp()
OLDEST = datetime.fromisoformat("2026-07-20T00:00:00+08:00").timestamp()


@pytest.mark.parametrize(
    "ts",
    [
        1795000000000,  # epoch milliseconds: the year ~58,850
        "9999-12-31",  # representable as a date, not as a candle day or a timestamp in +08:00
        "9999-06-01",
        "0001-01-01",  # before year 1 in UTC
        "0001-01-01T00:00:00+14:00",
        -1e300,
        1e300,
        NOW + 301,  # more than 5 minutes ahead of the clock
        OLDEST - 1,  # older than the oldest candle held
        "2026-07-19T23:59:59+08:00",
    ],
)
def test_jsonl_parser_rejects_out_of_range_ts(ts: object) -> None:
    parser = JsonlParser(CAT)
    line = orjson.dumps({"id": "brent", "price": 72, "ts": ts})
    assert parser.parse(line, now=NOW, not_before=OLDEST) is None
    assert (parser.bad_lines, parser.unknown_ids, parser.accepted) == (1, 0, 0)


@pytest.mark.parametrize("ts", [NOW + 300, OLDEST, "2026-07-20T00:00:00+08:00", "2026-11-23T10:04:59+08:00"])
def test_jsonl_parser_accepts_ts_at_the_bounds(ts: object) -> None:
    parser = JsonlParser(CAT)
    tick = parser.parse(orjson.dumps({"id": "brent", "price": 72, "ts": ts}), now=NOW, not_before=OLDEST)
    assert tick is not None and parser.accepted == 1 and parser.bad_lines == 0
