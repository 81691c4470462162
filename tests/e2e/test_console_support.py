"""Support tickets in the console (SPEC 20, issue 43) in Chromium, as a new enterprise customer tries them: sign up,
become enterprise, open a ticket (its subject and body shown as text, never HTML), an operator answers from the
operator view in another browser, the customer gets the answer by e-mail (a real SMTP server, aiosmtpd) and in the
console; close and reopen; both languages at 1440 px and 390 px without sideways scrolling or console errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.conftest import ServerProcess, free_port, run_cli
from tests.contract.test_console_tickets import Inbox
from tests.e2e.conftest import needs_chromium
from tests.e2e.test_console_page import DESKTOP, PASSWORD, PHONE, Page

pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium
CUSTOMER, OPERATOR = "buyer@acme.example", "desk@market.example"
SUBJECT = "Brent <img src=x onerror=alert(1)> stale"
BODY = "No ticks since 09:31.\n<script>alert('x')</script> & more"


@pytest.fixture(scope="module")
def inbox() -> Iterator[tuple[Inbox, int]]:
    box, port = Inbox(), free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    yield box, port
    controller.stop()


@pytest.fixture(scope="module")
def srv(inbox: tuple[Inbox, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("console-support") / "data", "granian", "--public-rate", "100000",
                           "--smtp-url", f"smtp://127.0.0.1:{inbox[1]}", "--mail-from", "support@market.example",
                           "--notify-email", "desk-list@market.example")
    yield server
    assert server.stop() == 0, server.output()


def test_a_new_enterprise_customer_gets_the_operator_s_answer_by_mail_and_in_the_console(
        browser: Any, srv: ServerProcess, inbox: tuple[Inbox, int]) -> None:
    box = inbox[0]
    assert run_cli(srv.data_dir, "users", "create", "--email", OPERATOR, "--password", PASSWORD,
                   "--operator").returncode == 0
    me = Page(browser, srv, DESKTOP)
    p = me.page
    me.sign_in(CUSTOMER, sign_up=True)
    assert run_cli(srv.data_dir, "users", "plan", CUSTOMER, "enterprise", "--rate", "6000").returncode == 0
    me.reload_view()
    p.fill("[data-testid=ticket-subject]", SUBJECT)
    p.select_option("[data-testid=ticket-severity]", "2")
    p.fill("[data-testid=ticket-body]", BODY)
    p.click("[data-testid=ticket-submit]")
    p.wait_for_selector("[data-testid=ticket-view]:visible")
    assert p.inner_text("[data-testid=ticket-title]") == SUBJECT  # as text: no element was made of it
    assert p.locator("[data-testid=support] img, [data-testid=support] script").count() == 0
    assert p.inner_text("[data-testid=ticket-thread] li .body") == BODY
    assert "due " in p.inner_text("[data-testid=ticket-meta]")  # the enterprise first-response target
    ticket_id = p.get_attribute("[data-testid=tickets] tbody tr[data-id]", "data-id")
    assert ticket_id and ticket_id in p.inner_text("[data-testid=message]")

    [told] = box.wait_for(OPERATOR, 1)  # the operators are e-mailed the ticket
    assert ticket_id in told["Subject"] and "No ticks since 09:31." in told.get_content()
    ops = Page(browser, srv, DESKTOP)
    ops.sign_in(OPERATOR)
    ops.page.wait_for_selector(f"[data-testid=tickets] tbody tr[data-id='{ticket_id}']")
    assert ops.page.is_hidden("[data-testid=ticket-form]")  # operators answer, they open no tickets here
    assert CUSTOMER in ops.page.inner_text(f"[data-testid=tickets] tbody tr[data-id='{ticket_id}']")
    ops.page.click(f"[data-testid=tickets] tbody tr[data-id='{ticket_id}'] >> [data-act=open-ticket]")
    ops.page.wait_for_selector("[data-testid=ticket-view]:visible")
    ops.page.fill("[data-testid=ticket-reply-body]", "We restarted the Brent feed.\nTicks flow again.")
    ops.page.click("[data-testid=ticket-reply-submit]")
    ops.page.wait_for_selector("[data-testid=ticket-thread] li[data-author=operator]")
    ops.shot("support-operator-1440-en")
    assert ops.errors == []
    ops.context.close()

    [answer] = box.wait_for(CUSTOMER, 1)  # the customer's e-mail: the ticket id and the text
    assert answer["Subject"] == f"[Support ticket reply 工单回复] {ticket_id}"
    assert "We restarted the Brent feed." in answer.get_content()
    p.click("[data-testid=tickets-refresh]")
    p.wait_for_selector("[data-testid=ticket-thread] li[data-author=operator]")
    assert p.inner_text("[data-testid=ticket-thread] li[data-author=operator] .body") == \
        "We restarted the Brent feed.\nTicks flow again."
    assert "answered in time" in p.inner_text("[data-testid=ticket-meta]")
    p.click("[data-testid=ticket-close]")
    p.wait_for_selector("[data-testid=ticket-reopen]:visible")
    assert p.is_hidden("[data-testid=ticket-reply]")
    p.click("[data-testid=ticket-reopen]")
    p.wait_for_selector("[data-testid=ticket-reply]:visible")
    for lang in ("en", "zh"):
        me.lang(lang)
        assert me.no_sideways_scroll(), lang
        me.shot(f"support-1440-{lang}")
    panel = p.inner_text("[data-testid=support]")  # every word of the section in Chinese, none a bare key
    assert p.inner_text("[data-testid=support] h2") == "技术支持"
    assert all(w in panel for w in ("严重级别", "客户", "技术支持", "已按时响应", "关闭工单"))
    assert not [w for w in ("sev2", "st_open", "author_", "target", "Severity", "Customer") if w in panel]
    assert len(box.to(CUSTOMER)) == 1 and me.errors == []
    me.context.close()


def test_the_support_section_on_a_phone(browser: Any, srv: ServerProcess) -> None:
    phone = Page(browser, srv, PHONE)
    phone.sign_in("phone-support@example.com", sign_up=True)
    phone.page.fill("[data-testid=ticket-subject]", "A long subject " * 12)
    phone.page.fill("[data-testid=ticket-body]", "x" * 400)
    phone.page.click("[data-testid=ticket-submit]")
    phone.page.wait_for_selector("[data-testid=ticket-view]:visible")
    for lang in ("en", "zh"):
        phone.lang(lang)
        assert phone.no_sideways_scroll(), lang
        phone.shot(f"support-390-{lang}")
    assert phone.errors == []
    phone.context.close()
