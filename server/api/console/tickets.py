"""`/api/console/tickets`: support tickets (SPEC 20 "Technical support", docs/support.md).

An account sees its own tickets; an operator sees every ticket on the same routes (listing filterable by `status`)
and answers on them. Another account's ticket is 404, never 403. Each message notifies the other side through the
outbox, written in the message's transaction (server/store/support/repo.py); the worker is woken after the commit.
Subjects and bodies are plain text, returned verbatim as JSON strings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from server.api.console.context import ConsoleContext, json_answer
from server.api.core.body import Fields, json_object
from server.api.core.query import known_query
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.market.timefmt import iso
from server.store.accounts.console import Account
from server.store.site.records import ChannelSpec
from server.store.support.hours import SupportHours
from server.store.support.repo import Tickets
from server.store.support.tickets import (
    BODY_MAX,
    SEVERITIES,
    SUBJECT_MAX,
    Side,
    Ticket,
    TicketClosed,
    TicketMessage,
    TicketStatus,
    first_response_met,
)

PREFIX = "/api/console/tickets"
STATUSES = tuple(s.value for s in TicketStatus)
LIST_PARAMS = frozenset({"status"})


class ConsoleTicketsApi:
    def __init__(self, ctx: ConsoleContext, hours: SupportHours, channels: Sequence[ChannelSpec],
                 wake: Callable[[], None], mail: bool) -> None:
        """`channels`: the configured ones (--notify-email, webhooks); `mail`: SMTP is configured, so accounts'
        own addresses (the ticket's owner, the operators) are written e-mail jobs too."""
        self.ctx = ctx
        self.hours = hours
        self.channels = tuple(channels)
        self.wake = wake
        self.mail = mail

    def register(self, router: Router) -> None:
        router.add("GET", PREFIX, self.list_tickets, Access.PUBLIC, name="console_tickets")
        router.add("POST", PREFIX, self.open, Access.PUBLIC, name="console_ticket_open")
        router.add("GET", PREFIX + "/{id}", self.show, Access.PUBLIC, name="console_ticket")
        router.add("POST", PREFIX + "/{id}/messages", self.reply, Access.PUBLIC, name="console_ticket_reply")
        router.add("POST", PREFIX + "/{id}/close", self.close, Access.PUBLIC, name="console_ticket_close")
        router.add("POST", PREFIX + "/{id}/reopen", self.reopen, Access.PUBLIC, name="console_ticket_reopen")

    async def list_tickets(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        text = known_query(req, LIST_PARAMS).get("status")  # an unknown parameter: 400 unknown_parameter
        if text is not None and text not in STATUSES:
            raise ApiError("invalid_parameter", f"status: must be one of {', '.join(STATUSES)}",
                           errors=[{"field": "status", "message": f"must be one of {', '.join(STATUSES)}"}])
        status = TicketStatus(text) if text else None
        owner = None if account.is_operator else account.id
        tickets = await self.ctx.store.read(lambda r: Tickets(r.db).listing(owner, status))
        now = self.ctx.clock()
        return json_answer({"items": [ticket_view(t, now) for t in tickets]})

    async def open(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        f = Fields(json_object(req))
        subject = f.text("subject", max_len=SUBJECT_MAX)
        body = f.text("body", max_len=BODY_MAX)
        severity = _severity(f)
        f.only("subject", "body", "severity")
        f.check()
        assert subject is not None and body is not None and severity is not None
        now = self.ctx.clock()
        due = self.hours.first_response_due(now, severity, account.plan)
        ticket, message = await self.ctx.store.write(
            lambda r: Tickets(r.db).open(account, subject, body, severity, due, now, self.channels, self.mail))
        self.wake()
        return json_answer({**ticket_view(ticket, now), "thread": [message_view(message, account.is_operator)]}, 201)

    async def show(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        ticket_id = req.path_params["id"]
        found = await self.ctx.store.read(lambda r: _with_thread(Tickets(r.db), account, ticket_id))
        if found is None:
            raise _no_ticket(ticket_id)
        ticket, thread = found
        view = ticket_view(ticket, self.ctx.clock())
        return json_answer({**view, "thread": [message_view(m, account.is_operator) for m in thread]})

    async def reply(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        ticket_id = req.path_params["id"]
        f = Fields(json_object(req))
        body = f.text("body", max_len=BODY_MAX)
        f.only("body")
        f.check()
        assert body is not None
        now = self.ctx.clock()

        def write(tickets: Tickets) -> tuple[Ticket, TicketMessage] | None:
            if tickets.visible(account, ticket_id) is None:
                return None
            return tickets.reply(ticket_id, account, body, now, self.channels, self.mail)

        try:
            done = await self.ctx.store.write(lambda r: write(Tickets(r.db)))
        except TicketClosed:
            raise ApiError("conflict", "This ticket is closed; reopen it to add a message.") from None
        if done is None:
            raise _no_ticket(ticket_id)
        self.wake()
        ticket, message = done
        return json_answer({"ticket": ticket_view(ticket, now), "message": message_view(message, account.is_operator)},
                           201)

    async def close(self, req: Request) -> Response:
        return await self._set(req, TicketStatus.CLOSED)

    async def reopen(self, req: Request) -> Response:
        return await self._set(req, TicketStatus.OPEN)

    async def _set(self, req: Request, status: TicketStatus) -> Response:
        account = await self.ctx.account(req)
        ticket_id = req.path_params["id"]
        if req.body.strip():  # no fields; a body, if sent, is an empty JSON object
            f = Fields(json_object(req))
            f.only()
            f.check()
        now = self.ctx.clock()

        def write(tickets: Tickets) -> Ticket | None:
            if tickets.visible(account, ticket_id) is None:
                return None
            return tickets.set_status(ticket_id, status, now)

        ticket = await self.ctx.store.write(lambda r: write(Tickets(r.db)))
        if ticket is None:
            raise _no_ticket(ticket_id)
        return json_answer(ticket_view(ticket, now))


def _with_thread(tickets: Tickets, account: Account, ticket_id: str) -> tuple[Ticket, list[TicketMessage]] | None:
    ticket = tickets.visible(account, ticket_id)
    return None if ticket is None else (ticket, tickets.thread(ticket_id))


def _severity(f: Fields) -> int | None:
    value = f.data.get("severity")
    if value is None:
        f.error("severity", "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in SEVERITIES:
        f.error("severity", "must be 1 (service down), 2 (degraded) or 3 (a question)")
        return None
    return value


def _no_ticket(ticket_id: str) -> ApiError:
    return ApiError("not_found", f"No ticket {ticket_id[:64]}.")


def ticket_view(t: Ticket, now: float) -> dict[str, Any]:
    return {"id": t.id, "userId": t.user_id, "email": t.user_email, "subject": t.subject, "severity": t.severity,
            "status": t.status.value, "plan": t.plan, "createdAt": iso(t.created_at), "updatedAt": iso(t.updated_at),
            "closedAt": _iso(t.closed_at), "messages": t.messages, "firstResponseDue": _iso(t.first_response_due),
            "firstResponseAt": _iso(t.first_response_at), "firstResponseMet": first_response_met(t, now)}


def message_view(m: TicketMessage, operator: bool = False) -> dict[str, Any]:
    """`authorEmail`: an operator's address is shown to operators only (the customer sees `author: operator`)."""
    shown = m.author_email if operator or m.side is Side.CUSTOMER else None
    return {"id": m.id, "author": m.side.value, "authorEmail": shown, "body": m.body, "createdAt": iso(m.created_at)}


def _iso(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)
