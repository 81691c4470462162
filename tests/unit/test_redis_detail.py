"""A futures tick's board fields cross the Redis tick log whole (SPEC 19): every hub applies the same tick."""

from __future__ import annotations

from server.engine.redis_ticks import NO_DETAIL, decode_detail, encode_detail
from server.market.tick import TickDetail


def test_a_detail_survives_the_log_and_absent_fields_stay_absent() -> None:
    detail = TickDetail(bid=2399.0, ask=2401.0, bid_size=3.0, oi=70123.0, cum_volume=1.5e6, limit_down=0.1)
    token = encode_detail(detail)
    assert " " not in token and ";" not in token  # one token of the entry's space- and semicolon-separated text
    assert decode_detail(token) == detail
    assert decode_detail(encode_detail(TickDetail())) == TickDetail()


def test_a_tick_without_detail_and_an_unreadable_token_have_none() -> None:
    assert encode_detail(None) == NO_DETAIL and decode_detail(NO_DETAIL) is None
    assert decode_detail("1.0,2.0") is None
