"""`candles()`: every candle of a range, fetched page by page (SPEC 14 range queries). No I/O here.

A `Pager` says which request to send next and takes each answer in:

- with `start`: forward, `from=start&to=end&limit=page`; the server answers the earliest `page` candles
  of the range and, when more remain, `next` (the `t` of the first one left out), which becomes the
  next `from`. Done when an answer has no `next`.
- without `start` (everything held before `end`): the server answers the latest `page` candles before
  `to`; the next request's `to` is the earliest `t` received (the range is half-open, so that candle is
  not sent twice). Done when a page comes back short.

Candles come out ascending by `t`, each once. A cursor that does not move on (a server bug) raises
instead of looping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from market_client import _calls as c
from market_client import models as m
from market_client.errors import MarketError

MAX_PAGE = 1000  # the server's largest `limit` (SPEC 6)


@dataclass
class Pager:
    instrument_id: str
    interval: str
    start: c.Instant | None
    end: c.Instant | None
    page: int = MAX_PAGE
    done: bool = False
    pages: int = 0
    _cursor: str | None = None
    _older: list[list[m.Candle]] = field(default_factory=list)  # backward pages, newest first

    def call(self) -> c.Call[m.CandleSeries]:
        if self.start is not None:
            start = self._cursor if self._cursor is not None else self.start
            return c.kline(self.instrument_id, interval=self.interval, limit=self.page, start=start, end=self.end)
        end = self._cursor if self._cursor is not None else self.end
        return c.kline(self.instrument_id, interval=self.interval, limit=self.page, end=end)

    def take(self, answer: m.CandleSeries) -> list[m.Candle]:
        """The candles to hand on now (forward: this page; backward: nothing until the last page)."""
        self.pages += 1
        if self.start is not None:
            if answer.next is None:
                self.done = True
            elif answer.next == self._cursor or (answer.series and answer.next <= answer.series[-1].t):
                raise MarketError(f"kline {self.instrument_id}: the server's next cursor {answer.next!r} does not "
                                  "move on")
            self._cursor = answer.next
            return answer.series
        if answer.series:
            self._older.append(answer.series)
        if len(answer.series) < self.page:
            self.done = True
            return [candle for page in reversed(self._older) for candle in page]
        earliest = answer.series[0].t
        if earliest == self._cursor:
            raise MarketError(f"kline {self.instrument_id}: paging back from {earliest!r} does not move on")
        self._cursor = earliest
        return []
