"""Support tickets' repository (SPEC 20) over the console's `Db` (server/store/accounts/console.py): the same SQL on
SQLite and PostgreSQL, called off the loop by the hub (`ConsoleStore`) and directly by the CLI.

Invariants: a message and its notification jobs are written in one transaction, each job with an idempotency id made
from the message id and the channel's place, so a message is notified exactly once per channel (a retried write
cannot add a second job: the id is unique); the ticket's `first_response_at` is set by the first operator-side
message only, in that message's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from server.market.timefmt import iso
from server.store.accounts.console import Account, Db
from server.store.outbox.jobs import JobState
from server.store.outbox.queue import JOB_COLUMNS, new_job_id
from server.store.site.records import ChannelSpec, new_record_id
from server.store.support.tickets import (
    Side,
    Ticket,
    TicketClosed,
    TicketMessage,
    TicketStatus,
    message_from_row,
    ticket_from_row,
)

EMAIL = "email"
MAX_LIST = 500
TICKET_COLUMNS = ("t.id, t.user_id, t.user_email, t.subject, t.severity, t.status, t.plan, t.created_at, "
                  "t.updated_at, t.closed_at, t.first_response_due, t.first_response_at, "
                  "(SELECT COUNT(*) FROM support_messages m WHERE m.ticket_id = t.id) AS messages")
MESSAGE_COLUMNS = "id, ticket_id, author_id, author_email, side, body, created_at"


class Tickets:
    def __init__(self, db: Db) -> None:
        self.db = db

    # --- reading ------------------------------------------------------------------------------------------------
    def get(self, ticket_id: str) -> Ticket | None:
        rows = self.db.rows(f"SELECT {TICKET_COLUMNS} FROM support_tickets t WHERE t.id = ?", (ticket_id,))
        return ticket_from_row(rows[0]) if rows else None

    def visible(self, account: Account, ticket_id: str) -> Ticket | None:
        """The ticket if this account may see it (its own; an operator: any), else None (a 404, never a 403)."""
        ticket = self.get(ticket_id)
        if ticket is None or (ticket.user_id != account.id and not account.is_operator):
            return None
        return ticket

    def listing(self, user_id: str | None, status: TicketStatus | None, limit: int = MAX_LIST) -> list[Ticket]:
        """Newest first: one account's tickets, or (user_id None) everyone's."""
        where: list[str] = []
        params: list[Any] = []
        if user_id is not None:
            where.append("t.user_id = ?")
            params.append(user_id)
        if status is not None:
            where.append("t.status = ?")
            params.append(status.value)
        clause = ("WHERE " + " AND ".join(where)) if where else ""
        rows = self.db.rows(f"SELECT {TICKET_COLUMNS} FROM support_tickets t {clause} "
                            "ORDER BY t.created_at DESC, t.id DESC LIMIT ?", [*params, limit])
        return [ticket_from_row(r) for r in rows]

    def thread(self, ticket_id: str) -> list[TicketMessage]:
        rows = self.db.rows(f"SELECT {MESSAGE_COLUMNS} FROM support_messages WHERE ticket_id = ? "
                            "ORDER BY created_at, id", (ticket_id,))
        return [message_from_row(r) for r in rows]

    def operator_emails(self) -> list[str]:
        rows = self.db.rows("SELECT email FROM users WHERE role = 'operator' AND disabled_at IS NULL ORDER BY email")
        return [r["email"] for r in rows]

    # --- writing ------------------------------------------------------------------------------------------------
    def open(self, account: Account, subject: str, body: str, severity: int, due: float | None, now: float,
             channels: Sequence[ChannelSpec], mail: bool) -> tuple[Ticket, TicketMessage]:
        """A new ticket, its first message and that message's notification jobs, in one transaction."""
        ticket_id = new_record_id("tkt", now)
        with self.db.transaction():
            self.db.run("INSERT INTO support_tickets (id, user_id, user_email, subject, severity, status, plan, "
                        "created_at, updated_at, closed_at, first_response_due, first_response_at) "
                        "VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?, NULL, ?, NULL)",
                        (ticket_id, account.id, account.email, subject, severity, account.plan, now, now, due))
            ticket = self.get(ticket_id)
            assert ticket is not None
            message = self._add(ticket, account.id, account.email, Side.CUSTOMER, body, now, channels, mail,
                                first=True)
        found = self.get(ticket_id)
        assert found is not None
        return found, message

    def reply(self, ticket_id: str, author: Account | None, body: str, now: float,
              channels: Sequence[ChannelSpec], mail: bool) -> tuple[Ticket, TicketMessage] | None:
        """A message on the thread (author None: the CLI, an operator); None if there is no such ticket;
        TicketClosed if it is closed."""
        with self.db.transaction():
            ticket = self.get(ticket_id)
            if ticket is None:
                return None
            if ticket.status is TicketStatus.CLOSED:
                raise TicketClosed(ticket_id)
            side = Side.CUSTOMER if author is not None and author.id == ticket.user_id else Side.OPERATOR
            message = self._add(ticket, author.id if author else None, author.email if author else None, side,
                                body, now, channels, mail, first=False)
        found = self.get(ticket_id)
        assert found is not None
        return found, message

    def set_status(self, ticket_id: str, status: TicketStatus, now: float) -> Ticket | None:
        """Close or reopen (the same answer again if it is so already); None if there is no such ticket."""
        closed_at = now if status is TicketStatus.CLOSED else None
        self.db.run("UPDATE support_tickets SET status = ?, closed_at = ?, updated_at = ? WHERE id = ? AND "
                    "status <> ?", (status.value, closed_at, now, ticket_id, status.value))
        return self.get(ticket_id)

    def _add(self, ticket: Ticket, author_id: str | None, author_email: str | None, side: Side, body: str,
             now: float, channels: Sequence[ChannelSpec], mail: bool, first: bool) -> TicketMessage:
        message = TicketMessage(new_record_id("msg", now), ticket.id, author_id, author_email, side, body, now)
        self.db.run(f"INSERT INTO support_messages ({MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (message.id, ticket.id, author_id, author_email, side.value, body, now))
        if side is Side.OPERATOR:
            self.db.run("UPDATE support_tickets SET updated_at = ?, first_response_at = COALESCE(first_response_at, "
                        "?) WHERE id = ?", (now, now, ticket.id))
        else:
            self.db.run("UPDATE support_tickets SET updated_at = ? WHERE id = ?", (now, ticket.id))
        targets = self._recipients(ticket, side, author_email, channels, mail)
        if targets:
            kind = "ticket" if first else "ticket_reply"
            self.db.many(f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 11)})",
                         message_jobs(kind, ticket, message, targets))
        return message

    def _recipients(self, ticket: Ticket, side: Side, author_email: str | None, channels: Sequence[ChannelSpec],
                    mail: bool) -> list[ChannelSpec]:
        """The other side: the owner's e-mail for an operator's message; for the owner's, the configured channels
        (--notify-email, the webhooks) and every operator account's e-mail not among them."""
        if side is Side.OPERATOR:
            return [(EMAIL, ticket.user_email)] if mail and ticket.user_email else []
        out = list(channels)
        if mail:
            told = {a.strip() for kind, target in channels if kind == EMAIL for a in target.split(",")}
            operators = [e for e in self.operator_emails() if e not in told and e != author_email]
            if operators:
                out.append((EMAIL, ",".join(operators)))
        return out


def message_payload(ticket: Ticket, message: TicketMessage) -> dict[str, Any]:
    """What the other side is told: the ticket (the job's record id) and the message's text."""
    return {"id": ticket.id, "messageId": message.id, "subject": ticket.subject, "severity": ticket.severity,
            "status": ticket.status.value, "author": message.side.value, "userEmail": ticket.user_email,
            "createdAt": iso(message.created_at), "message": message.body}


def message_jobs(kind: str, ticket: Ticket, message: TicketMessage,
                 targets: Sequence[ChannelSpec]) -> list[tuple[Any, ...]]:
    """One pending job per target, as the values of JOB_COLUMNS; the idempotency id is the message's and the
    target's place, so the same message can never be queued twice."""
    body = orjson.dumps(message_payload(ticket, message)).decode()
    now = message.created_at
    return [(new_job_id(), kind, ticket.id, ch_kind, target, body, JobState.PENDING.value, now,
             f"{message.id}.{n}", now, now) for n, (ch_kind, target) in enumerate(targets)]
