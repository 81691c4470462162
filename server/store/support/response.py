"""The support part of the SLA report (SPEC 20): each enterprise ticket of a month, its first-response target and
whether it was met. The SLA section (`GET /api/console/sla`) reads it:

    await store.read(lambda r: support_response(r.db, "2026-11", account_id, now))

`month` is YYYY-MM in Asia/Shanghai (a ticket belongs to the month it was opened in); `user_id` None: every account's
(an operator's report). Only tickets with a target (opened on the enterprise plan) are listed.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from server.market.timefmt import day_start, iso
from server.store.accounts.console import Db
from server.store.support.repo import TICKET_COLUMNS
from server.store.support.tickets import first_response_met, ticket_from_row


def month_bounds(month: str) -> tuple[float, float]:
    """[start, end) of a YYYY-MM month in Asia/Shanghai, epoch seconds; ValueError for anything else."""
    if len(month) != 7 or month[4] != "-":
        raise ValueError(f"not a YYYY-MM month: {month!r}")
    first = date(int(month[:4]), int(month[5:]), 1)
    after = date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return day_start(first), day_start(after)


def support_response(db: Db, month: str, user_id: str | None, now: float) -> dict[str, Any]:
    """`{month, tickets, met, missed, pending, items: [{id, userId, severity, createdAt, firstResponseDue,
    firstResponseAt, firstResponseMet, responseSeconds}]}`; `firstResponseMet` None: not answered, target not
    passed yet (counted as pending)."""
    start, end = month_bounds(month)
    where = "t.first_response_due IS NOT NULL AND t.created_at >= ? AND t.created_at < ?"
    params: list[Any] = [start, end]
    if user_id is not None:
        where += " AND t.user_id = ?"
        params.append(user_id)
    rows = db.rows(f"SELECT {TICKET_COLUMNS} FROM support_tickets t WHERE {where} ORDER BY t.created_at, t.id", params)
    items = []
    for ticket in map(ticket_from_row, rows):
        met = first_response_met(ticket, now)
        answered = ticket.first_response_at
        items.append({"id": ticket.id, "userId": ticket.user_id, "severity": ticket.severity,
                      "createdAt": iso(ticket.created_at), "firstResponseDue": iso(ticket.first_response_due or 0),
                      "firstResponseAt": None if answered is None else iso(answered), "firstResponseMet": met,
                      "responseSeconds": None if answered is None else round(answered - ticket.created_at, 3)})
    met_n = sum(1 for i in items if i["firstResponseMet"] is True)
    missed = sum(1 for i in items if i["firstResponseMet"] is False)
    return {"month": month, "tickets": len(items), "met": met_n, "missed": missed,
            "pending": len(items) - met_n - missed, "items": items}
