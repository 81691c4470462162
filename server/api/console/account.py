"""`/api/console/me`, `/usage`, `/events` and `/subscription`: what an account sees of itself (SPEC 17).

Usage dates are trading-day dates in Asia/Shanghai (YYYY-MM-DD); `from`/`to` are inclusive, default the last 30
days up to today, at most MAX_DAYS apart. Counts reach storage within one flush of the traffic (server/api/console/
flush.py), summed over every hub.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

from server.api.console.context import (
    ConsoleContext,
    account_view,
    event_view,
    json_answer,
    subscription_view,
    usage_view,
)
from server.api.core.body import Fields, json_object
from server.api.core.query import FIRST_DAY, LAST_DAY, known_query, param_error, parse_day
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.core.usage import local_day
from server.store.accounts.console import PAID_PLANS, OpenRequest, SubscriptionStatus
from server.store.site.records import ChannelSpec

MAX_DAYS = 366
DEFAULT_DAYS = 30
MAX_MESSAGE = 2000
USAGE_PARAMS = frozenset({"from", "to", "key"})


class ConsoleAccountApi:
    def __init__(self, ctx: ConsoleContext, channels: Sequence[ChannelSpec], wake: Callable[[], None]) -> None:
        self.ctx = ctx
        self.channels = tuple(channels)
        self.wake = wake

    def register(self, router: Router) -> None:
        router.add("GET", "/api/console/me", self.me, Access.PUBLIC, name="console_me")
        router.add("GET", "/api/console/usage", self.usage, Access.PUBLIC, name="console_usage")
        router.add("GET", "/api/console/events", self.events, Access.PUBLIC, name="console_events")
        router.add("POST", "/api/console/subscription", self.subscribe, Access.PUBLIC, name="console_subscription")

    async def me(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        sub = await self.ctx.store.read(lambda r: r.plans.open_request(account.id))
        return json_answer({"account": account_view(account), "plan": account.plan, "role": account.role.value,
                            "limits": self.ctx.limits(account),
                            "subscription": subscription_view(sub) if sub is not None else None})

    async def usage(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        first, last, key_id = _usage_query(known_query(req, USAGE_PARAMS), local_day(self.ctx.clock()))
        if key_id is not None and await self.ctx.store.read(lambda r: r.key_of(account.id, key_id)) is None:
            raise ApiError("not_found", f"This account has no key {key_id[:64]}.")
        rows = await self.ctx.store.read(lambda r: r.usage(account.id, first, last, key_id))
        items = [usage_view(u) for u in rows]
        names = ("requests", "refused", "clientErrors", "wsConnections", "wsMessages")
        totals = {n: sum(int(i[n]) for i in items) for n in names}
        return json_answer({"from": first, "to": last, "key": key_id, "items": items, "totals": totals})

    async def events(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        events = await self.ctx.store.read(lambda r: r.events(account.id))
        return json_answer({"items": [event_view(e) for e in events]})

    async def subscribe(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        f = Fields(json_object(req))
        plan = f.choice("plan", PAID_PLANS)
        if f.data.get("plan") is None:
            f.error("plan", "is required")
        message = f.text("message", required=False, max_len=MAX_MESSAGE)
        f.only("plan", "message")
        f.check()
        assert plan is not None
        if plan == account.plan:
            raise ApiError("conflict", f"This account is on the {plan} plan already.")
        ip, now = self.ctx.client_ip(req), self.ctx.clock()
        try:
            sub = await self.ctx.store.write(
                lambda r: r.plans.file(account, plan, message, now, ip, self.channels))
        except OpenRequest:
            raise ApiError("conflict", "A subscription request of this account is waiting for a decision "
                                       "already.") from None
        if self.channels:
            self.wake()
        return json_answer(subscription_view(sub), 201)


def _usage_query(query: dict[str, str], today: str) -> tuple[str, str, str | None]:
    first = parse_day("from", query["from"]) if "from" in query else None
    last = parse_day("to", query["to"]) if "to" in query else None
    if last is None:  # from `from` (at most MAX_DAYS) up to today
        now = date.fromisoformat(today)
        last = now if first is None else min(now, _shift(first, MAX_DAYS - 1))
    if first is None:
        first = _shift(last, -(DEFAULT_DAYS - 1))
    span = (last - first).days
    if span < 0:
        raise param_error("from", "from must not be after to")
    if span >= MAX_DAYS:
        raise param_error("from", f"from must be at most {MAX_DAYS} days before to")
    return first.isoformat(), last.isoformat(), query.get("key") or None


def _shift(day: date, days: int) -> date:
    """``day`` moved by ``days``, kept within the dates the API takes."""
    return date.fromordinal(max(FIRST_DAY.toordinal(), min(LAST_DAY.toordinal(), day.toordinal() + days)))


class ConsoleAdminApi:
    """Operators' routes: subscription requests and their decision (a customer: 403)."""

    def __init__(self, ctx: ConsoleContext) -> None:
        self.ctx = ctx

    def register(self, router: Router) -> None:
        base = "/api/console/admin/subscriptions"
        router.add("GET", base, self.list_requests, Access.PUBLIC, name="console_admin_subscriptions")
        router.add("POST", base + "/{id}/approve", self.approve, Access.PUBLIC, name="console_admin_approve")
        router.add("POST", base + "/{id}/reject", self.reject, Access.PUBLIC, name="console_admin_reject")

    async def list_requests(self, req: Request) -> Response:
        await self.ctx.operator(req)
        text = req.query.get("status")
        statuses = tuple(s.value for s in SubscriptionStatus)
        if text is not None and text not in statuses:
            raise ApiError("invalid_parameter", f"status: must be one of {', '.join(statuses)}",
                           errors=[{"field": "status", "message": f"must be one of {', '.join(statuses)}"}])
        status = SubscriptionStatus(text) if text else None
        subs = await self.ctx.store.read(lambda r: r.plans.list(status))
        return json_answer({"items": [subscription_view(s) for s in subs]})

    async def approve(self, req: Request) -> Response:
        return await self._decide(req, approve=True)

    async def reject(self, req: Request) -> Response:
        return await self._decide(req, approve=False)

    async def _decide(self, req: Request, approve: bool) -> Response:
        from server.api.console.decide import decide_request

        operator = await self.ctx.operator(req)
        return await decide_request(self.ctx, req, operator, approve)
