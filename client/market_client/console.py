"""The service console's calls (SPEC 17): an account's keys, usage, plan requests and audit list; the operators'
decisions. Bearer-authenticated: `login()` on the client first.

    with MarketClient(url) as api:
        api.login("me@example.com", "...")
        created = api.console.create_key("trading desk")   # ConsoleKeyCreated: .key shown once
        api.console.usage(start=date(2026, 11, 1))         # Usage per key per day
        api.console.sla("2026-11")                         # SlaReport (enterprise accounts, operators)
"""

from __future__ import annotations

from datetime import date
from typing import Any, Protocol, TypeVar

from market_client import sources as src
from market_client import tickets as t
from market_client._calls import Call, _body, _params, _seg
from market_client.models import Model

T = TypeVar("T")


class ConsoleKey(Model):
    id: str
    label: str | None
    plan: str
    rate: int
    prefix: str | None
    created_at: str
    last_used_at: str | None
    revoked_at: str | None
    scope: str = "read"  # or "ingest": publishes to the account's own instruments, reads nothing (docs/ingest.md)


class ConsoleKeyCreated(ConsoleKey, kw_only=True):
    key: str  # the secret: shown once
    replaces: str | None = None  # on rotation: the key it replaced (now revoked)


class ConsoleKeys(Model):
    items: list[ConsoleKey]


class Subscription(Model):
    id: str
    user_id: str
    email: str | None
    plan: str
    message: str | None
    status: str
    rate: int | None
    created_at: str
    decided_at: str | None


class Subscriptions(Model):
    items: list[Subscription]


class Account(Model):
    id: str
    email: str
    name: str | None
    company: str | None
    created_at: str


class Limits(Model):
    rate: int
    keys: int
    ws_connections: int


class ConsoleMe(Model):
    account: Account
    plan: str
    role: str
    limits: Limits
    subscription: Subscription | None


class UsageDay(Model):
    date: str
    key_id: str
    requests: int
    refused: int
    client_errors: int
    ws_connections: int
    ws_messages: int


class UsageTotals(Model):
    requests: int
    refused: int
    client_errors: int
    ws_connections: int
    ws_messages: int


class Usage(Model, rename={"start": "from", "end": "to"}):
    start: str
    end: str
    key: str | None
    items: list[UsageDay]
    totals: UsageTotals


class ConsoleEvent(Model):
    id: str
    at: str
    kind: str
    key_id: str | None
    detail: str | None
    ip: str | None


class ConsoleEvents(Model):
    items: list[ConsoleEvent]


class DownRange(Model, rename={"start": "from", "end": "to"}):
    start: str
    end: str  # the first minute up again


class SlaComponent(Model):
    id: str  # rest, stream, storage or feed:{venue}
    availability: float | None  # percent of the counted minutes; None when none count
    target: float
    met: bool | None
    down_minutes: int
    down_ranges: list[DownRange]


class SlaLatency(Model):
    requests: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class SlaStream(Model):
    frames: int
    feed_to_frame_p99_ms: float | None


class SlaDay(Model):
    date: str
    minutes: int
    availability: dict[str, float | None]


class SlaReport(Model, rename={"start": "from", "end": "to", "support_response": "supportResponse"}):
    month: str
    timezone: str
    start: str | None
    end: str | None
    minutes: int
    target: float
    components: list[SlaComponent]
    latency: SlaLatency
    stream: SlaStream
    days: list[SlaDay]
    support_response: list[dict[str, Any]]


BASE = "/api/console"


def _call(method: str, path: str, result: type[T], params: dict[str, str] | None = None,
          body: dict[str, Any] | None = None) -> Call[T]:
    return Call(method, BASE + path, result, params or {}, body, auth="bearer")


def _day(value: date | str | None) -> str | None:
    return value.isoformat() if isinstance(value, date) else value


class _Caller(Protocol):
    def call(self, call: Call[T]) -> T: ...


