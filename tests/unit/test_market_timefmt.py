from datetime import date, datetime, timedelta, timezone

import pytest

from server.market.timefmt import TZ, iso, trading_day, trading_days_back

FIXED = timezone(timedelta(hours=8))


def ts(y: int, mo: int, d: int, h: int = 12, mi: int = 0, s: int = 0, us: int = 0) -> float:
    return datetime(y, mo, d, h, mi, s, us, tzinfo=TZ).timestamp()


def test_iso_has_millis_and_offset() -> None:
    assert iso(ts(2026, 11, 21, 10, 15, 30, 123000)) == "2026-11-21T10:15:30.123+08:00"


def test_iso_rounds_to_millisecond_and_carries() -> None:
    assert iso(ts(2026, 11, 21, 23, 59, 59) + 0.9996) == "2026-11-22T00:00:00.000+08:00"


@pytest.mark.parametrize("year", [1, 9, 99, 999, 1000, 9999])
def test_iso_always_has_a_four_digit_year(year: int) -> None:
    moment = datetime(year, 6, 1, 9, 30, 5, 250000, tzinfo=FIXED).timestamp()
    assert iso(moment) == f"{year:04d}-06-01T09:30:05.250+08:00"
    assert datetime.fromisoformat(iso(moment)).timestamp() == moment


def test_iso_uses_shanghai_date_not_utc() -> None:
    # 2026-11-20 20:00 UTC is already Saturday 04:00 in Shanghai.
    assert iso(datetime.fromisoformat("2026-11-20T20:00:00+00:00").timestamp()).startswith("2026-11-21T04:00")


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (ts(2026, 11, 20, 14), date(2026, 11, 20)),  # Friday
        (ts(2026, 11, 21, 0, 0, 1), date(2026, 11, 23)),  # Saturday -> Monday
        (ts(2026, 11, 22, 23, 59, 59), date(2026, 11, 23)),  # Sunday -> Monday
        (ts(2026, 11, 23, 0, 0, 0), date(2026, 11, 23)),  # Monday
        (ts(2026, 11, 20, 23, 59, 59), date(2026, 11, 20)),  # Friday late
    ],
)
def test_trading_day_maps_weekends_to_monday(moment: float, expected: date) -> None:
    assert trading_day(moment) == expected


def test_trading_days_back_skips_weekends() -> None:
    days = trading_days_back(date(2026, 11, 24), 4)  # Tuesday
    assert days == [date(2026, 11, 19), date(2026, 11, 20), date(2026, 11, 23), date(2026, 11, 24)]


def test_trading_days_back_long_run_is_weekdays_only() -> None:
    days = trading_days_back(date(2026, 11, 23), 90)
    assert len(days) == 90
    assert days[-1] == date(2026, 11, 23)
    assert all(d.weekday() < 5 for d in days)
    assert days == sorted(set(days))


def test_trading_days_back_rejects_weekend_end() -> None:
    with pytest.raises(ValueError):
        trading_days_back(date(2026, 11, 22), 3)
