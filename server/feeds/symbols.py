"""Exchange symbols (`MA605`, `pp2605`, `CLM6`) to contract ids for the jsonl feed, on each venue's current trading
day (SPEC 19: ZCE's one-digit year names the nearest contract with that month, listed or expired within a year).

The answer for a symbol is kept for the minute it was asked in (a venue's trading day turns at its close, never
within a minute's lines), so a feed of symbols costs one dict lookup per line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from server.market.contracts.listing import ContractBook
from server.market.venues.clock import VenueClock


class ContractSymbols:
    def __init__(self, book: ContractBook, clock_of: Callable[[str], VenueClock], venues: Iterable[str]) -> None:
        """`clock_of`: a venue id's clock; `venues`: the venues of the book's products."""
        self.book = book
        self.clock_of = clock_of
        self.venues = sorted(set(venues))
        self._minute = -1
        self._known: dict[str, str | None] = {}

    def __call__(self, text: str, now: float) -> str | None:
        """The contract id ``text`` names on the venues' trading days at ``now`` (epoch s), None if none."""
        minute = int(now // 60)
        if minute != self._minute:
            self._minute, self._known = minute, {}
        if text not in self._known:
            if len(self._known) > 10_000:  # a feed of nonsense symbols: keep the memory bounded
                self._known.clear()
            now_ms = int(now * 1000)
            found = self.book.resolve(text, {v: self.clock_of(v).trading_day(now_ms) for v in self.venues})
            self._known[text] = found.id if found is not None else None
        return self._known[text]
