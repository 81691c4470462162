"""`GET /api/console/sla?month=YYYY-MM` (SPEC 20, docs/sla.md): the month's availability per component against the
plan's target, every down range, the latency percentiles, from the rows every hub records each minute.

An enterprise account (or an operator, whatever its plan); any other account gets 403. `month` is the calendar
month in Asia/Shanghai, canonical `YYYY-MM` (default: this month); anything else is 400. The minutes that count are
those from the data dir's first start to the minute before the one in progress: a month wholly in the future or
before the first start answers `minutes: 0`, `availability: null` for every component and no ranges.
`supportResponse` lists the month's enterprise tickets with their first-response target, met, missed or pending
(server/store/support/response.py): the account's own, every account's for an operator.
"""

from __future__ import annotations

import asyncio
import re
from datetime import date
from typing import Any

from server.api.console.context import ConsoleContext, json_answer
from server.api.core.query import known_query, param_error
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.availability import (
    EPOCH_ORDINAL,
    MINUTE_S,
    InSession,
    MinuteRecord,
    Span,
    availability,
    by_day,
    counted_span,
    down_minutes,
    local_day_of,
    month_span,
    percentile,
    ranges,
    totals,
)
from server.core.errors import ApiError
from server.core.metrics import LATENCY_BUCKETS
from server.core.usage import local_day
from server.market.timefmt import iso
from server.store.accounts.console import Account
from server.store.availability.store import AvailabilityStore
from server.store.support.response import support_response

PLAN_TARGETS = {"enterprise": 99.9}  # percent of a month's counted minutes up, per component (SPEC 20)
OPERATOR_TARGET = PLAN_TARGETS["enterprise"]
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
PARAMS = frozenset({"month"})



def parse_month(raw: str) -> tuple[int, int]:
    found = _MONTH.fullmatch(raw)
    if found is None or not 1 <= int(found[2]) <= 12 or not 1970 <= int(found[1]) <= 9999 or raw == "9999-12":
        raise param_error("month", "month must be a calendar month YYYY-MM from 1970-01 to 9999-11")
    return int(found[1]), int(found[2])


class SlaApi:
    def __init__(self, ctx: ConsoleContext, store: AvailabilityStore, feeds: list[str], in_session: InSession) -> None:
        """`feeds`: the venues with a `feed:{venue}` component; `in_session(venue, minute)`: its clock said open."""
        self.ctx, self.store = ctx, store
        self.components = ["rest", "stream", "storage", *(f"feed:{v}" for v in feeds)]
        self.in_session = in_session

    def register(self, router: Router) -> None:
        router.add("GET", "/api/console/sla", self.sla, Access.PUBLIC, name="console_sla")

    async def sla(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        query = known_query(req, PARAMS)  # the query's 400 before the plan's 403, as the other routes answer
        now = self.ctx.clock()
        year, month = parse_month(query["month"]) if "month" in query else _this_month(now)
        if not account.is_operator and account.plan not in PLAN_TARGETS:
            raise ApiError("forbidden", "The SLA report is part of the enterprise plan.")
        whole = month_span(year, month)
        first_start = await self.store.first_minute()
        span = counted_span(whole.first, whole.end, first_start, int(now // MINUTE_S))
        records = await self.store.between(span.first, span.end) if span.minutes else []
        target = OPERATOR_TARGET if account.is_operator else PLAN_TARGETS[account.plan]
        report = await asyncio.to_thread(self.report, f"{year:04d}-{month:02d}", whole, span, records, target)
        report["supportResponse"] = await self.support_response(account, f"{year:04d}-{month:02d}", now)
        return json_answer(report)

    async def support_response(self, account: Account, month: str, now: float) -> list[dict[str, Any]]:
        """The month's enterprise tickets' first responses, met, missed or pending (SPEC 20): the account's, an
        operator's every account's (server/store/support/response.py)."""
        owner = None if account.is_operator else account.id
        answer = await self.ctx.store.read(lambda r: support_response(r.db, month, owner, now))
        return list(answer["items"])

    def report(self, month: str, whole: Span, span: Span, records: list[MinuteRecord],
               target: float) -> dict[str, Any]:
        down = down_minutes(records, span, self.components, self.in_session)
        components = []
        for c in self.components:
            pct = availability(span.minutes, len(down[c]))
            components.append({
                "id": c, "availability": pct, "target": target, "met": None if pct is None else pct >= target,
                "downMinutes": len(down[c]),
                "downRanges": [{"from": iso(a * MINUTE_S), "to": iso(b * MINUTE_S)} for a, b in ranges(down[c])]})
        all_ = totals(records)
        return {
            "month": month, "timezone": "Asia/Shanghai", "from": iso(span.first * MINUTE_S) if span.minutes else None,
            "to": iso(span.end * MINUTE_S) if span.minutes else None, "minutes": span.minutes, "target": target,
            "components": components,
            "latency": {"requests": all_.requests, "errors": all_.errors,
                        **{f"p{q}Ms": _ms(percentile(all_.latency, LATENCY_BUCKETS, q / 100)) for q in (50, 95, 99)}},
            "stream": {"frames": all_.frames, "feedToFrameP99Ms": _ms(percentile(all_.feed, LATENCY_BUCKETS, 0.99))},
            "days": self.days(whole, span, down),
        }

    def days(self, whole: Span, span: Span, down: dict[str, list[int]]) -> list[dict[str, Any]]:
        """Per Asia/Shanghai day of the month: minutes counted and each component's availability (null: none)."""
        counted, down_by_day = by_day(local_day_of(whole.first), local_day_of(whole.end), span, down)
        return [{"date": date.fromordinal(EPOCH_ORDINAL + day).isoformat(), "minutes": n,
                 "availability": {c: availability(n, down_by_day[c][day]) for c in self.components}}
                for day, n in counted.items()]


def _this_month(now: float) -> tuple[int, int]:
    today = local_day(now)
    return int(today[:4]), int(today[5:7])


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)
