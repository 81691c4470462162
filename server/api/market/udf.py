"""TradingView UDF datafeed under /api/v1/udf/ (SPEC 14): config, symbols, search, history, time.

The same key header, limits and CORS as /api/v1 (these are keyed routes of the same pipeline), and the same
candles as /kline: `history` selects from the same rings with the same window function and formats the
same candle dicts, then transposes them into UDF's column arrays.

UDF's conventions, where they differ from /kline's (docs/charting.md):
- times are epoch seconds; `history` counts `to` in (from <= t <= to), /kline's range is half-open;
- an intraday bar's `t` is its bucket start; a daily bar's is the trading day's date at 00:00 UTC (UDF: "daily
  bars should only have the date part, time should be 0"), so a chart shows it on its own day in any zone;
- `countback` wins over `from`: the latest `countback` bars with t <= to; without either, `from` is the earliest
  bar held (TradingView always sends `from`);
- an unknown symbol is a 400 naming `symbol` (a query parameter naming an unknown id, as `ids` in SPEC 6);
- errors are problem documents with UDF's `s: "error"` and `errmsg` added (server/core/errors.py
  `udf_fields`, also applied by the pipeline to its own refusals on these paths: 401, 404, 405, 429);
- a symbol's `session`, `session_holidays` and `corrections` are its venue's hours in the Charting Library's
  grammar (server/market/venues/tradingview.py) over the known range (`known_hours`); `timescale_marks` marks that
  range's holiday closures and, for a futures product's main series, each roll of its main contract (SPEC 19).
"""

from __future__ import annotations

import calendar
import math
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import orjson

from server.api.core.cache import VersionedCache
from server.api.core.query import known_query, param_error, parse_count, parse_epoch_seconds
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.market.deep_ranges import DeepRanges
from server.core.errors import ApiError, udf_fields
from server.market.candles.intraday import window
from server.market.candles.ranges import DAILY
from server.market.catalogue import Instrument
from server.market.contracts.specs import PRODUCTS
from server.market.main_series import ADJUST_MODES
from server.market.state import MarketState
from server.market.venues.clock import VenueClock
from server.market.venues.tradingview import ChartHours, chart_hours

PREFIX = "/api/v1/udf/"
# UDF resolution -> /kline interval; "D" is the older spelling of "1D" (accepted, not advertised)
RESOLUTIONS: dict[str, str] = {"1": "1m", "5": "5m", "15": "15m", "60": "1h", "1D": DAILY, "D": DAILY}
SUPPORTED_RESOLUTIONS = ["1", "5", "15", "60", "1D"]
TYPES = {"oil": "commodity", "chem": "commodity", "fx": "forex", "custom": "commodity"}
MAX_COUNTBACK = 5000
DEFAULT_SEARCH_LIMIT = 30
MAX_SEARCH_LIMIT = 100
_DAY_OFFSET_S = 8 * 3600  # a daily bar's UDF time (00:00 UTC of its date) minus its /kline start (00:00 +08:00)
_NO_DATA = orjson.dumps({"s": "no_data"})
MAX_DEEP_BARS = 20_000  # a from/to request reaching the stored history: at most its latest 20,000 bars
HOLIDAY_COLOR = "red"
ROLL_COLOR = "blue"  # a main-contract roll (SPEC 14, 19)

CONFIG_PARAMS: frozenset[str] = frozenset()
SYMBOLS_PARAMS = frozenset({"symbol"})
SEARCH_PARAMS = frozenset({"query", "type", "exchange", "limit"})
HISTORY_PARAMS = frozenset({"symbol", "resolution", "from", "to", "countback", "adjust"})
MARKS_PARAMS = frozenset({"symbol", "resolution", "from", "to"})


