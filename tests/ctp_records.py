"""CTP depth records as each exchange sends them, for the ctp-jsonl feed's tests (and a file generator).

`record(...)` writes one `CThostFtdcDepthMarketDataField` as a dict, with the exchange's own habits:

| exchange | TradingDay | ActionDay |
|---|---|---|
| CZCE | the calendar day (at night too) | the calendar day |
| DCE | the trading day | the trading day at night, the calendar day by day (the same then) |
| SHFE, INE | the trading day | the calendar day |

An empty book side is `DBL_MAX` with size 0, an unknown settlement `DBL_MAX`, as CTP fills them. `session_file`
writes a realistic file: contracts ticking through a night and a day session with running Volume/Turnover totals,
a few records with nothing traded, some with an empty side; it answers the records it wrote. It uses the venue
calendar only to write TradingDay as the exchange would (the test's expectations never read the server's code).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from server.market.contracts.specs import PRODUCTS, ProductSpec
from server.market.contracts.symbols import read_symbol
from server.market.venues.book import VenueBook

DBL_MAX = 1.7976931348623157e308
EXCHANGES = {"zce": "CZCE", "dce": "DCE", "shfe": "SHFE", "ine": "INE"}
_VENUES = VenueBook.load()


def product_of(code: str) -> ProductSpec:
    return next(p for p in PRODUCTS.values() if p.venue in EXCHANGES
                and read_symbol(p.listing.symbol_form, p.code, code) is not None)


def _days(venue: str, local: datetime) -> tuple[str, str]:
    """(TradingDay, ActionDay) as the venue's exchange writes them for a record stamped at ``local``."""
    trading = _VENUES.clock(venue).trading_day(int(local.timestamp() * 1000))
    calendar = local.date()
    if venue == "zce":
        return _ymd(calendar), _ymd(calendar)
    if venue == "dce" and not 6 <= local.hour < 18:  # a night record: DCE writes the trading day in both
        return _ymd(trading), _ymd(trading)
    return _ymd(trading), _ymd(calendar)


def _ymd(day: date) -> str:
    return day.strftime("%Y%m%d")


def record(code: str, when: str | datetime, price: float, volume: float = 0, turnover: float = 0.0,
           bid: tuple[float, float] | None = None, ask: tuple[float, float] | None = None,
           settle: float = DBL_MAX, pre_settle: float = DBL_MAX, limits: tuple[float, float] | None = None,
           oi: float | None = None, average: float = DBL_MAX) -> dict[str, Any]:
    """One depth record of contract ``code`` stamped at ``when`` (ISO 8601 with an offset, or aware)."""
    spec = product_of(code)
    local = (datetime.fromisoformat(when) if isinstance(when, str) else when).astimezone(_VENUES.clock(spec.venue).zone)
    trading_day, action_day = _days(spec.venue, local)
    bid_price, bid_size = bid or (DBL_MAX, 0)
    ask_price, ask_size = ask or (DBL_MAX, 0)
    up, down = limits or (DBL_MAX, DBL_MAX)
    rec: dict[str, Any] = {
        "TradingDay": trading_day, "InstrumentID": code, "ExchangeID": EXCHANGES[spec.venue], "ExchangeInstID": code,
        "LastPrice": price, "PreSettlementPrice": pre_settle, "PreClosePrice": pre_settle,
        "PreOpenInterest": oi or 0, "OpenPrice": price, "HighestPrice": price, "LowestPrice": price,
        "Volume": volume, "Turnover": turnover, "ClosePrice": DBL_MAX, "SettlementPrice": settle,
        "UpperLimitPrice": up, "LowerLimitPrice": down, "PreDelta": 0, "CurrDelta": DBL_MAX,
        "UpdateTime": local.strftime("%H:%M:%S"), "UpdateMillisec": local.microsecond // 1000,
        "BidPrice1": bid_price, "BidVolume1": bid_size, "AskPrice1": ask_price, "AskVolume1": ask_size,
        "AveragePrice": average, "ActionDay": action_day,
    }
    if oi is not None:
        rec["OpenInterest"] = oi
    return rec


@dataclass(frozen=True, slots=True)
class Written:
    """A record as written, with what the scenario knows of it (not read back from the record)."""

    record: dict[str, Any]
    code: str
    ts: float  # the instant it was stamped at
    day: str  # the trading day the scenario put it in (ISO 8601)


def session_file(path: Path, codes: list[str], days: list[tuple[str, str, str | None, int]],
                 seed: int = 7) -> list[Written]:
    """Records of ``codes`` for each of ``days`` (trading day, night start, day start or None: ISO 8601, and how
    many records of each contract): the first half one a second from the night start, the rest from the day start.
    Prices walk on the product's tick, open interest moves with the lots, and Volume/Turnover are running totals
    of each trading day (so they fall at the next day's first record); one record in ten has an empty bid side."""
    rng = random.Random(seed)
    out: list[Written] = []
    walk = {code: [_START.get(product_of(code).venue, 500.0) + 10 * i, 1000.0 + 100 * i]
            for i, code in enumerate(codes)}
    for day, night_start, day_start, per_contract in days:
        totals = {code: [0.0, 0.0] for code in codes}
        for when in _instants(night_start, day_start, per_contract):
            for code in codes:
                spec, (price, oi), total = product_of(code), walk[code], totals[code]
                price = _on_tick(price + rng.choice((-1, 0, 0, 1)) * spec.tick, spec.tick)
                lots = rng.choice((0, 1, 2, 5, 12))
                total[0] += lots
                total[1] += price * lots * spec.multiplier
                oi += rng.choice((-1, 0, 1)) * lots
                walk[code] = [price, oi]
                stamp = when + timedelta(milliseconds=rng.choice((0, 500)))
                rec = record(code, stamp, price, total[0], total[1],
                             bid=None if rng.random() < 0.1 else (price - spec.tick, rng.randint(1, 30)),
                             ask=(price + spec.tick, rng.randint(1, 30)), oi=oi,
                             average=_average(spec, total[0], total[1]))
                out.append(Written(rec, code, stamp.timestamp(), day))
    path.write_bytes(b"".join(orjson.dumps(w.record) + b"\n" for w in out))
    return out


_START = {"zce": 2400.0, "dce": 7000.0}


def _on_tick(price: float, tick: float) -> float:
    return round(round(price / tick) * tick, 6)


def _average(spec: ProductSpec, volume: float, turnover: float) -> float:
    """CTP's AveragePrice: ZCE's in price units, the others' per lot (price * multiplier); DBL_MAX before a trade."""
    if not volume:
        return DBL_MAX
    return turnover / volume / (spec.multiplier if spec.venue == "zce" else 1.0)


def _instants(night_start: str, day_start: str | None, n: int) -> Iterator[datetime]:
    night = datetime.fromisoformat(night_start)
    day = datetime.fromisoformat(day_start) if day_start else None
    for k in range(n):
        yield night + timedelta(seconds=k) if day is None or k < n // 2 else day + timedelta(seconds=k - n // 2)
