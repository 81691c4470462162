"""Contract ids and exchange symbols (SPEC 19).

- id: `{product}-{YYYYMM}` (`methanol-202605`), ours, unambiguous.
- symbol: the exchange's own code. ZCE: code, the year's last digit, the month (`MA605`); DCE, SHFE, INE: code and
  YYMM (`pp2605`, `sc2605`); CME, ICE, GME: code, the month's letter, the year's last digit (`CLM6`, `BM6`).
  Symbols are matched as the exchanges write them (case counts: DCE's `l` is not ICE's `L`).

A one-digit year names a decade's worth of contracts: `read_symbol` answers the digit, and the listing picks the
year (server/market/contracts/listing.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from server.market.contracts.rules import SymbolForm

MONTH_LETTERS = "FGHJKMNQUVXZ"
# any exchange's symbol looks like this: letters, then a year and a month 01-12, or a month letter and a year digit
SHAPE = re.compile(r"[A-Za-z]{1,8}([0-9]{1,2}(0[1-9]|1[0-2])|[FGHJKMNQUVXZ][0-9])")
_ID = re.compile(r"(.+)-([0-9]{4})(0[1-9]|1[0-2])")


@dataclass(frozen=True, slots=True)
class SymbolDate:
    year: int  # the full year for YYMM; the last digit for the one-digit forms
    month: int
    digits: int  # how many digits of the year the symbol gives (1 or 2)


def contract_id(product: str, year: int, month: int) -> str:
    return f"{product}-{year:04d}{month:02d}"


def read_id(text: str) -> tuple[str, int, int] | None:
    """(product, year, month) of a contract id, None if `text` does not have the id's form."""
    m = _ID.fullmatch(text)
    return (m[1], int(m[2]), int(m[3])) if m else None


def symbol(form: SymbolForm, code: str, year: int, month: int) -> str:
    if form is SymbolForm.YMM:
        return f"{code}{year % 10}{month:02d}"
    if form is SymbolForm.YYMM:
        return f"{code}{year % 100:02d}{month:02d}"
    return f"{code}{MONTH_LETTERS[month - 1]}{year % 10}"


def read_symbol(form: SymbolForm, code: str, text: str) -> SymbolDate | None:
    """The date part of `text` if it is a symbol of the product `code` (None: another product's, or no month)."""
    if not text.startswith(code):
        return None
    rest = text[len(code):]
    if form is SymbolForm.LETTER_Y:
        if len(rest) == 2 and rest[0] in MONTH_LETTERS and rest[1].isdigit():
            return SymbolDate(int(rest[1]), MONTH_LETTERS.index(rest[0]) + 1, 1)
        return None
    digits = 3 if form is SymbolForm.YMM else 4
    if len(rest) != digits or not rest.isdigit():
        return None
    month = int(rest[-2:])
    if not 1 <= month <= 12:
        return None
    return SymbolDate(2000 + int(rest[:2]) if digits == 4 else int(rest[0]), month, digits - 2)
