"""Support tickets (SPEC 20, issue 43) over real HTTP with a real SMTP server (aiosmtpd): the thread both sides
write, the operator's view, another account's ticket as 404, the 400s, exactly one e-mail per message to the other
side, the enterprise first-response target, and the CLI's reply in the thread.

The outbox worker is another process: a wait for its e-mails polls with a deadline, and "no other e-mail" is checked
once the outbox holds no job still to send (a barrier, not a sleep).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.conftest import ServerProcess, free_port, run_cli
from tests.contract.test_console import PASSWORD, client, operator, problem, sign_up, until
from tests.contract.test_notify import Receiver

NOTIFY = "desk@market.example"


@dataclass
class Inbox:
    messages: list[tuple[list[str], EmailMessage]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = BytesParser(policy=policy.default).parsebytes(envelope.original_content)
        self.messages.append((list(envelope.rcpt_tos), msg))
        return "250 2.0.0 OK"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for rcpts, m in self.messages if address in rcpts]

    def wait_for(self, address: str, n: int, timeout: float = 15.0) -> list[EmailMessage]:
        """Another process delivers: poll with a deadline."""
        deadline = time.monotonic() + timeout
        while len(self.to(address)) < n:
            assert time.monotonic() < deadline, f"no e-mail to {address}: {self.messages}"
            time.sleep(0.05)
        return self.to(address)


@pytest.fixture(scope="module")
def inbox() -> Iterator[tuple[Inbox, int]]:
    box, port = Inbox(), free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    yield box, port
    controller.stop()


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def srv(inbox: tuple[Inbox, int], hooks: Receiver,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("tickets") / "data", "granian", "--public-rate", "100000",
                           "--trusted-proxies", "127.0.0.1", "--smtp-url", f"smtp://127.0.0.1:{inbox[1]}",
                           "--notify-email", NOTIFY, "--mail-from", "support@market.example",
                           "--webhook", f"generic={hooks.base}/generic/in")
    yield server
    assert server.stop() == 0, server.output()


def settled(srv: ServerProcess) -> bool:
    """No notification job waits to be sent (the barrier before counting e-mails)."""
    out = run_cli(srv.data_dir, "outbox", "list", "--json", "--limit", "1000")
    assert out.returncode == 0, out.stderr
    return all(job["status"] == "delivered" for job in json.loads(out.stdout))


def enterprise(srv: ServerProcess, email: str) -> httpx.Client:
    c = client(srv)
    sign_up(c, email)
    out = run_cli(srv.data_dir, "users", "plan", email, "enterprise", "--rate", "6000")
    assert out.returncode == 0, out.stderr
    return c


def test_a_thread_between_a_customer_and_an_operator(srv: ServerProcess, inbox: tuple[Inbox, int],
                                                     hooks: Receiver) -> None:
    box = inbox[0]
    ops, c = operator(srv, "ops-desk@example.com"), enterprise(srv, "acme@example.com")
    try:
        text = "Brent quotes stopped at 09:31.\n<b>not HTML</b> & 'quotes'"
        resp = c.post("/api/console/tickets", json={"subject": "Stale <script>brent</script>", "body": text,
                                                    "severity": 2})
        assert resp.status_code == 201, resp.text
        ticket = resp.json()
        tid = ticket["id"]
        assert ticket["status"] == "open" and ticket["plan"] == "enterprise" and ticket["firstResponseDue"]
        assert ticket["firstResponseAt"] is None and ticket["subject"] == "Stale <script>brent</script>"
        assert [m["body"] for m in ticket["thread"]] == [text]  # verbatim, a JSON string
        # the operators are told once each: the --notify-email address and the operator's account
        assert until(lambda: box.to(NOTIFY) and box.to("ops-desk@example.com"))
        assert until(lambda: settled(srv))
        for address in (NOTIFY, "ops-desk@example.com"):
            [mail] = box.to(address)
            assert mail["Subject"] == f"[Support ticket 技术支持工单] {tid}"
            assert tid in mail.get_content() and "Brent quotes stopped at 09:31." in mail.get_content()
        assert box.to("acme@example.com") == []
        [hook] = [h for h in hooks.of("generic") if h.json["id"] == tid]  # the messaging webhook, once
        assert hook.json["kind"] == "ticket" and hook.json["record"]["message"] == text
        # the operator sees every ticket and answers on the same route
        listed = ops.get("/api/console/tickets", params={"status": "open"}).json()["items"]
        assert tid in [t["id"] for t in listed]
        answer = ops.post(f"/api/console/tickets/{tid}/messages", json={"body": "Restarted the feed; ticks flow."})
        assert answer.status_code == 201, answer.text
        assert answer.json()["ticket"]["firstResponseMet"] is True
        assert until(lambda: box.to("acme@example.com"))
        assert until(lambda: settled(srv))
        [mail] = box.to("acme@example.com")
        assert mail["Subject"] == f"[Support ticket reply 工单回复] {tid}"
        assert "Restarted the feed" in mail.get_content()
        assert len(box.to(NOTIFY)) == 1 and len(box.to("ops-desk@example.com")) == 1  # not told of their own
        # the customer's view of the thread
        shown = c.get(f"/api/console/tickets/{tid}").json()
        assert [(m["author"], m["body"]) for m in shown["thread"]] == [
            ("customer", text), ("operator", "Restarted the feed; ticks flow.")]
        assert shown["thread"][1]["authorEmail"] is None  # the operator's address is not the customer's to see
        assert shown["firstResponseAt"] and shown["firstResponseMet"] is True
        # the SLA report's support section (SPEC 20): the ticket's first response, met, in the month it was opened
        month = datetime.fromisoformat(ticket["createdAt"]).astimezone(ZoneInfo("Asia/Shanghai")).strftime("%Y-%m")
        for reader in (c, ops):
            report = reader.get("/api/console/sla", params={"month": month})
            assert report.status_code == 200, report.text
            [line] = [t for t in report.json()["supportResponse"] if t["id"] == tid]
            assert line["firstResponseMet"] is True and line["severity"] == 2
        # the customer answers back: the operators are told, once each
        assert c.post(f"/api/console/tickets/{tid}/messages", json={"body": "Thanks, fine now."}).status_code == 201
        assert until(lambda: len(box.to(NOTIFY)) == 2 and len(box.to("ops-desk@example.com")) == 2)
        assert until(lambda: settled(srv))
        assert len(box.to("acme@example.com")) == 1
        assert [h.json["record"]["message"] for h in hooks.of("generic") if h.json["id"] == tid] == [
            text, "Thanks, fine now."]
        # close, a message refused while closed, reopen
        closed = c.post(f"/api/console/tickets/{tid}/close")
        assert closed.status_code == 200 and closed.json()["status"] == "closed" and closed.json()["closedAt"]
        problem(c.post(f"/api/console/tickets/{tid}/messages", json={"body": "again"}), 409, "conflict")
        assert c.get("/api/console/tickets", params={"status": "closed"}).json()["items"][0]["id"] == tid
        reopened = ops.post(f"/api/console/tickets/{tid}/reopen").json()
        assert reopened["status"] == "open" and reopened["closedAt"] is None and reopened["messages"] == 3
    finally:
        ops.close()
        c.close()


def test_another_account_s_ticket_is_404(srv: ServerProcess) -> None:
    with client(srv) as owner, client(srv) as other:
        sign_up(owner, "owner@example.com")
        sign_up(other, "other@example.com")
        tid = owner.post("/api/console/tickets", json={"subject": "s", "body": "b", "severity": 3}).json()["id"]
        assert owner.get(f"/api/console/tickets/{tid}").json()["firstResponseDue"] is None  # free: no target
        problem(other.get(f"/api/console/tickets/{tid}"), 404, "not_found")
        problem(other.post(f"/api/console/tickets/{tid}/messages", json={"body": "x"}), 404, "not_found")
        problem(other.post(f"/api/console/tickets/{tid}/close"), 404, "not_found")
        problem(other.post(f"/api/console/tickets/{tid}/reopen"), 404, "not_found")
        problem(other.get("/api/console/tickets/tkt_NOPE"), 404, "not_found")
        assert tid not in [t["id"] for t in other.get("/api/console/tickets").json()["items"]]
        assert owner.get(f"/api/console/tickets/{tid}").json()["messages"] == 1  # nothing was added
        problem(httpx.get(srv.base + "/api/console/tickets", timeout=5.0), 401, "unauthorized")


@pytest.mark.parametrize(("body", "field"), [
    ({"body": "b", "severity": 2}, "subject"),
    ({"subject": "s", "severity": 2}, "body"),
    ({"subject": "  ", "body": "b", "severity": 2}, "subject"),
    ({"subject": "s", "body": "b"}, "severity"),
    ({"subject": "s", "body": "b", "severity": 0}, "severity"),
    ({"subject": "s", "body": "b", "severity": 4}, "severity"),
    ({"subject": "s", "body": "b", "severity": "2"}, "severity"),
    ({"subject": "s", "body": "b", "severity": True}, "severity"),
    ({"subject": "s" * 201, "body": "b", "severity": 2}, "subject"),
    ({"subject": "s", "body": "b" * 20_001, "severity": 2}, "body"),
    ({"subject": "s", "body": "b\x00", "severity": 2}, "body"),
    ({"subject": "s", "body": "b", "severity": 2, "priority": "high"}, "priority"),
])
def test_bad_tickets_are_400_naming_the_field(srv: ServerProcess, body: dict[str, Any], field: str) -> None:
    with client(srv) as c:
        c.headers["Authorization"] = _token(srv)
        answer = problem(c.post("/api/console/tickets", json=body), 400, "validation_failed")
        assert [e["field"] for e in answer["errors"]] == [field]


def test_bad_messages_and_queries_are_400(srv: ServerProcess) -> None:
    with client(srv) as c:
        c.headers["Authorization"] = _token(srv)
        tid = c.post("/api/console/tickets", json={"subject": "s", "body": "b", "severity": 3}).json()["id"]
        at_limit = c.post(f"/api/console/tickets/{tid}/messages", json={"body": "x" * 20_000})
        assert at_limit.status_code == 201 and len(at_limit.json()["message"]["body"]) == 20_000
        for bad, field in (({"body": "x" * 20_001}, "body"), ({}, "body"), ({"body": "x", "to": "y"}, "to")):
            answer = problem(c.post(f"/api/console/tickets/{tid}/messages", json=bad), 400, "validation_failed")
            assert [e["field"] for e in answer["errors"]] == [field]
        problem(c.post(f"/api/console/tickets/{tid}/messages", content=b"[1]",
                       headers={"content-type": "application/json"}), 400, "invalid_body")
        problem(c.get("/api/console/tickets", params={"status": "pending"}), 400, "invalid_parameter")
        problem(c.get("/api/console/tickets", params={"sort": "x"}), 400, "unknown_parameter")
        problem(c.post(f"/api/console/tickets/{tid}/close", json={"why": "x"}), 400, "validation_failed")


def test_the_cli_lists_shows_replies_and_closes(srv: ServerProcess, inbox: tuple[Inbox, int]) -> None:
    box = inbox[0]
    with client(srv) as c:
        sign_up(c, "cli-customer@example.com")
        opened = c.post("/api/console/tickets", json={"subject": "CLI please", "body": "hello", "severity": 3})
        tid = opened.json()["id"]
        listed = run_cli(srv.data_dir, "tickets", "list", "--status", "open")
        assert listed.returncode == 0 and tid in listed.stdout and "CLI please" in listed.stdout
        replied = run_cli(srv.data_dir, "tickets", "reply", tid, "Answered from the shell.")
        assert replied.returncode == 0, replied.stderr
        thread = c.get(f"/api/console/tickets/{tid}").json()["thread"]
        assert [(m["author"], m["body"]) for m in thread][-1] == ("operator", "Answered from the shell.")
        assert until(lambda: box.to("cli-customer@example.com"))  # the hub's worker delivers the CLI's job
        assert "Answered from the shell." in box.to("cli-customer@example.com")[0].get_content()
        shown = run_cli(srv.data_dir, "tickets", "show", tid, "--json")
        assert json.loads(shown.stdout)["thread"][1]["body"] == "Answered from the shell."
        assert run_cli(srv.data_dir, "tickets", "close", tid).returncode == 0
        assert c.get(f"/api/console/tickets/{tid}").json()["status"] == "closed"
        assert until(lambda: settled(srv))
        assert len(box.to("cli-customer@example.com")) == 1
    for args, words in ((("tickets", "show", "tkt_NOPE"), "no ticket tkt_NOPE"),
                        (("tickets", "reply", "tkt_NOPE", "x"), "no ticket tkt_NOPE"),
                        (("tickets", "reply", tid, "   "), "must not be empty"),
                        (("tickets", "reply", tid, "x"), "is closed"),
                        (("tickets", "close", "tkt_NOPE"), "no ticket"),
                        (("tickets", "list", "--status", "pending"), "invalid choice")):
        out = run_cli(srv.data_dir, *args)
        assert out.returncode == 2 and words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out


_tokens: dict[str, str] = {}


def _token(srv: ServerProcess) -> str:
    """A signed-in account's Authorization header, made once per module (the bad-input cases share it)."""
    if "bad" not in _tokens:
        with client(srv) as c:
            sign_up(c, "bad-input@example.com")
            _tokens["bad"] = c.headers["Authorization"]
    return _tokens["bad"]


assert PASSWORD  # the shared password of test_console's helpers
