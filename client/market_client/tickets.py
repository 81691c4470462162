"""Support tickets (SPEC 20): the account's own, or (operators) everyone's; a thread both sides write.

    with MarketClient(url) as api:
        api.login("me@example.com", "...")
        ticket = api.console.open_ticket("Brent is stale", "No ticks since 09:31.", severity=2)
        api.console.reply_ticket(ticket.id, "Still nothing at 09:45.")
        api.console.ticket(ticket.id).thread                # TicketMessage list, oldest first
"""

from __future__ import annotations

from typing import Any, TypeVar

from market_client._calls import Call, _body, _params, _seg
from market_client.models import Model

T = TypeVar("T")
BASE = "/api/console/tickets"


class Ticket(Model):
    id: str
    user_id: str
    email: str | None
    subject: str
    severity: int  # 1 service down, 2 degraded, 3 a question
    status: str  # open | closed
    plan: str
    created_at: str
    updated_at: str
    closed_at: str | None
    messages: int
    first_response_due: str | None  # enterprise tickets: the first-response target
    first_response_at: str | None
    first_response_met: bool | None


class TicketMessage(Model):
    id: str
    author: str  # customer | operator
    author_email: str | None
    body: str
    created_at: str


class TicketThread(Ticket):
    thread: list[TicketMessage]


class Tickets(Model):
    items: list[Ticket]


class TicketReplied(Model):
    ticket: Ticket
    message: TicketMessage


def _call(method: str, path: str, result: type[T], params: dict[str, str] | None = None,
          body: dict[str, Any] | None = None) -> Call[T]:
    return Call(method, BASE + path, result, params or {}, body, auth="bearer")


def list_tickets(status: str | None = None) -> Call[Tickets]:
    return _call("GET", "", Tickets, _params(status=status))


def open_ticket(subject: str, body: str, severity: int) -> Call[TicketThread]:
    return _call("POST", "", TicketThread, body=_body(subject=subject, body=body, severity=severity))


def ticket(ticket_id: str) -> Call[TicketThread]:
    return _call("GET", f"/{_seg(ticket_id)}", TicketThread)


def reply_ticket(ticket_id: str, body: str) -> Call[TicketReplied]:
    return _call("POST", f"/{_seg(ticket_id)}/messages", TicketReplied, body={"body": body})


def close_ticket(ticket_id: str) -> Call[Ticket]:
    return _call("POST", f"/{_seg(ticket_id)}/close", Ticket)


def reopen_ticket(ticket_id: str) -> Call[Ticket]:
    return _call("POST", f"/{_seg(ticket_id)}/reopen", Ticket)
