"""The demo's history keeps the venues' hours, and a trading day's candle exists from its first tick (SPEC 16, issue
40), through a real demo server on fixed instants of its own clock (`--clock-start`): a Sunday, a day of China's
National Day holiday (Brent and WTI trade, the Chinese exchanges do not), and Friday 2026-10-09 before the open.

Every seeded intraday bucket must overlap a session window that `/api/v1/venues/{id}/calendar` lists; the daily
series (plain, range and UDF) must end with a day whose session has begun. Nothing depends on today's date.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta

import httpx
import pytest

from tests.conftest import ServerProcess

SUNDAY = "2026-11-29T10:00:00+08:00"
NATIONAL_DAY = "2026-10-06T10:00:00+08:00"
BEFORE_OPEN = "2026-10-09T08:30:00+08:00"  # Friday: urea (day session only) has not opened, methanol's night has
# checked against their venue's calendar (which lists the venue's widest session: not urea's, which has no night)
IDS = ("methanol", "brent", "wti", "sc", "ttf")
SECONDS = {"1m": 60, "5m": 300, "15m": 900, "1h": 3600}


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.fixture(scope="module", params=[SUNDAY, NATIONAL_DAY, BEFORE_OPEN],
                ids=["sunday", "national-day", "before-open"])
def server(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, float]]:
    root = tmp_path_factory.mktemp("demo-sessions")
    srv = ServerProcess(root / "data", "granian", "--clock-start", request.param, "--tick-interval-ms", "60000")
    try:
        with srv.client(headers={"X-SERVICE-Key": srv.demo_key}) as client:
            yield client, _ts(request.param)
    finally:
        assert srv.stop() == 0, srv.output()


def _windows(client: httpx.Client, inst_id: str, start: date, end: date) -> list[tuple[float, float, str]]:
    """(start, end, trading day) of every session window of the instrument's venue in [start, end]."""
    venue = client.get(f"/api/v1/instruments/{inst_id}").json()["venue"]
    body = client.get(f"/api/v1/venues/{venue}/calendar", params={"from": start.isoformat(), "to": end.isoformat()})
    assert body.status_code == 200, body.text
    return [(_ts(s["start"]), _ts(s["end"]), d["date"]) for d in body.json()["days"] for s in d["sessions"]]


@pytest.mark.parametrize("inst_id", IDS)
def test_every_seeded_bucket_lies_in_a_session_window_of_a_trading_day(server: tuple[httpx.Client, float],
                                                                       inst_id: str) -> None:
    client, now = server
    today = datetime.fromtimestamp(now).date()
    windows = _windows(client, inst_id, today - timedelta(days=200), today + timedelta(days=3))
    for interval, sec in SECONDS.items():
        series = client.get(f"/api/v1/kline/{inst_id}", params={"interval": interval, "limit": 1000}).json()["series"]
        assert len(series) > 100, (inst_id, interval)
        for candle in series:
            t = _ts(candle["t"])
            assert t <= now and any(start < t + sec and t < end for start, end, _ in windows), (inst_id, candle)


def test_no_daily_candle_for_a_trading_day_that_has_not_opened(server: tuple[httpx.Client, float]) -> None:
    client, now = server
    today = datetime.fromtimestamp(now).date()
    for inst_id in IDS:
        windows = _windows(client, inst_id, today - timedelta(days=20), today + timedelta(days=10))
        opened = {day for start, _, day in windows if start <= now}
        upcoming = sorted({day for start, _, day in windows if start > now} - opened)
        daily = client.get(f"/api/v1/kline/{inst_id}", params={"interval": "1d", "days": 5}).json()["series"]
        assert len(daily) == 5 and daily[-1]["t"] == max(opened), inst_id  # the newest day that began
        ranged = client.get(f"/api/v1/kline/{inst_id}", params={"interval": "1d", "from": (today - timedelta(days=20))
                                                                  .isoformat(), "limit": 100}).json()["series"]
        assert ranged[-5:] == daily, inst_id
        udf = client.get("/api/v1/udf/history", params={"symbol": inst_id, "resolution": "1D", "countback": 5,
                                                        "to": int(now) + 30 * 86400}).json()
        assert udf["s"] == "ok" and udf["t"][-1] == int(_ts(max(opened) + "T00:00:00+00:00")), inst_id
        quote = client.get(f"/api/v1/quotes/{inst_id}").json()
        if quote["tradingDay"] != max(opened):  # the quote names the day that comes next, and when it opens
            assert quote["tradingDay"] == upcoming[0] and quote["marketStatus"] == "closed", inst_id
            assert _ts(quote["nextOpen"]) == min(start for start, _, day in windows if day == upcoming[0])


def test_the_fixed_instants_show_what_the_exchanges_did(server: tuple[httpx.Client, float]) -> None:
    """The expectations written out: urea (day session only) ends with the previous trading day on the Sunday and
    before Friday's open; during National Day methanol ends on 2026-09-30 while Brent is live."""
    client, now = server

    def last(inst_id: str, interval: str) -> str:
        series = client.get(f"/api/v1/kline/{inst_id}", params={"interval": interval, "limit": 1}).json()["series"]
        return series[-1]["t"][:16]

    urea = {_ts(SUNDAY): "2026-11-27", _ts(NATIONAL_DAY): "2026-09-30", _ts(BEFORE_OPEN): "2026-10-08"}[now]
    assert (last("urea", "1d"), last("urea", "1m")) == (urea, f"{urea}T14:59")
    if now == _ts(NATIONAL_DAY):
        assert (last("methanol", "1d"), last("methanol", "1m")) == ("2026-09-30", "2026-09-30T14:59")
        assert last("brent", "1d") == "2026-10-06" and last("brent", "1m") == "2026-10-06T10:00"
    if now == _ts(SUNDAY):  # Monday's candle began with Friday's night session (21:00-23:00)
        assert (last("methanol", "1d"), last("methanol", "1m")) == ("2026-11-30", "2026-11-27T22:59")