class UdfApi:
    def __init__(self, state: MarketState, cache: VersionedCache, clock: Callable[[], float] = time.time,
                 deep: DeepRanges | None = None) -> None:
        """`deep`: a live feed's stored history, which a history request reaching below the rings reads."""
        self.state = state
        self.deep = deep
        self.cache = cache
        self.clock = clock
        self.catalogue = state.catalogue
        today = datetime.fromtimestamp(clock(), UTC).date()
        clocks = state.clocks or (None,) * len(self.catalogue.instruments)
        shared: dict[VenueClock, ChartHours] = {}  # made once per clock: the instruments of a venue share it
        self._hours: dict[str, ChartHours] = {}
        for inst, venue in zip(self.catalogue.instruments, clocks, strict=True):
            if venue is not None:
                if venue not in shared:
                    shared[venue] = known_hours(venue, today)
                self._hours[inst.id] = shared[venue]
        self._symbols = {inst.id: orjson.dumps(symbol_info(inst, venue, self._hours.get(inst.id)))
                         for inst, venue in zip(self.catalogue.instruments, clocks, strict=True)}
        self._config = orjson.dumps(config())

    def register(self, router: Router) -> None:
        static = _static_version  # config, symbols and search answers never change while the hub runs
        data = self.state  # its `version` attribute (read on every remembered answer without a call)
        router.add("GET", PREFIX + "config", self.config, Access.KEYED, name="udf-config", version=static)
        router.add("GET", PREFIX + "symbols", self.symbols, Access.KEYED, name="udf-symbols", version=static)
        router.add("GET", PREFIX + "search", self.search, Access.KEYED, name="udf-search", version=static)
        router.add("GET", PREFIX + "history", self.history, Access.KEYED, name="udf-history", version=data)
        router.add("GET", PREFIX + "time", self.time, Access.KEYED, name="udf-time")
        router.add("GET", PREFIX + "timescale_marks", self.timescale_marks, Access.KEYED, name="udf-timescale-marks",
                   version=static)

    # --- endpoints ---------------------------------------------------------------------------------------------

    def config(self, req: Request) -> Response:
        _query(req, CONFIG_PARAMS)
        return Response(200, self._config)

    def symbols(self, req: Request) -> Response:
        query = _query(req, SYMBOLS_PARAMS)
        symbol = self._symbol(query, req.owner)
        known = self._symbols.get(symbol)
        if known is not None and not self.catalogue.owners[self.catalogue.index[symbol]]:
            return Response(200, known)
        row = self.catalogue.index[symbol]  # a declared instrument (SPEC 20): bound after the hub started
        clock = self.state.clocks[row] if self.state.clocks else None
        today = datetime.fromtimestamp(self.clock(), UTC).date()
        hours = known_hours(clock, today) if clock is not None else None
        return Response(200, orjson.dumps(symbol_info(self.catalogue.instruments[row], clock, hours)))

    def search(self, req: Request) -> Response:
        query = _query(req, SEARCH_PARAMS)
        text = query.get("query", "").strip().lower()
        kind = query.get("type", "")
        if kind and kind not in set(TYPES.values()):
            raise _param("type", f"type must be one of {', '.join(sorted(set(TYPES.values())))} (or empty)")
        exchange = query.get("exchange", "")
        limit = _count("limit", query.get("limit"), MAX_SEARCH_LIMIT, DEFAULT_SEARCH_LIMIT)
        found: list[dict[str, Any]] = []
        contracts = any(ch.isdigit() for ch in text)  # a contract's month or symbol (MA605): SPEC 19
        owner = req.owner
        for inst in self.catalogue.instruments:
            if inst.product and not contracts:
                continue  # the products are the main continuous series; a contract comes by its month or symbol
            if inst.owner and inst.owner != owner:
                continue  # another account's declared instrument, or a reserved row (SPEC 20)
            if kind and TYPES[inst.kind] != kind:
                continue
            if exchange and inst.source["en"] != exchange:
                continue
            if text and text not in inst.id.lower() and text not in inst.name["en"].lower() \
                    and text not in inst.name["zh"] and text not in inst.symbol.lower():
                continue
            found.append({"symbol": inst.id, "full_name": inst.id, "description": inst.name["en"],
                          "exchange": inst.source["en"], "ticker": inst.id, "type": TYPES[inst.kind]})
            if len(found) == limit:
                break
        return Response(200, orjson.dumps(found))

    def history(self, req: Request) -> Response:
        query = _query(req, HISTORY_PARAMS)
        row = self.catalogue.index[self._symbol(query, req.owner)]
        resolution = _required(query, "resolution")
        interval = RESOLUTIONS.get(resolution)
        if interval is None:
            raise _param("resolution", f"resolution must be one of {', '.join(SUPPORTED_RESOLUTIONS)}")
        inst = self.catalogue.instruments[row]
        if interval != DAILY and inst.publication != "continuous":
            every = "day" if inst.publication == "daily" else "month"
            raise _param("resolution", f"{inst.id} is published once a {every}: resolution must be 1D")
        end = _seconds(query, "to")
        countback = _count("countback", query.get("countback"), MAX_COUNTBACK, 0) or None
        adjust = query.get("adjust")  # a futures product's back-adjusted series, as /kline's (SPEC 19)
        if adjust is not None and adjust not in ADJUST_MODES:
            raise _param("adjust", "adjust must be diff or ratio (a futures product's series adjusted at its rolls)")
        start: float
        if countback is None:
            start = _seconds(query, "from") if "from" in query else -math.inf  # default: the earliest held
            if start > end:
                raise _param("to", "to must not be before from (UDF counts both in: from <= t <= to)")
        else:
            start = -math.inf  # countback wins over from (from is still checked when given)
            if "from" in query:
                _seconds(query, "from")
        deep = self._below(row, interval, start, end, countback, adjust)
        if deep is not None:
            return deep  # type: ignore[return-value]
        key = ("udf-history", row, interval, start, end, countback, adjust)
        body = self.cache.get(key, self.state.version,
                              lambda: self._bars(row, interval, start, end, countback, adjust))
        return Response(200, body)

    def _below(self, row: int, interval: str, start: float, end: float, countback: int | None,
               adjust: str | None) -> Coroutine[Any, Any, Response] | None:
        """The stored history's answer when the request reaches below the ring (SPEC 18), else None."""
        if self.deep is None:
            return None
        shift = _DAY_OFFSET_S if interval == DAILY else 0  # UDF times -> /kline's bucket starts, as in _bars
        hi_s, start = math.floor(end) - shift + 1, start - shift
        starts, _ = self.state.ranges.held(row, interval)
        if countback is not None:
            held = int((starts < hi_s).sum())
            if held >= countback:
                return None
            oldest = float(starts[0]) if len(starts) else math.inf
        else:
            found = self.deep.below(self.state.ranges, row, interval, start)
            if found is None:
                return None
            oldest = found
        return self._deep_bars(row, interval, start, hi_s, countback or MAX_DEEP_BARS, oldest, adjust)

    async def _deep_bars(self, row: int, interval: str, start: float, hi_s: float, limit: int,
                         oldest: float, adjust: str | None) -> Response:
        """The latest `limit` bars in [start, hi_s), the stored part joined with the ring's."""
        assert self.deep is not None
        series, _ = await self.deep.series(self.state.ranges, row, interval, start, hi_s, limit, False, oldest)
        if not series:
            return Response(200, _NO_DATA)
        return Response(200, _columns([_udf_time(c["t"]) for c in series], self._adjusted(row, interval, series,
                                                                                          adjust)))

    def _adjusted(self, row: int, interval: str, series: list[dict], adjust: str | None) -> list[dict]:
        """The bars back-adjusted at the product's rolls as /kline's `adjust` does them (SPEC 19), or as traded."""
        return series if adjust is None else self.state.mains.adjust(row, series, adjust, interval != DAILY)

    def _bars(self, row: int, interval: str, start: float, end: float, countback: int | None,
              adjust: str | None) -> bytes:
        shift = _DAY_OFFSET_S if interval == DAILY else 0
        starts, cols = self.state.ranges.held(row, interval)
        # UDF's closed [from, to] on UDF times: [from - shift, to - shift + 1) on /kline's starts (whole seconds)
        lo_s, hi_s = start - shift, math.floor(end) - shift + 1
        if countback is None:
            lo, hi, _ = window(starts, lo_s, hi_s, len(starts), True)
        else:
            lo, hi, _ = window(starts, -math.inf, hi_s, countback, False)
        if hi <= lo:  # nothing in the window: nextTime is the newest bar before it, when there is one
            if countback is not None or lo == 0:
                return _NO_DATA
            return orjson.dumps({"s": "no_data", "nextTime": int(starts[lo - 1]) + shift})
        series = self._adjusted(row, interval, self.state.ranges.format(row, interval, cols[lo:hi]), adjust)
        return _columns((starts[lo:hi] + shift).tolist(), series)

    def timescale_marks(self, req: Request) -> Response:
        """The holiday closures of the symbol's venue with from <= time <= to (a closure's time is its date at
        00:00 UTC, as a daily bar's; none for a symbol without a venue), and a product's main-contract rolls (at
        the new main's first trading day, the same way), by time."""
        query = _query(req, MARKS_PARAMS)
        symbol = self._symbol(query, req.owner)
        start, end = _seconds(query, "from"), _seconds(query, "to")
        if start > end:
            raise _param("to", "to must not be before from (both are counted in)")
        if "resolution" in query and query["resolution"] not in RESOLUTIONS:
            raise _param("resolution", f"resolution must be one of {', '.join(SUPPORTED_RESOLUTIONS)}")
        hours = self._hours.get(symbol)
        closures = hours.closures if hours is not None else ()
        marks = [{"id": f"holiday-{day:%Y%m%d}", "time": at, "color": HOLIDAY_COLOR, "label": "H",
                  "tooltip": [f"{day.isoformat()}: {name} (closed)"]}
                 for day, name in closures if start <= (at := calendar.timegm(day.timetuple())) <= end]
        row = self.catalogue.index[symbol]
        if self.state.mains.is_series(row):  # a product's main series: each roll on its new main's first day
            for roll in self.state.mains.roll_views(row):
                day = date.fromisoformat(roll["tradingDay"])
                if start <= (at := calendar.timegm(day.timetuple())) <= end:
                    marks.append({"id": f"roll-{day:%Y%m%d}", "time": at, "color": ROLL_COLOR, "label": "R",
                                  "tooltip": [f"{day.isoformat()}: main contract {roll['from']} -> {roll['to']}"]})
        marks.sort(key=lambda m: (m["time"], m["id"]))
        return Response(200, orjson.dumps(marks))

    def time(self, req: Request) -> Response:
        _query(req, CONFIG_PARAMS)
        return Response(200, str(int(self.clock())).encode(), "text/plain; charset=utf-8")

    def _symbol(self, query: dict[str, str], owner: str | None) -> str:
        raw = _required(query, "symbol")
        symbol = raw.rsplit(":", 1)[-1].strip()  # "EXCHANGE:ticker" as some front-ends send it
        row = self.catalogue.index.get(symbol)
        if row is not None and not self.catalogue.visible(row, owner):  # another account's (SPEC 20): unknown
            raise _param("symbol", f"unknown symbol {raw[:64]!r}: symbol must be an instrument id")
        if row is None:  # a query parameter naming an unknown id: 400 (as SPEC 6's ids)
            row = self.state.mains.resolve(symbol, self.clock())  # a continuous id names a contract (SPEC 19)
            if row is None:
                raise _param("symbol", f"unknown symbol {raw[:64]!r}: symbol must be an instrument id")
            return self.catalogue.instruments[row].id
        return symbol


