"""CTP depth records (`CThostFtdcDepthMarketDataField` as a JSON object) made into clean ticks (SPEC 19). Pure.

Every quirk of CTP is undone here, so the market state sees one tick shape (docs/futures.md, "The ctp-jsonl feed"):

- the instrument: `InstrumentID` is the exchange's code (ZCE's three digits `MA605`, DCE/SHFE/INE `pp2605`),
  resolved to a contract id `{product}-{YYYYMM}` on the record's trading day (`ExchangeID`, when set, picks the
  venue);
- the instant: a calendar date + `UpdateTime` + `UpdateMillisec` in the venue's zone. The date is `ActionDay`
  (else `TradingDay`), except where an exchange fills it with the trading day: when `ActionDay` and `TradingDay`
  differ, `ActionDay` is the calendar day (SHFE, INE at night); when they agree on a night record of a venue in
  `ACTION_DAY_IS_TRADING_DAY` (DCE), the record was stamped on the evening of the previous trading day (or the
  morning after it, past midnight). CZCE fills both with the calendar day, which is what it is. A record without
  `ActionDay` (older CTP versions) has its `TradingDay` read the same way: the trading day at night, but at CZCE;
- the trading day: the venue calendar's trading day of that instant (the clock's rule, SPEC 16), whatever the
  record's `TradingDay` says (CZCE's is the calendar day at night);
- `Volume` and `Turnover` are the day's running totals: a tick carries their increase since the contract's
  previous record of the same trading day; the first record of a contract's trading day counts its whole totals;
  a total that falls within a trading day is a bad record (never a negative volume), as is a record of a trading
  day before one already seen for the contract;
- `DBL_MAX` (1.7976931348623157e308, CTP's "no value"), a missing field and a zero price or size mean absent;
  a book level is absent unless both its price and its size are there;
- `AveragePrice`: ZCE sends a price; the other exchanges send turnover per lot (price * multiplier), divided here.

`CtpNormaliser.normalise(record)` answers a `CtpTick` or raises `BadRecord` (counted as a bad line) or
`UnknownContract` (counted as an unknown id); it keeps nothing until `commit(tick)`, so a record the caller rejects
afterwards (its time, its daily limits) leaves the running totals where they were.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from server.market.contracts.listing import ContractBook
from server.market.contracts.specs import ProductSpec
from server.market.contracts.symbols import read_symbol
from server.market.tick import Tick, TickDetail
from server.market.venues.clock import VenueClock

ABSENT_FROM = 1e300  # CTP's DBL_MAX (1.7976931348623157e308) as any recorder prints it: no value
EXCHANGE_VENUES = {"CZCE": "zce", "DCE": "dce", "SHFE": "shfe", "INE": "ine"}  # CTP's ExchangeID -> our venue
ACTION_DAY_IS_TRADING_DAY = frozenset({"dce"})  # at night DCE fills ActionDay (and TradingDay) with the trading day
TRADING_DAY_IS_CALENDAR_DAY = frozenset({"zce"})  # CZCE fills TradingDay with the calendar day, at night too
AVERAGE_IN_PRICE_UNITS = frozenset({"zce"})  # the others' AveragePrice is per lot: price * multiplier
EVENING_FROM = time(18, 0)  # a record stamped from here to midnight is of a night session (the evening part)
MORNING_UNTIL = time(6, 0)  # and one before this, of a night session's part after midnight
_DAY = re.compile(r"(\d{4})(\d{2})(\d{2})")
_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d):([0-5]\d)")


class BadRecord(ValueError):
    """A record that cannot be a tick (the message says why)."""


class UnknownContract(LookupError):
    """A record naming no contract of the catalogue (another exchange's product, or a month never listed)."""


@dataclass(slots=True)
class CtpTick:
    """One record, normalised: every value in the quote's units, `None` where the record had none."""

    contract: str  # our id, methanol-202605
    symbol: str  # the exchange's code as sent, MA605
    trading_day: date
    ts: float  # epoch seconds
    price: float
    volume: float  # lots traded since the contract's previous record of the day
    turnover: float  # money traded since then
    cum_volume: float  # the day's running totals, as sent
    cum_turnover: float
    bid: float | None = None
    ask: float | None = None
    bid_size: float | None = None
    ask_size: float | None = None
    oi: float | None = None
    settle: float | None = None
    prev_settle: float | None = None
    limit_up: float | None = None
    limit_down: float | None = None
    average: float | None = None  # the day's average price, in price units

    def tick(self, row: int) -> Tick:
        """The market state's tick for instrument row ``row`` (turnover as the day's running total, as the
        board keeps it)."""
        detail = TickDetail(bid=self.bid, ask=self.ask, bid_size=self.bid_size, ask_size=self.ask_size, oi=self.oi,
                            turnover=self.cum_turnover, settle=self.settle, limit_up=self.limit_up,
                            limit_down=self.limit_down, prev_settle=self.prev_settle)
        return Tick(row, self.price, self.ts, self.volume, detail)


@dataclass(slots=True)
class _Running:
    day: date
    volume: float
    turnover: float


def value(record: Mapping[str, Any], name: str, zero: bool = False) -> float | None:
    """A numeric field: None when missing, null, DBL_MAX or zero (unless `zero` is a value: open interest);
    BadRecord when it is not a number >= 0."""
    raw = record.get(name)
    if raw is None:
        return None
    cls = raw.__class__
    if (cls is float or cls is int) and 0 < raw < ABSENT_FROM:  # the common case first: a plain price or size
        return float(raw)
    if not isinstance(raw, (int, float)) or isinstance(raw, bool) or math.isnan(raw) or raw < 0:
        raise BadRecord(f"{name} is not a number >= 0")
    if (raw == 0 and not zero) or raw >= ABSENT_FROM:
        return None
    return float(raw)


def total(record: Mapping[str, Any], name: str) -> float:
    """A running total (Volume, Turnover): zero when missing or zero, BadRecord when DBL_MAX or not a number."""
    raw = record.get(name, 0)
    if not isinstance(raw, (int, float)) or isinstance(raw, bool) or not 0 <= raw < ABSENT_FROM:
        raise BadRecord(f"{name} is not a running total")
    return float(raw)


def level(record: Mapping[str, Any], price_name: str, size_name: str) -> tuple[float | None, float | None]:
    """A book level: (price, size), both None unless both are there (an empty side is DBL_MAX or zero)."""
    price, size = value(record, price_name), value(record, size_name)
    return (price, size) if price is not None and size is not None else (None, None)


def read_day(raw: Any) -> date | None:
    """A `YYYYMMDD` field; None when missing or empty, BadRecord when it is not a date."""
    if raw is None or raw == "":
        return None
    m = _DAY.fullmatch(raw) if isinstance(raw, str) else None
    try:
        if m is None:
            raise ValueError
        return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        raise BadRecord(f"{raw!r} is not a YYYYMMDD day") from None


def read_time(record: Mapping[str, Any]) -> time:
    raw, ms = record.get("UpdateTime"), record.get("UpdateMillisec", 0)
    m = _TIME.fullmatch(raw) if isinstance(raw, str) else None
    if m is None:
        raise BadRecord("UpdateTime is not HH:MM:SS")
    if not isinstance(ms, int) or isinstance(ms, bool) or not 0 <= ms <= 999:
        raise BadRecord("UpdateMillisec is not 0-999")
    return time(int(m[1]), int(m[2]), int(m[3]), ms * 1000)


def stamp_date(venue: str, clock: VenueClock, trading_day: date | None, action_day: date | None, at: time) -> date:
    """The calendar day the exchange stamped the record on (see the module's docstring)."""
    if action_day is not None and trading_day is not None and action_day != trading_day:
        return action_day  # SHFE and INE at night: ActionDay is the calendar day, TradingDay the next trading day's
    if action_day is not None:
        hint, is_trading_day = action_day, venue in ACTION_DAY_IS_TRADING_DAY
    elif trading_day is not None:  # an older CTP without ActionDay: TradingDay is the trading day but at CZCE
        hint, is_trading_day = trading_day, venue not in TRADING_DAY_IS_CALENDAR_DAY
    else:
        raise BadRecord("neither ActionDay nor TradingDay")
    if is_trading_day and (at >= EVENING_FROM or at < MORNING_UNTIL):  # a night record of trading day `hint`
        evening = clock.previous_trading_day(hint)
        if evening is None:
            raise BadRecord(f"no trading day before {hint} for a night record")
        return evening if at >= EVENING_FROM else evening + timedelta(days=1)
    return hint


class CtpNormaliser:
    """CTP records into `CtpTick`s; keeps each contract's running totals of its latest trading day."""

    def __init__(self, products: Mapping[str, ProductSpec], book: ContractBook,
                 clock_of: Callable[[str], VenueClock]) -> None:
        """`clock_of`: a venue id's clock (its trading days, its zone)."""
        self.products = products
        self.book = book
        self.clock_of = clock_of
        self._products: dict[tuple[str, str], ProductSpec | None] = {}
        self._contracts: dict[tuple[str, date], str | None] = {}  # (code, trading day) -> contract id
        self._midnights: dict[tuple[str, date], float | None] = {}  # (venue, day) -> its local midnight, if fixed
        self._running: dict[str, _Running] = {}
        self._days: dict[str, date | None] = {}
        self._venues = {p.venue for p in products.values()}

    def normalise(self, record: Any) -> CtpTick:
        if not isinstance(record, dict):
            raise BadRecord("not a JSON object")
        code = record.get("InstrumentID")
        if not isinstance(code, str) or not code:
            raise BadRecord("no InstrumentID")
        exchange = record.get("ExchangeID") or ""
        if not isinstance(exchange, str):
            raise BadRecord("ExchangeID is not a string")
        product = self._product(code, exchange)
        clock = self.clock_of(product.venue)
        at = read_time(record)
        day = stamp_date(product.venue, clock, self._day(record.get("TradingDay")), self._day(record.get("ActionDay")),
                         at)
        ts = self._instant(product.venue, clock, day, at)
        trading_day = clock.trading_day(round(ts * 1000))
        contract = self._contract(code, product, trading_day)
        price = value(record, "LastPrice")
        if price is None:
            raise BadRecord("no LastPrice")
        cum_volume, cum_turnover = total(record, "Volume"), total(record, "Turnover")
        volume, turnover = self._increments(contract, trading_day, cum_volume, cum_turnover)
        bid, bid_size = level(record, "BidPrice1", "BidVolume1")
        ask, ask_size = level(record, "AskPrice1", "AskVolume1")
        average = value(record, "AveragePrice")
        if average is not None and product.venue not in AVERAGE_IN_PRICE_UNITS:
            average /= product.multiplier
        return CtpTick(
            contract, code, trading_day, ts, price, volume, turnover, cum_volume, cum_turnover,
            bid=bid, ask=ask, bid_size=bid_size, ask_size=ask_size,
            oi=value(record, "OpenInterest", zero=True),  # no open interest is a value, not an absence
            settle=value(record, "SettlementPrice"), prev_settle=value(record, "PreSettlementPrice"),
            limit_up=value(record, "UpperLimitPrice"), limit_down=value(record, "LowerLimitPrice"), average=average)

    def commit(self, tick: CtpTick) -> None:
        """The tick was taken: its totals are the contract's running totals from now on."""
        self._running[tick.contract] = _Running(tick.trading_day, tick.cum_volume, tick.cum_turnover)

    def _increments(self, contract: str, day: date, volume: float, turnover: float) -> tuple[float, float]:
        run = self._running.get(contract)
        if run is None or run.day < day:
            return volume, turnover  # the contract's first record of the day counts the day's totals so far
        if run.day > day:
            raise BadRecord(f"trading day {day} after a record of {run.day}")
        if volume < run.volume or turnover < run.turnover:
            raise BadRecord(f"Volume or Turnover fell within trading day {day} ({run.volume:g} -> {volume:g})")
        return volume - run.volume, turnover - run.turnover

    def _product(self, code: str, exchange: str) -> ProductSpec:
        key = (code, exchange)
        if key not in self._products:
            if len(self._products) > 10_000:  # a feed of nonsense codes: keep the memory bounded
                self._products.clear()
            venue = EXCHANGE_VENUES.get(exchange)
            self._products[key] = next(
                (p for p in self.products.values() if (not exchange or p.venue == venue)
                 and read_symbol(p.listing.symbol_form, p.code, code) is not None), None)
        found = self._products[key]
        if found is None:
            raise UnknownContract(f"{exchange} {code}".strip())
        return found

    def _day(self, raw: Any) -> date | None:
        """`read_day`, remembered (a feed's records carry a handful of distinct days)."""
        if raw.__class__ is not str:
            return read_day(raw)
        if raw not in self._days:
            if len(self._days) > 1000:
                self._days.clear()
            self._days[raw] = read_day(raw)  # a bad one raises and is not remembered
        return self._days[raw]

    def _contract(self, code: str, product: ProductSpec, day: date) -> str:
        """The id of the contract ``code`` names on trading day ``day``."""
        key = (code, day)
        if key not in self._contracts:
            if len(self._contracts) > 20_000:  # a feed running for years: forget earlier days' answers
                self._contracts.clear()
            found = self.book.resolve(code, dict.fromkeys(self._venues, day))
            self._contracts[key] = found.id if found is not None and found.product.id == product.id else None
        contract = self._contracts[key]
        if contract is None:
            raise UnknownContract(code)
        return contract

    def _instant(self, venue: str, clock: VenueClock, day: date, at: time) -> float:
        """Epoch seconds of ``at`` on ``day`` in the venue's zone: from the day's local midnight when the zone's
        offset holds all day (Asia/Shanghai always), else through the zone's rules (a daylight-saving day)."""
        key = (venue, day)
        if key not in self._midnights:
            if len(self._midnights) > 20_000:
                self._midnights.clear()
            start = datetime.combine(day, time(0), tzinfo=clock.zone)
            end = datetime.combine(day, time(23, 59, 59), tzinfo=clock.zone)
            self._midnights[key] = start.timestamp() if start.utcoffset() == end.utcoffset() else None
        midnight = self._midnights[key]
        if midnight is None:
            return datetime.combine(day, at, tzinfo=clock.zone).timestamp()
        return midnight + at.hour * 3600 + at.minute * 60 + at.second + at.microsecond / 1e6
