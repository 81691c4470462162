from datetime import date, timedelta

import numpy as np
import pytest

from server.market.candles.daily import CandleBook, all_days, closed_candles, ticked_candles
from server.market.timefmt import trading_days_back

FRI = date(2026, 11, 20)
MON = date(2026, 11, 23)


def book_with_history(n: int = 2, end: date = FRI, k: int = 5, capacity: int = 90) -> CandleBook:
    days = trading_days_back(end, k)
    close = np.tile(np.arange(1.0, k + 1.0), (n, 1)) * 10.0
    book = CandleBook(n, capacity)
    book.load_history(days, close - 1, close + 2, close - 3, close, np.full((n, k), 100.0))
    return book


def test_load_history_keeps_last_capacity() -> None:
    book = book_with_history(k=10, capacity=4)
    assert len(book) == 4
    assert all_days(book) == trading_days_back(FRI, 4)
    assert book.live(0)[3] == 100.0
    assert book.prev_close(0) == 90.0


def test_tick_updates_live_candle_hlcv() -> None:
    book = book_with_history()
    book.apply_tick(0, 120.0, 5.0, FRI)
    book.apply_tick(0, 30.0, 2.0, FRI)
    book.apply_tick(0, 60.0, 1.0, FRI)
    o, h, low, c, v = book.live(0)
    assert (o, h, low, c, v) == (49.0, 120.0, 30.0, 60.0, 108.0)
    assert book.live(1) == (49.0, 52.0, 47.0, 50.0, 100.0)
    assert book.last_day() == FRI


def test_gap_up_monday_opens_at_its_first_tick_not_at_prev_close() -> None:
    book = book_with_history()
    book.apply_tick(0, 55.0, 1.0, FRI)
    book.apply_tick(0, 57.0, 3.0, MON)
    book.apply_tick(0, 58.0, 1.0, MON)
    assert book.last_day() == MON
    assert all_days(book)[-2:] == [FRI, MON]
    assert book.live(0) == (57.0, 58.0, 57.0, 58.0, 4.0)  # open and low from Monday's first tick
    assert book.prev_close(0) == 55.0
    # the untouched instrument's live candle is unopened: close carried, no open/high/low yet ...
    o, h, low, c, v = book.live(1)
    assert np.isnan([o, h, low]).all() and (c, v) == (50.0, 0.0)
    assert book.prev_close(1) == 50.0
    # ... and not shown before its first tick (SPEC 16): the series ends with Friday's ...
    assert [s["t"] for s in book.series(1, 2, 2)] == [(FRI - timedelta(days=1)).isoformat(), FRI.isoformat()]
    # ... until the day closes without a tick: then it reads as flat at the previous close
    book.roll_to(MON + timedelta(days=1))
    assert book.series(1, 2, 2)[-1] == {"t": MON.isoformat(), "o": 50.0, "h": 50.0, "l": 50.0, "c": 50.0, "v": 0}


def test_gap_down_day_after_a_quiet_day() -> None:
    book = book_with_history()
    tue = MON + timedelta(days=1)
    book.apply_tick(0, 41.0, 2.0, tue)  # Monday had no tick: the only flat candle
    book.apply_tick(0, 43.0, 1.0, tue)
    series = book.series(0, 3, 2)
    assert [(s["o"], s["h"], s["l"], s["c"], s["v"]) for s in series] == [
        (49.0, 52.0, 47.0, 50.0, 100), (50.0, 50.0, 50.0, 50.0, 0), (41.0, 43.0, 41.0, 43.0, 3)]


def test_roll_far_ahead_is_bounded_by_capacity() -> None:
    book = book_with_history(k=5, capacity=10)
    far = date(9999, 6, 1)
    assert book.roll_to(far) is True
    assert len(book) == 10 and book.last_day() == far
    assert all_days(book) == trading_days_back(far, 10)


def test_ticked_marks_only_candles_with_ticks() -> None:
    book = book_with_history()
    assert ticked_candles(book) == []  # loaded history is not ours to write back
    wed = MON + timedelta(days=2)
    book.apply_tick(1, 44.0, 1.0, MON)
    book.apply_tick(0, 60.0, 1.0, wed)
    book.apply_tick(0, 61.0, 2.0, wed)
    assert ticked_candles(book) == [(1, MON, (44.0, 44.0, 44.0, 44.0, 1.0)),
                                     (0, wed, (60.0, 61.0, 60.0, 61.0, 3.0))]


def test_gap_fills_flat_candles_for_missing_trading_days() -> None:
    book = book_with_history()
    wed = MON + timedelta(days=2)
    book.apply_tick(1, 44.0, 1.0, wed)
    assert all_days(book)[-4:] == [FRI, MON, MON + timedelta(days=1), wed]
    series = book.series(1, 3, 2)
    assert [(s["o"], s["h"], s["l"], s["c"], s["v"]) for s in series[:2]] == [(50.0, 50.0, 50.0, 50.0, 0)] * 2
    assert series[-1] == {"t": wed.isoformat(), "o": 44.0, "h": 44.0, "l": 44.0, "c": 44.0, "v": 1}


def test_roll_to_same_or_earlier_day_is_noop() -> None:
    book = book_with_history()
    assert book.roll_to(FRI) is False
    assert book.roll_to(FRI - timedelta(days=3)) is False
    assert len(book) == 5 and book.last_day() == FRI
    assert book.roll_to(MON) is True and book.last_day() == MON


def test_ring_wraps_keeps_90_ascending_weekdays() -> None:
    book = book_with_history(k=90)
    end = FRI + timedelta(days=200)
    day = FRI
    while day < end:
        day += timedelta(days=1)
        book.apply_tick(0, 10.0 + day.toordinal() % 7, 1.0, day if day.weekday() < 5 else MON)
    days = all_days(book)
    assert len(days) == 90
    assert days == sorted(days) and len(set(days)) == 90
    assert all(d.weekday() < 5 for d in days)
    assert days == trading_days_back(days[-1], 90)
    assert len(book.series(0, 90, 2)) == 90
    assert len(book.series(0, 5, 2)) == 5


def test_empty_book_first_tick_opens_candle() -> None:
    book = CandleBook(3)
    book.apply_tick(2, 7.5, 1.0, MON)
    assert book.live(2) == (7.5, 7.5, 7.5, 7.5, 1.0)
    assert book.series(0, 90, 2) == []  # never traded: no candles
    assert book.series(2, 90, 2) == [{"t": "2026-11-23", "o": 7.5, "h": 7.5, "l": 7.5, "c": 7.5, "v": 1}]


def test_closed_candles_exclude_live() -> None:
    book = book_with_history()
    book.apply_tick(0, 99.0, 1.0, MON)
    days, (_o, _h, _l, c, _v) = closed_candles(book, [0])
    assert days == trading_days_back(FRI, 5)
    assert c.shape == (1, 5)
    assert c[0].tolist() == [10.0, 20.0, 30.0, 40.0, 50.0]


def test_load_history_rejects_bad_shape() -> None:
    book = CandleBook(2)
    with pytest.raises(ValueError):
        book.load_history([FRI], *(np.zeros((3, 1)),) * 5)
