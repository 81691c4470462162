"""The `ctp-jsonl` feed's parser: one CTP depth record per line in, one ``Tick`` out (or a counted rejection).

The record is normalised by ``server.feeds.ctp`` (pure); here it is checked as a JSONL line is (its time within
the range the state keeps, its price within its day's limits: the record's own `UpperLimitPrice` and
`LowerLimitPrice` when it has them, else the state's) and given its instrument row. A rejected record is counted
(``bad_lines``, ``unknown_ids``, the metrics the jsonl feed has) and logged with its number in the feed (1-based,
blank lines not counted): every one of the first ``LOGGED_IN_FULL``, then one in ``LOG_EVERY`` so a broken
source cannot flood the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

import orjson

from server.feeds.ctp import BadRecord, CtpNormaliser, CtpTick, UnknownContract
from server.feeds.jsonl import Limits, _allow_all
from server.market.contracts.settlement import within
from server.market.tick import MAX_FUTURE_S, Tick

log = logging.getLogger("market.feed")

LOGGED_IN_FULL = 100
LOG_EVERY = 1000


class CtpParser:
    """Parses CTP depth records, one JSON object per line; counts what it rejects (as ``JsonlParser``)."""

    def __init__(self, normaliser: CtpNormaliser, rows: Mapping[str, int], within_limits: Limits = _allow_all) -> None:
        """``rows``: instrument id -> row (a contract's id names its row)."""
        self.normaliser = normaliser
        self.rows = rows
        self.within_limits = within_limits
        self.records = 0
        self.bad_lines = 0
        self.unknown_ids = 0
        self.accepted = 0

    def parse(self, line: bytes | str, now: float, not_before: float = -math.inf) -> Tick | None:
        if not line.strip():
            return None
        self.records += 1
        try:
            tick = self._parse(line, now, not_before)
        except BadRecord as exc:
            self.bad_lines += 1
            self._log("skipped:", exc, self.bad_lines + self.unknown_ids)
            return None
        except UnknownContract as exc:
            self.unknown_ids += 1
            self._log("names no contract of the catalogue:", exc, self.bad_lines + self.unknown_ids)
            return None
        self.accepted += 1
        return tick

    def _parse(self, line: bytes | str, now: float, not_before: float) -> Tick:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise BadRecord("not JSON") from None
        found = self.normaliser.normalise(record)
        row = self.rows.get(found.contract)
        if row is None:
            raise UnknownContract(f"{found.symbol} ({found.contract} is not an instrument)")
        if not not_before <= found.ts <= now + MAX_FUTURE_S:
            raise BadRecord("its time is before the history held or more than 5 minutes ahead")
        if not self._inside(row, found):
            raise BadRecord(f"price {found.price:g} outside the day's limits")
        self.normaliser.commit(found)
        return found.tick(row)

    def _inside(self, row: int, found: CtpTick) -> bool:
        if found.limit_up is not None or found.limit_down is not None:
            return within(found.price, math.nan if found.limit_down is None else found.limit_down,
                          math.nan if found.limit_up is None else found.limit_up)
        return self.within_limits(row, found.price, found.ts)

    def _log(self, what: str, exc: Exception, rejected: int) -> None:
        if rejected <= LOGGED_IN_FULL or rejected % LOG_EVERY == 0:
            more = "" if rejected < LOGGED_IN_FULL else f" ({rejected} rejected so far; logging one in {LOG_EVERY})"
            log.warning("ctp-jsonl feed: record %d %s %s%s", self.records, what, exc, more)