def config() -> dict[str, Any]:
    return {
        "supported_resolutions": SUPPORTED_RESOLUTIONS,
        "supports_search": True,
        "supports_group_request": False,
        "supports_marks": False,
        "supports_timescale_marks": True,
        "supports_time": True,
        "exchanges": [],
        "symbols_types": [{"name": "All types", "value": ""}, {"name": "Commodity", "value": "commodity"},
                          {"name": "Forex", "value": "forex"}],
    }


def known_hours(clock: VenueClock, today: date) -> ChartHours:
    """The venue's hours from the year before today's to its calendar's known end (today, when that has passed:
    weekdays assumed), at most the end of the year after today's."""
    end = min(max(clock.days.known_until, today), date(today.year + 1, 12, 31))
    return chart_hours(clock, date(today.year - 1, 1, 1), end)


def price_steps(inst: Instrument) -> tuple[int, int]:
    """(minmov, pricescale): a futures product's tick (1 -> 1, 1; 0.005 -> 5, 1000), else 1 unit of the last
    decimal the instrument quotes."""
    product = PRODUCTS.get(inst.product or inst.id)
    if product is None:
        return 1, 10 ** inst.decimals
    tick = Decimal(repr(product.tick)).normalize()
    places = max(0, -int(tick.as_tuple().exponent))
    return int(tick.scaleb(places)), 10 ** places


