"""`tickets list [--status open|closed] [--json]`, `tickets show ID [--json]`, `tickets reply ID TEXT`,
`tickets close ID`: support tickets from the operator's shell (SPEC 20, docs/support.md).

A reply is an operator's message: it sets the ticket's first response if it is the first, and queues the e-mail to
the ticket's owner through the outbox in the same transaction (the hub's worker delivers it; a hub without
--smtp-url dead-letters it, listed by `outbox list`). Bad input (an unknown ticket, an empty or too long text, a
closed ticket): one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from server.api.console.tickets import STATUSES, message_view, ticket_view
from server.api.core.body import NUL, trimmed
from server.commands.common import command, print_json
from server.commands.console_db import with_console
from server.store.support.repo import Tickets
from server.store.support.tickets import BODY_MAX, TicketClosed, TicketStatus

BAD_INPUT = 2


class BadInput(Exception):
    pass


def register(sub: Any) -> None:
    group = sub.add_parser("tickets", help="support tickets from the service console")
    subs = group.add_subparsers(dest="tickets_cmd", required=True)
    listing = command(subs, "list", "list tickets, newest first", _list)
    listing.add_argument("--status", choices=STATUSES)
    listing.add_argument("--json", action="store_true")
    show = command(subs, "show", "a ticket and its thread", _show)
    show.add_argument("id")
    show.add_argument("--json", action="store_true")
    reply = command(subs, "reply", "answer a ticket as an operator (the owner is e-mailed)", _reply)
    reply.add_argument("id")
    reply.add_argument("text")
    close = command(subs, "close", "close a ticket", _close)
    close.add_argument("id")


def _checked(fn: Any) -> Any:
    def run(ns: argparse.Namespace) -> int:
        try:
            return int(fn(ns))
        except BadInput as exc:
            print(f"market-server: error: {exc}", file=sys.stderr)
            return BAD_INPUT
    return run


@_checked
def _list(ns: argparse.Namespace) -> int:
    status = TicketStatus(ns.status) if ns.status else None
    now = time.time()
    views = [ticket_view(t, now) for t in with_console(ns, lambda r: Tickets(r.db).listing(None, status))]
    if ns.json:
        print_json(views)
        return 0
    for v in views:
        print(f"{v['id']}  {v['status']:<6}  sev {v['severity']}  {v['email']}  {v['createdAt']}  {v['subject']}")
    if not views:
        print("no tickets")
    return 0


@_checked
def _show(ns: argparse.Namespace) -> int:
    def read(r: Any) -> Any:
        tickets = Tickets(r.db)
        ticket = tickets.get(ns.id)
        return None if ticket is None else (ticket, tickets.thread(ns.id))

    found = with_console(ns, read)
    if found is None:
        raise BadInput(f"no ticket {ns.id}")
    ticket, thread = found
    view = {**ticket_view(ticket, time.time()), "thread": [message_view(m, operator=True) for m in thread]}
    if ns.json:
        print_json(view)
        return 0
    print(f"{view['id']}  {view['status']}  severity {view['severity']}  {view['email']}  {view['subject']}")
    if view["firstResponseDue"]:
        print(f"first response due {view['firstResponseDue']}, at {view['firstResponseAt'] or '-'}, "
              f"met {view['firstResponseMet']}")
    for m in view["thread"]:
        print(f"\n--- {m['author']} {m['authorEmail'] or ''} {m['createdAt']}\n{m['body']}")
    return 0


@_checked
def _reply(ns: argparse.Namespace) -> int:
    text = trimmed(ns.text)
    if not text or NUL in text:
        raise BadInput("TEXT: must not be empty" if not text else "TEXT: must not contain NUL")
    if len(ns.text) > BODY_MAX:
        raise BadInput(f"TEXT: must be at most {BODY_MAX} characters")
    try:
        done = with_console(ns, lambda r: Tickets(r.db).reply(ns.id, None, text, time.time(), (), mail=True))
    except TicketClosed:
        raise BadInput(f"ticket {ns.id} is closed; the customer may reopen it") from None
    if done is None:
        raise BadInput(f"no ticket {ns.id}")
    ticket, message = done
    print(f"replied {message.id} on {ticket.id} ({ticket.user_email} is e-mailed)")
    return 0


@_checked
def _close(ns: argparse.Namespace) -> int:
    ticket = with_console(ns, lambda r: Tickets(r.db).set_status(ns.id, TicketStatus.CLOSED, time.time()))
    if ticket is None:
        raise BadInput(f"no ticket {ns.id}")
    print(f"closed {ticket.id}")
    return 0
