"""The tickets repository (server/store/support/repo.py) on a real SQLite data dir: who sees a ticket, the jobs each
message writes (the other side, once per channel, with an idempotency id of the message), the first response set
once, a closed ticket refusing messages."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.store.accounts.console import Account, Role, SqliteDb
from server.store.outbox.queue import JOB_COLUMNS
from server.store.sql.db import open_db
from server.store.support.repo import Tickets, message_jobs
from server.store.support.tickets import Side, TicketClosed, TicketStatus

CUSTOMER = Account("usr_c", "c@acme.example", None, None, "enterprise", Role.CUSTOMER, 6000, 0.0, None)
OTHER = Account("usr_o", "o@else.example", None, None, "free", Role.CUSTOMER, None, 0.0, None)
OPERATOR = Account("usr_op", "op@market.example", None, None, "free", Role.OPERATOR, None, 0.0, None)
CHANNELS = (("email", "desk@market.example"), ("generic", "http://127.0.0.1:9/in"))


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path)
    for a in (CUSTOMER, OTHER, OPERATOR, Account("usr_op2", "desk@market.example", None, None, "free",
                                                  Role.OPERATOR, None, 0.0, None)):
        c.execute("INSERT INTO users (id, email, password_hash, created_at, role) VALUES (?, ?, 'x', 0, ?)",
                  (a.id, a.email, a.role.value))
    yield c
    c.close()


def jobs(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    return [tuple(r) for r in conn.execute(
        "SELECT record_kind, channel, target, idempotency_id FROM outbox_jobs ORDER BY created_at, idempotency_id")]


def test_each_message_tells_the_other_side_once(conn: sqlite3.Connection) -> None:
    tickets = Tickets(SqliteDb(conn))
    ticket, first = tickets.open(CUSTOMER, "stale", "no ticks", 2, 1000.0, 10.0, CHANNELS, mail=True)
    # the configured channels, then the operators not among the --notify-email addresses (desk@ is: not twice)
    assert jobs(conn) == [("ticket", "email", "desk@market.example", f"{first.id}.0"),
                          ("ticket", "generic", "http://127.0.0.1:9/in", f"{first.id}.1"),
                          ("ticket", "email", "op@market.example", f"{first.id}.2")]
    done = tickets.reply(ticket.id, OPERATOR, "on it", 20.0, CHANNELS, mail=True)
    assert done is not None
    answered, reply = done
    assert reply.side is Side.OPERATOR and answered.first_response_at == 20.0
    assert jobs(conn)[3:] == [("ticket_reply", "email", "c@acme.example", f"{reply.id}.0")]
    later = tickets.reply(ticket.id, None, "fixed", 30.0, CHANNELS, mail=True)  # the CLI: an operator too
    assert later is not None and later[0].first_response_at == 20.0  # the first response is kept
    assert len(jobs(conn)) == 5
    with pytest.raises(sqlite3.IntegrityError):  # the same message cannot be queued twice
        SqliteDb(conn).many(f"INSERT INTO outbox_jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 11)})",
                            message_jobs("ticket_reply", answered, reply, [("email", "c@acme.example")]))
    assert [m.body for m in tickets.thread(ticket.id)] == ["no ticks", "on it", "fixed"]


def test_no_mail_without_smtp_and_no_jobs_without_channels(conn: sqlite3.Connection) -> None:
    tickets = Tickets(SqliteDb(conn))
    ticket, _ = tickets.open(CUSTOMER, "s", "b", 3, None, 10.0, (), mail=False)
    tickets.reply(ticket.id, OPERATOR, "a", 11.0, (), mail=False)
    assert jobs(conn) == []


def test_who_sees_a_ticket_and_closed_tickets(conn: sqlite3.Connection) -> None:
    tickets = Tickets(SqliteDb(conn))
    ticket, _ = tickets.open(CUSTOMER, "s", "b", 3, None, 10.0, (), mail=False)
    assert tickets.visible(CUSTOMER, ticket.id) is not None and tickets.visible(OPERATOR, ticket.id) is not None
    assert tickets.visible(OTHER, ticket.id) is None
    assert [t.id for t in tickets.listing(OTHER.id, None)] == []
    assert [t.id for t in tickets.listing(None, TicketStatus.OPEN)] == [ticket.id]
    closed = tickets.set_status(ticket.id, TicketStatus.CLOSED, 12.0)
    assert closed is not None and closed.closed_at == 12.0
    again = tickets.set_status(ticket.id, TicketStatus.CLOSED, 13.0)
    assert again is not None and again.closed_at == 12.0  # closing twice: the same answer
    with pytest.raises(TicketClosed):
        tickets.reply(ticket.id, CUSTOMER, "more", 14.0, (), mail=False)
    assert tickets.reply("tkt_nope", CUSTOMER, "x", 14.0, (), mail=False) is None
    reopened = tickets.set_status(ticket.id, TicketStatus.OPEN, 15.0)
    assert reopened is not None and reopened.closed_at is None and reopened.status is TicketStatus.OPEN
    assert tickets.set_status("tkt_nope", TicketStatus.OPEN, 15.0) is None