def symbol_info(inst: Instrument, clock: VenueClock | None, hours: ChartHours | None) -> dict[str, Any]:
    """TradingView's symbol: its venue's hours in the library's grammar, zone and code (SPEC 14, 16); a daily or
    monthly publication has no intraday bars."""
    continuous = inst.publication == "continuous"
    minmov, pricescale = price_steps(inst)
    exchange = inst.source["en"] if clock is None else clock.venue.id.upper()
    info: dict[str, Any] = {
        "name": inst.id,
        "ticker": inst.id,
        "description": inst.name["en"],
        "type": TYPES[inst.kind],
        "session": "24x7" if hours is None else hours.session,
        "timezone": "Asia/Shanghai" if clock is None else clock.venue.zone,
        "exchange": exchange,
        "listed_exchange": exchange,
        "minmov": minmov,
        "pricescale": pricescale,
        "has_intraday": continuous,
        "has_daily": True,
        "supported_resolutions": SUPPORTED_RESOLUTIONS if continuous else ["1D"],
        "volume_precision": 0,
        "data_status": "streaming" if continuous else "endofday",
        "currency_code": inst.currency,
        "unit": inst.price_unit,
    }
    if continuous:
        info["intraday_multipliers"] = ["1", "5", "15", "60"]
    if hours is not None:
        info["session_holidays"] = hours.session_holidays
        info["corrections"] = hours.corrections
    return info


