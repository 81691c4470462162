"""The JSON-lines feed's parser: one line in, one ``Tick`` out (or a counted rejection). Pure."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeGuard

import orjson

from server.market.catalogue import Catalogue
from server.market.contracts.settlement import within
from server.market.tick import MAX_DETAIL, MAX_FUTURE_S, MAX_PRICE, MAX_VOLUME, Tick, TickDetail
from server.market.timefmt import TZ

# A futures line's board fields (SPEC 19): the line's key -> TickDetail's field; each a number >= 0 or absent/null.
DETAIL_KEYS = {"bid": "bid", "ask": "ask", "bidSize": "bid_size", "askSize": "ask_size", "oi": "oi",
               "cumVolume": "cum_volume", "turnover": "turnover", "settle": "settle", "limitUp": "limit_up",
               "limitDown": "limit_down"}
MIN_LINE = len('{"id":"","price":1}')  # the shortest line naming an instrument (empty: an unknown id) and a price
Limits = Callable[[int, float, float], bool]  # (row, price, ts) -> within the daily limits of ts's trading day
Symbols = Callable[[str, float], str | None]  # (an exchange's symbol, now) -> the contract id it names, None: none
# A text `ts` (docs/input-rules.md): YYYY-MM-DD, then optionally T (or a space) hh:mm[:ss[.fraction]] and Z or an
# offset; nothing else. `datetime.fromisoformat` alone also takes week dates (2026-W48-1), the basic form
# (20261118T103000) and (CPython 3.11) text cut at a NUL ("2026-11-18T10:30:00\x00" read as 10:30).
ISO_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?"
                    r"([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)?)?")


def _allow_all(row: int, price: float, ts: float) -> bool:
    return True


def _no_symbols(text: str, now: float) -> str | None:
    return None


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_ts(value: Any, now: float) -> float | None:
    if value is None:
        return now
    if _is_number(value):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and ISO_TS.fullmatch(value):
        try:
            parsed = datetime.fromisoformat(value)
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=TZ)
            return parsed.timestamp()
        except (ValueError, OverflowError, OSError):  # "0001-01-01" in +08:00 is before year 1 in UTC
            return None
    return None


class JsonlParser:
    """Parses ``{"id"|"symbol","price","ts"?,"volume"?}`` lines; counts what it rejects.

    A line names its instrument by ``id`` (a product's id, or a contract's ``{product}-{YYYYMM}``) or by
    ``symbol``, an exchange's code (``MA605``, ``pp2605``; case counts) resolved by ``symbols`` on the venue's
    current trading day (ZCE's one-digit year: the nearest contract with that month); a line with both, or with
    neither, is a bad line, and a symbol naming no instrument an unknown id.

    ``bad_lines`` counts malformed lines (bad JSON, wrong types, a price not in (0, MAX_PRICE], a volume
    not in [0, MAX_VOLUME], unparseable ts, a ts before ``not_before``
    (the oldest candle held) or more than ``MAX_FUTURE_S`` after ``now``);
    ``unknown_ids`` counts well-formed lines whose id is not in the catalogue.
    Blank lines are ignored. A missing ts means "now"; a naive ISO 8601 ts is
    read as Asia/Shanghai. ``ts`` is epoch seconds: epoch milliseconds land
    tens of thousands of years ahead and are rejected like any other future ts.

    A futures line may carry the board's fields (``DETAIL_KEYS``; ``cumVolume``, the day's running total, instead
    of ``volume``); a field that is not a number from 0 to MAX_DETAIL is a bad line, and so is a price outside the daily
    limits (``within_limits``: the market state's; a line's own ``limitUp``/``limitDown`` win), a limit price
    being valid.
    """

    def __init__(self, catalogue: Catalogue, within_limits: Limits = _allow_all,
                 symbols: Symbols = _no_symbols) -> None:
        self.index = catalogue.index
        self.within_limits = within_limits
        self.symbols = symbols
        self.bad_lines = 0
        self.unknown_ids = 0
        self.accepted = 0

    def parse(self, line: bytes | str, now: float, not_before: float = -math.inf) -> Tick | None:
        if not line.strip():
            return None
        tick = self._parse(line, now, not_before)
        if tick is not None:
            self.accepted += 1
        return tick

    def _bad(self) -> Tick | None:
        self.bad_lines += 1
        return None

    def _parse(self, line: bytes | str, now: float, not_before: float) -> Tick | None:
        if len(line) < MIN_LINE:  # cannot hold an id and a price: bad without orjson's costly exception (2 us)
            return self._bad()
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return self._bad()
        if not isinstance(obj, dict):
            return self._bad()
        iid, sym, price, volume = obj.get("id"), obj.get("symbol"), obj.get("price"), obj.get("volume", 0.0)
        if sym is not None and iid is None and isinstance(sym, str):
            iid = self.symbols(sym.strip(), now) or " "  # no instrument: an unknown id once the line is checked
        elif sym is not None:
            return self._bad()
        if not isinstance(iid, str) or not _is_number(price) or not _is_number(volume):
            return self._bad()
        if not 0 < price <= MAX_PRICE or not 0 <= volume <= MAX_VOLUME:  # NaN and inf fail these too
            return self._bad()
        ts = _parse_ts(obj.get("ts"), now)
        if ts is None:
            return self._bad()
        row = self.index.get(iid.strip().lower())
        if row is None:
            self.unknown_ids += 1
            return None
        if not not_before <= ts <= now + MAX_FUTURE_S:  # before the limits: their trading day must exist
            return self._bad()
        given = {field: obj[key] for key, field in DETAIL_KEYS.items() if obj.get(key) is not None}
        if not all(_is_number(v) and 0 <= v <= MAX_DETAIL for v in given.values()) or (
                "cum_volume" in given and "volume" in obj):
            return self._bad()
        detail = TickDetail(**{k: float(v) for k, v in given.items()}) if given else None
        if detail is not None and (detail.limit_up is not None or detail.limit_down is not None):
            inside = within(price, math.nan if detail.limit_down is None else detail.limit_down,
                            math.nan if detail.limit_up is None else detail.limit_up)
        else:
            inside = self.within_limits(row, price, ts)
        if not inside:
            return self._bad()
        return Tick(row, float(price), ts, float(volume), detail)
