"""Support tickets' values and rules (SPEC 20 "Technical support"): pure, no I/O.

A ticket is opened by an account with a subject, a first message and a severity (1 most urgent, 3 least); its
thread is the messages of both sides. A message's side is the ticket owner's (`customer`) or anyone else's
(`operator`: only operators may see another account's ticket). The first-response target (enterprise tickets
only) is fixed when the ticket is opened (server/store/support/hours.py); the first operator-side message meets it
or misses it.

Limits (documented in docs/support.md): subject 1-200 characters, a message body 1-20,000 characters, both plain
text stored as sent (trimmed of surrounding whitespace), without NUL.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

SUBJECT_MAX = 200
BODY_MAX = 20_000
SEVERITIES = (1, 2, 3)
TARGET_PLAN = "enterprise"  # the plan whose tickets carry a first-response target


class TicketStatus(Enum):
    OPEN = "open"
    CLOSED = "closed"


class Side(Enum):
    CUSTOMER = "customer"
    OPERATOR = "operator"


class TicketClosed(Exception):
    """A message to a closed ticket: reopen it first."""


@dataclass(frozen=True, slots=True)
class Ticket:
    id: str
    user_id: str
    user_email: str | None
    subject: str
    severity: int
    status: TicketStatus
    plan: str  # the account's plan when the ticket was opened
    created_at: float
    updated_at: float
    closed_at: float | None
    first_response_due: float | None  # enterprise tickets only
    first_response_at: float | None  # the first operator-side message
    messages: int


@dataclass(frozen=True, slots=True)
class TicketMessage:
    id: str
    ticket_id: str
    author_id: str | None  # None: the CLI (an operator without an account)
    author_email: str | None
    side: Side
    body: str
    created_at: float


def first_response_met(ticket: Ticket, now: float) -> bool | None:
    """True: answered by the target; False: answered late, or unanswered past it; None: no target, or still due."""
    due = ticket.first_response_due
    if due is None:
        return None
    if ticket.first_response_at is not None:
        return ticket.first_response_at <= due
    return False if now > due else None


def ticket_from_row(r: Any) -> Ticket:
    return Ticket(r["id"], r["user_id"], r["user_email"], r["subject"], int(r["severity"]), TicketStatus(r["status"]),
                  r["plan"], r["created_at"], r["updated_at"], r["closed_at"], r["first_response_due"],
                  r["first_response_at"], int(r["messages"]))


def message_from_row(r: Any) -> TicketMessage:
    return TicketMessage(r["id"], r["ticket_id"], r["author_id"], r["author_email"], Side(r["side"]), r["body"],
                         r["created_at"])