def _static_version() -> object:
    return 0


def _query(req: Request, allowed: frozenset[str]) -> dict[str, str]:
    try:
        return known_query(req, allowed)  # one rule for every /api/v1 endpoint
    except ApiError as exc:
        raise udf_fields(exc) from None


def _required(query: dict[str, str], field: str) -> str:
    raw = query.get(field)
    if raw is None or not raw.strip():
        raise _param(field, f"{field} is required")
    return raw.strip()


def _seconds(query: dict[str, str], field: str) -> int:
    try:
        return parse_epoch_seconds(field, _required(query, field))
    except ApiError as exc:
        raise udf_fields(exc) from None


def _count(field: str, raw: str | None, maximum: int, default: int) -> int:
    try:
        return parse_count(field, raw, maximum, default)
    except ApiError as exc:
        raise udf_fields(exc) from None


def _param(field: str, message: str) -> ApiError:
    return udf_fields(param_error(field, message))


def _columns(times: list[int], series: list[dict]) -> bytes:
    """UDF's `ok` answer: the bars as column arrays."""
    return orjson.dumps({
        "s": "ok", "t": times,
        "o": [c["o"] for c in series], "h": [c["h"] for c in series], "l": [c["l"] for c in series],
        "c": [c["c"] for c in series], "v": [c["v"] for c in series],
    })


def _udf_time(t: str) -> int:
    """A served candle's ``t`` as its UDF time: a daily candle's date at 00:00 UTC, else the instant."""
    if len(t) == 10:
        return calendar.timegm(date.fromisoformat(t).timetuple())
    return int(datetime.fromisoformat(t).timestamp())