class Console:
    """`MarketClient.console`: the console's calls on the client's connection and token."""

    def __init__(self, client: _Caller) -> None:
        self._c = client

    def me(self) -> ConsoleMe:
        return self._c.call(_call("GET", "/me", ConsoleMe))

    def list_keys(self) -> list[ConsoleKey]:
        return self._c.call(_call("GET", "/keys", ConsoleKeys)).items

    def create_key(self, label: str | None = None, scope: str | None = None) -> ConsoleKeyCreated:
        """`scope`: "read" (default) or "ingest" (an enterprise account's dedicated data source)."""
        return self._c.call(_call("POST", "/keys", ConsoleKeyCreated, body=_body(label=label, scope=scope)))

    def rotate_key(self, key_id: str) -> ConsoleKeyCreated:
        return self._c.call(_call("POST", f"/keys/{_seg(key_id)}/rotate", ConsoleKeyCreated))

    def rename_key(self, key_id: str, label: str) -> ConsoleKey:
        return self._c.call(_call("PATCH", f"/keys/{_seg(key_id)}", ConsoleKey, body={"label": label}))

    def revoke_key(self, key_id: str) -> ConsoleKey:
        return self._c.call(_call("DELETE", f"/keys/{_seg(key_id)}", ConsoleKey))

    def usage(self, start: date | str | None = None, end: date | str | None = None,
              key: str | None = None) -> Usage:
        params = _params(**{"from": _day(start), "to": _day(end), "key": key})
        return self._c.call(_call("GET", "/usage", Usage, params))

    def events(self) -> list[ConsoleEvent]:
        return self._c.call(_call("GET", "/events", ConsoleEvents)).items

    def sla(self, month: str | None = None) -> SlaReport:
        """The month's SLA report (`YYYY-MM`, Asia/Shanghai; default this month): enterprise accounts, operators."""
        return self._c.call(_call("GET", "/sla", SlaReport, _params(month=month)))

    def request_plan(self, plan: str, message: str | None = None) -> Subscription:
        return self._c.call(_call("POST", "/subscription", Subscription, body=_body(plan=plan, message=message)))

    def subscriptions(self, status: str | None = None) -> list[Subscription]:
        """Operators only."""
        return self._c.call(_call("GET", "/admin/subscriptions", Subscriptions, _params(status=status))).items

    def approve(self, subscription_id: str, rate: int | None = None) -> Subscription:
        """Operators only; `rate` (requests/minute) for an enterprise plan."""
        path = f"/admin/subscriptions/{_seg(subscription_id)}/approve"
        return self._c.call(_call("POST", path, Subscription, body=_body(rate=rate)))

    def reject(self, subscription_id: str) -> Subscription:
        """Operators only."""
        return self._c.call(_call("POST", f"/admin/subscriptions/{_seg(subscription_id)}/reject", Subscription))

    # --- support tickets (SPEC 20; market_client/tickets.py) ---------------------------------------------------
    def tickets(self, status: str | None = None) -> list[t.Ticket]:
        """The account's tickets (operators: everyone's), newest first; `status` open or closed."""
        return self._c.call(t.list_tickets(status)).items

    def open_ticket(self, subject: str, body: str, severity: int) -> t.TicketThread:
        return self._c.call(t.open_ticket(subject, body, severity))

    def ticket(self, ticket_id: str) -> t.TicketThread:
        return self._c.call(t.ticket(ticket_id))

    def reply_ticket(self, ticket_id: str, body: str) -> t.TicketReplied:
        return self._c.call(t.reply_ticket(ticket_id, body))

    def close_ticket(self, ticket_id: str) -> t.Ticket:
        return self._c.call(t.close_ticket(ticket_id))

    def reopen_ticket(self, ticket_id: str) -> t.Ticket:
        return self._c.call(t.reopen_ticket(ticket_id))

    def instruments(self) -> src.DeclaredInstruments:
        """The account's namespace and declared instruments (enterprise accounts; SPEC 20)."""
        return self._c.call(src.instruments())

    def declare_instrument(self, instrument_id: str, *, name: dict[str, str], unit: dict[str, str], currency: str,
                           decimals: int, venue: str, session: str | None = None) -> src.DeclaredInstrument:
        """`{namespace}.{name}`; `name`/`unit`: {"zh", "en"}; `venue`: whose trading days and sessions it follows."""
        return self._c.call(src.declare(instrument_id, name, unit, currency, decimals, venue, session))

    def delete_instrument(self, instrument_id: str) -> None:
        """Its data stops being served; the id is never reused."""
        self._c.call(src.delete(instrument_id))


