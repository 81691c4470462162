"""The OpenAPI description of support tickets (SPEC 20, `/api/console/tickets`): operations and schemas, merged into
server/api/docs/openapi.py's document beside the console's."""

from __future__ import annotations

from server.api.console.tickets import STATUSES
from server.api.docs.console_docs import NULLSTR, NULLTS, TS, _body, _ok, _op, _problem
from server.api.docs.schema_parts import INT, STR, S, obj, ref, text
from server.store.support.tickets import BODY_MAX, SEVERITIES, SUBJECT_MAX

SEVERITY: S = {"type": "integer", "enum": list(SEVERITIES),
               "description": "1: the service is down for you; 2: degraded; 3: a question"}
STATUS: S = {"type": "string", "enum": list(STATUSES)}
TICKET_PROPS: dict[str, S] = {
    "id": STR, "userId": STR, "email": NULLSTR, "subject": STR, "severity": SEVERITY, "status": STATUS,
    "plan": {"type": "string", "description": "the account's plan when the ticket was opened"},
    "createdAt": TS, "updatedAt": TS, "closedAt": NULLTS, "messages": INT,
    "firstResponseDue": {**NULLTS, "description": "enterprise tickets: severity 1 one hour after opening, else "
                                                  "8 business hours (09:00-17:00 Asia/Shanghai, SHFE's trading days)"},
    "firstResponseAt": {**NULLTS, "description": "the first operator message"},
    "firstResponseMet": {"type": ["boolean", "null"],
                         "description": "null: no target, or not answered and not due yet"},
}
MESSAGE_PROPS: dict[str, S] = {
    "id": STR, "author": {"type": "string", "enum": ["customer", "operator"]},
    "authorEmail": {**NULLSTR, "description": "an operator's address is shown to operators only"},
    "body": {**STR, "description": "plain text, as sent (never HTML)"}, "createdAt": TS,
}

TICKET_SCHEMAS: dict[str, S] = {
    "Ticket": obj(list(TICKET_PROPS), **TICKET_PROPS),
    "TicketMessage": obj(list(MESSAGE_PROPS), **MESSAGE_PROPS),
    "TicketThread": obj([*TICKET_PROPS, "thread"], **TICKET_PROPS,
                        thread={"type": "array", "items": ref("TicketMessage")}),
    "Tickets": obj(["items"], items={"type": "array", "items": ref("Ticket")}),
    "TicketReplied": obj(["ticket", "message"], ticket=ref("Ticket"), message=ref("TicketMessage")),
    "TicketOpen": obj(["subject", "body", "severity"], subject=text(SUBJECT_MAX), body=text(BODY_MAX),
                      severity=SEVERITY),
    "TicketReply": obj(["body"], body=text(BODY_MAX)),
}
for _name in ("TicketOpen", "TicketReply"):  # these bodies refuse a field they do not define (400)
    TICKET_SCHEMAS[_name]["additionalProperties"] = False

NO_TICKET = {"404": _problem("no such ticket (another account's ticket is 404 too)")}
BAD = {"400": _problem("a missing, empty, too long or unknown field (errors[])")}
BASE = "/api/console/tickets"

TICKET_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", BASE): _op(
        "Support tickets, newest first: the account's own; an operator's: every account's",
        {**_ok("Tickets"), "400": _problem("an unknown status (invalid_parameter) or parameter (unknown_parameter)")},
        parameters=[{"name": "status", "in": "query", "required": False, "schema": STATUS,
                     "description": "only tickets in this state"}]),
    ("POST", BASE): _op(
        "Open a ticket (the first message is `body`); notifies the operators",
        {**_ok("TicketThread", "201"), **BAD}, requestBody=_body("TicketOpen")),
    ("GET", BASE + "/{id}"): _op("A ticket and its thread", {**_ok("TicketThread"), **NO_TICKET}),
    ("POST", BASE + "/{id}/messages"): _op(
        "Add a message; notifies the other side (the owner's e-mail, or the operators)",
        {**_ok("TicketReplied", "201"), **BAD, **NO_TICKET, "409": _problem("the ticket is closed: reopen it")},
        requestBody=_body("TicketReply")),
    ("POST", BASE + "/{id}/close"): _op("Close a ticket (closed already: the same answer)",
                                         {**_ok("Ticket"), **NO_TICKET}),
    ("POST", BASE + "/{id}/reopen"): _op("Reopen a ticket (open already: the same answer)",
                                          {**_ok("Ticket"), **NO_TICKET}),
}
