"""A product's listing rules as data: which months it lists, how many at once, its last trading day, its symbol form.

`parse_listing(entry)` reads the fields of one `[[product]]` table of products.toml (documented in that file's
header and in docs/contracts.md); a bad field raises ValueError naming it, which specs.py turns into one line
naming the file and the entry. Nothing here reads a calendar: server/market/contracts/expiry.py counts days.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

MAX_LISTED = 60  # the listed contracts span five years at most, so a one-digit year (MA605, CLM6) names one
_RULE = re.compile(r"(trading-day) (-?[1-9][0-9]?)|(calendar-day) ([1-9][0-9]?)|(before-day) ([1-9][0-9]?) ([1-9])")


class SymbolForm(StrEnum):
    YMM = "ymm"  # ZCE: code, the year's last digit, the month (MA605)
    YYMM = "yymm"  # DCE, SHFE, INE: code, two-digit year, month (pp2605)
    LETTER_Y = "letter-y"  # CME, ICE, GME: code, the month's letter, the year's last digit (CLM6)


class DayRule(StrEnum):
    TRADING_DAY = "trading-day"  # the nth trading day of the month (n < 0: the |n|th last)
    CALENDAR_DAY = "calendar-day"  # calendar day n, or the next trading day when the venue is shut
    BEFORE_DAY = "before-day"  # k trading days before calendar day n (k + 1 when day n is shut)


@dataclass(frozen=True, slots=True)
class ListingRule:
    months: frozenset[int]  # the delivery months the product has (1-12)
    serial: int  # the nearest `serial` calendar months are listed whatever `months` says (INE sc, SHFE bu)
    listed: int  # contracts listed at once
    rule: DayRule
    day: int  # n of the rule
    back: int  # k of before-day (0 otherwise)
    month_offset: int  # the month the rule counts in, relative to the delivery month (0, -1, -2)
    symbol_form: SymbolForm

    def has(self, k: int, month: int) -> bool:
        """Whether the delivery month `month`, `k` months after the front month, is among the listed ones."""
        return k < self.serial or month in self.months


def _int(entry: dict[str, Any], name: str, default: int | None, low: int, high: int) -> int:
    value = entry.get(name, default)
    if value is None:
        raise ValueError(f"missing field {name!r}")
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"field {name!r} must be a whole number from {low} to {high}")
    return value


def _months(entry: dict[str, Any]) -> frozenset[int]:
    value = entry.get("months", list(range(1, 13)))
    if not isinstance(value, list) or not value or not all(
            isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= 12 for m in value):
        raise ValueError("field 'months' must be a non-empty list of months 1-12")
    return frozenset(value)


def _day_rule(entry: dict[str, Any]) -> tuple[DayRule, int, int]:
    text = entry.get("last_trading_day")
    if text is None:
        raise ValueError("missing field 'last_trading_day'")
    m = _RULE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError("field 'last_trading_day' must be 'trading-day N' (N 1..23 or -1..-23), 'calendar-day D' "
                         "or 'before-day D K'")
    if m[1]:
        if abs(int(m[2])) > 23:
            raise ValueError("field 'last_trading_day': a month has at most 23 trading days")
        return DayRule.TRADING_DAY, int(m[2]), 0
    if m[3]:
        return DayRule.CALENDAR_DAY, _day_of_month(m[4]), 0
    return DayRule.BEFORE_DAY, _day_of_month(m[6]), int(m[7])


def _day_of_month(text: str) -> int:
    if int(text) > 28:
        raise ValueError("field 'last_trading_day': a calendar day must be 1-28 (every month has it)")
    return int(text)


def parse_listing(entry: dict[str, Any]) -> ListingRule:
    """The listing rule of one product table; ValueError("field 'x' ...") when a field is wrong."""
    form = entry.get("symbol_form")
    if form not in {f.value for f in SymbolForm}:
        raise ValueError(f"field 'symbol_form' must be one of {', '.join(f.value for f in SymbolForm)}")
    rule, day, back = _day_rule(entry)
    listing = ListingRule(
        months=_months(entry), serial=_int(entry, "serial", 0, 0, MAX_LISTED),
        listed=_int(entry, "listed", None, 1, MAX_LISTED), rule=rule, day=day, back=back,
        month_offset=_int(entry, "last_trading_month", None, -3, 0), symbol_form=SymbolForm(form))
    for front in range(1, 13):  # whichever month is the front, the listed contracts lie within MAX_LISTED months
        if sum(listing.has(k, (front + k - 1) % 12 + 1) for k in range(MAX_LISTED)) < listing.listed:
            raise ValueError(f"field 'listed': {listing.listed} contracts of these months span more than "
                             f"{MAX_LISTED} months")
    return listing