class _AsyncCaller(Protocol):
    async def call(self, call: Call[T]) -> T: ...


class AsyncConsole:
    """`AsyncMarketClient.console`: the same calls, awaitable."""

    def __init__(self, client: _AsyncCaller) -> None:
        self._c = client

    async def me(self) -> ConsoleMe:
        return await self._c.call(_call("GET", "/me", ConsoleMe))

    async def list_keys(self) -> list[ConsoleKey]:
        return (await self._c.call(_call("GET", "/keys", ConsoleKeys))).items

    async def create_key(self, label: str | None = None, scope: str | None = None) -> ConsoleKeyCreated:
        """`scope`: "read" (default) or "ingest" (an enterprise account's dedicated data source)."""
        return await self._c.call(_call("POST", "/keys", ConsoleKeyCreated, body=_body(label=label, scope=scope)))

    async def rotate_key(self, key_id: str) -> ConsoleKeyCreated:
        return await self._c.call(_call("POST", f"/keys/{_seg(key_id)}/rotate", ConsoleKeyCreated))

    async def rename_key(self, key_id: str, label: str) -> ConsoleKey:
        return await self._c.call(_call("PATCH", f"/keys/{_seg(key_id)}", ConsoleKey, body={"label": label}))

    async def revoke_key(self, key_id: str) -> ConsoleKey:
        return await self._c.call(_call("DELETE", f"/keys/{_seg(key_id)}", ConsoleKey))

    async def usage(self, start: date | str | None = None, end: date | str | None = None,
                    key: str | None = None) -> Usage:
        params = _params(**{"from": _day(start), "to": _day(end), "key": key})
        return await self._c.call(_call("GET", "/usage", Usage, params))

    async def events(self) -> list[ConsoleEvent]:
        return (await self._c.call(_call("GET", "/events", ConsoleEvents))).items

    async def sla(self, month: str | None = None) -> SlaReport:
        return await self._c.call(_call("GET", "/sla", SlaReport, _params(month=month)))

    async def request_plan(self, plan: str, message: str | None = None) -> Subscription:
        return await self._c.call(_call("POST", "/subscription", Subscription, body=_body(plan=plan, message=message)))

    async def subscriptions(self, status: str | None = None) -> list[Subscription]:
        return (await self._c.call(_call("GET", "/admin/subscriptions", Subscriptions, _params(status=status)))).items

    async def approve(self, subscription_id: str, rate: int | None = None) -> Subscription:
        path = f"/admin/subscriptions/{_seg(subscription_id)}/approve"
        return await self._c.call(_call("POST", path, Subscription, body=_body(rate=rate)))

    async def reject(self, subscription_id: str) -> Subscription:
        return await self._c.call(_call("POST", f"/admin/subscriptions/{_seg(subscription_id)}/reject", Subscription))

    async def tickets(self, status: str | None = None) -> list[t.Ticket]:
        return (await self._c.call(t.list_tickets(status))).items

    async def open_ticket(self, subject: str, body: str, severity: int) -> t.TicketThread:
        return await self._c.call(t.open_ticket(subject, body, severity))

    async def ticket(self, ticket_id: str) -> t.TicketThread:
        return await self._c.call(t.ticket(ticket_id))

    async def reply_ticket(self, ticket_id: str, body: str) -> t.TicketReplied:
        return await self._c.call(t.reply_ticket(ticket_id, body))

    async def close_ticket(self, ticket_id: str) -> t.Ticket:
        return await self._c.call(t.close_ticket(ticket_id))

    async def reopen_ticket(self, ticket_id: str) -> t.Ticket:
        return await self._c.call(t.reopen_ticket(ticket_id))

    async def instruments(self) -> src.DeclaredInstruments:
        return await self._c.call(src.instruments())

    async def declare_instrument(self, instrument_id: str, *, name: dict[str, str], unit: dict[str, str],
                                 currency: str, decimals: int, venue: str,
                                 session: str | None = None) -> src.DeclaredInstrument:
        return await self._c.call(src.declare(instrument_id, name, unit, currency, decimals, venue, session))

    async def delete_instrument(self, instrument_id: str) -> None:
        await self._c.call(src.delete(instrument_id))
