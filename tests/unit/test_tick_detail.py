"""A tick's detail outside the process (SPEC 19): the Redis log's token and the tick archive's compact text read
back as the same `TickDetail`; anything else is no detail, never an exception."""

from __future__ import annotations

from server.engine.redis_ticks import decode_detail, encode_detail
from server.market.tick import TickDetail, detail_compact, detail_of, detail_text

BOOK = TickDetail(bid=2109.0, ask=2111.0, bid_size=24.0, ask_size=14.0, oi=150694.0)
FULL = TickDetail(80.35, 80.4, 3.0, 1.0, 1.5e6, 4094408.0, 106791876900.5, 80.375, 88.4, -0.0)


def test_the_compact_text_drops_what_reads_back_the_same() -> None:
    assert detail_compact(BOOK) == "2109,2111,24,14,150694"
    assert detail_text(BOOK) == "2109.0,2111.0,24.0,14.0,150694.0,,,,,"
    assert detail_compact(TickDetail()) == ""
    for detail in (BOOK, FULL, TickDetail(), TickDetail(limit_down=6600.0)):
        assert detail_of(detail_compact(detail)) == detail
        assert detail_of(detail_text(detail)) == detail
        assert decode_detail(encode_detail(detail)) == detail


def test_what_is_not_a_detail_reads_as_none() -> None:
    assert detail_of("1,2,3,4,5,6,7,8,9,10,11,12") is None  # more fields than a detail has
    assert detail_of("1,x") is None
    assert decode_detail("2109,2111") is None  # the Redis token always has the ten fields (eleven with prevSettle)


def test_a_published_previous_settlement_is_an_eleventh_field_written_only_when_set() -> None:
    """CTP's PreSettlementPrice (SPEC 19): a detail without it writes the ten fields a hub of an earlier build reads
    on the Redis log; with it, eleven, read back by this build (and kept in the archive's compact text)."""
    published = TickDetail(bid=2399.0, oi=500.0, prev_settle=2390.0)
    assert detail_text(BOOK).count(",") == 9 and detail_text(published).count(",") == 10
    assert detail_text(published).endswith(",2390.0")
    for detail in (published, TickDetail(prev_settle=0.5)):
        assert decode_detail(encode_detail(detail)) == detail
        assert detail_of(detail_compact(detail)) == detail
    assert decode_detail("2109.0,2111.0,24.0,14.0,150694.0,,,,,") == BOOK  # an earlier build's token
