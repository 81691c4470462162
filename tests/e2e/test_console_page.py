"""The service console page (SPEC 17) in Chromium: sign up, a key shown once (never in storage or the URL), rename,
rotate, revoke, a plan request an operator approves on the same page, the activity list; English and Chinese at
1440 px and 390 px with screenshots, nothing scrolling sideways and no console error."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ServerProcess, run_cli
from tests.e2e.conftest import ARTIFACTS, needs_chromium

pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("console-page") / "data", "granian", "--public-rate", "100000")
    yield server
    assert server.stop() == 0, server.output()


class Page:
    def __init__(self, browser: Any, srv: ServerProcess, viewport: dict[str, int]) -> None:
        self.context = browser.new_context(viewport=viewport, base_url=srv.base, locale="en-GB")
        self.page = self.context.new_page()
        self.page.set_default_timeout(15000)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.goto("/console")
        self.page.wait_for_selector("body[data-ready]")

    def sign_in(self, email: str, sign_up: bool = False) -> None:
        p = self.page
        if sign_up:
            p.click("[data-testid=auth-switch]")
        p.fill("[data-testid=auth-email]", email)
        p.fill("[data-testid=auth-password]", PASSWORD)
        p.click("[data-testid=auth-submit]")
        p.wait_for_selector("[data-testid=account]:visible")

    def reload_view(self) -> None:
        """Reload the page: the session survives (this tab's sessionStorage) and the view is read again."""
        self.page.reload()
        self.page.wait_for_selector("body[data-ready]")
        self.page.wait_for_selector("[data-testid=account]:visible")

    def confirm(self, act: str, answer: str | None = None) -> str:
        """Click a key's action and accept the in-page dialog (typing `answer`); the dialog's question."""
        self.page.click(f"[data-testid=keys] tbody tr:not(.revoked) >> [data-act={act}]")
        self.page.wait_for_selector("[data-testid=dialog][open]")
        question = self.page.inner_text("[data-testid=dialog-text]")
        if answer is not None:
            self.page.fill("[data-testid=dialog-input]", answer)
        self.page.click("[data-testid=dialog-ok]")
        return question

    def lang(self, lang: str) -> None:
        if self.page.evaluate("document.documentElement.lang") != ("zh-CN" if lang == "zh" else "en"):
            self.page.click("[data-testid=lang-toggle]")

    def no_sideways_scroll(self) -> bool:
        width = "document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1"
        return bool(self.page.evaluate(width))

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)


def _stored(page: Any) -> str:
    return str(page.evaluate("JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), "
                             "location.href, document.cookie])"))


def test_the_whole_flow_at_1440(browser: Any, srv: ServerProcess) -> None:
    me = Page(browser, srv, DESKTOP)
    p = me.page
    me.sign_in("page@example.com", sign_up=True)
    assert p.inner_text("[data-testid=account-plan]") == "free"
    p.fill("[data-testid=key-label]", "desk")
    p.click("#key-create button[type=submit]")
    p.wait_for_selector("[data-testid=secret]:visible")
    secret = p.input_value("[data-testid=secret-value]")
    assert secret.startswith("mk_") and secret not in _stored(p)
    p.click("[data-testid=secret-done]")
    assert p.is_hidden("[data-testid=secret]") and p.input_value("[data-testid=secret-value]") == ""
    p.wait_for_selector("[data-testid=keys] tbody tr[data-id]")
    assert p.locator("[data-testid=keys] tbody tr").count() == 1
    prefix = p.inner_text("[data-testid=keys] tbody tr td.mono")
    key_id = p.get_attribute("[data-testid=keys] tbody tr", "data-id")
    question = me.confirm("rename", "main desk")
    assert f"desk ({prefix}" in question and key_id not in question  # by label and prefix, never the id
    p.wait_for_selector("[data-testid=keys] tbody tr td:text('main desk')")
    assert "Renamed: main desk" in p.inner_text("[data-testid=message]")
    p.select_option("[data-testid=plan-choice]", "professional")
    p.fill("[data-testid=plan-message]", "we trade methanol")
    p.click("[data-testid=plan-submit]")
    p.wait_for_selector("[data-testid=plan-status][data-subscription=pending]")
    assert "professional plan sent" in p.inner_text("[data-testid=message]")

    assert run_cli(srv.data_dir, "users", "create", "--email", "ops-page@example.com", "--password", PASSWORD,
                   "--operator").returncode == 0
    ops = Page(browser, srv, DESKTOP)
    ops.sign_in("ops-page@example.com")
    ops.page.wait_for_selector("[data-testid=requests] tbody tr[data-id]")
    assert ops.page.is_hidden("[data-testid=plan-form]")  # no customer upgrade form for an operator
    assert ops.page.is_hidden("[data-testid=account-plan]") and ops.page.is_visible("[data-testid=account-role]")
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\+8", ops.page.inner_text("[data-testid=requests] tbody tr"))
    ops.shot("operator-1440-en")
    calls: list[str] = []  # the console's budget is 30 requests a minute: a decision must not reload the whole view
    ops.page.on("request", lambda r: calls.append(r.url) if "/api/console/" in r.url else None)
    ops.page.click("[data-testid=requests] tbody tr[data-id] >> [data-act=approve]")
    ops.page.wait_for_selector("[data-testid=requests] tbody tr:not([data-id])")
    assert "page@example.com is on the professional plan" in ops.page.inner_text("[data-testid=message]")
    assert len(calls) == 4, calls  # the decision, then me, events and the requests: not the page's ten
    decided = ops.page.inner_text("[data-testid=decisions] tbody tr[data-id]")  # the operator's decision history
    assert "page@example.com" in decided and "approved" in decided
    assert ops.errors == []
    ops.context.close()

    me.reload_view()  # still signed in after a reload
    assert p.inner_text("[data-testid=account-plan]") == "professional"
    me.confirm("rotate")
    p.wait_for_selector("[data-testid=secret]:visible")
    assert p.input_value("[data-testid=secret-value]").startswith("mk_")
    p.click("[data-testid=secret-done]")
    me.confirm("revoke")
    p.wait_for_selector("[data-testid=keys] tbody tr:not(.revoked)", state="detached")
    assert p.inner_text("[data-testid=message]").startswith("Revoked main desk (")
    kinds = p.eval_on_selector_all("[data-testid=events] li", "ls => ls.map(l => l.dataset.kind)")
    assert kinds == ["revoked", "rotated", "plan_changed", "plan_requested", "relabelled", "created"]
    for lang in ("en", "zh"):
        me.lang(lang)
        assert me.no_sideways_scroll()
        me.shot(f"1440-{lang}")
    assert "免费" not in p.inner_text("[data-testid=account-plan]")  # professional: 专业
    assert secret not in _stored(p) and me.errors == []
    p.click("[data-testid=sign-out]")  # a sign-out ends the tab's session: a reload shows the sign-in form
    p.reload()
    p.wait_for_selector("body[data-ready]")
    assert p.is_visible("[data-testid=auth]") and p.is_hidden("[data-testid=account]")
    me.context.close()


def test_phone_layout_in_both_languages(browser: Any, srv: ServerProcess) -> None:
    phone = Page(browser, srv, PHONE)
    phone.shot("390-signin-en")
    phone.sign_in("phone@example.com", sign_up=True)
    phone.page.fill("[data-testid=key-label]", "phone")
    phone.page.click("#key-create button[type=submit]")
    phone.page.wait_for_selector("[data-testid=secret]:visible")
    phone.page.click("[data-testid=usage-refresh]")  # usage refreshes on demand, with a message saying so
    phone.page.wait_for_selector("[data-testid=message][data-said=usageRefreshed]")
    assert re.fullmatch(r"as of \d\d:\d\d", phone.page.inner_text("[data-testid=usage-at]"))
    for lang in ("en", "zh"):
        phone.lang(lang)
        assert phone.no_sideways_scroll(), lang
        # every key action on screen, its label on one line (Chinese broke one character per line)
        for box in phone.page.eval_on_selector_all("[data-testid=keys] [data-act]", """bs => bs.map(b => {
            const r = b.getBoundingClientRect();
            return [r.left, r.right, r.height, parseFloat(getComputedStyle(b).lineHeight) || 20]; })"""):
            left, right, height, line = box
            assert left >= 0 and right <= PHONE["width"] and height < 2.2 * line + 16, (lang, box)
        phone.shot(f"390-{lang}")
    assert phone.page.inner_text("h1") == "服务控制台"
    assert phone.page.inner_text("[data-testid=lang-toggle]") == "English"  # names the other language
    assert phone.errors == []
    phone.context.close()


def test_wrong_password_is_named_in_the_banner(browser: Any, srv: ServerProcess) -> None:
    page = Page(browser, srv, DESKTOP)
    page.page.fill("[data-testid=auth-email]", "nobody@example.com")
    page.page.fill("[data-testid=auth-password]", "wrong password")
    page.page.click("[data-testid=auth-submit]")
    page.page.wait_for_selector("[data-testid=error][data-status='401']")
    assert page.page.inner_text("[data-testid=error]") == "Wrong e-mail or password."
    page.lang("zh")  # the page's own words in its language (the API's detail stays English)
    assert page.page.inner_text("[data-testid=error]") == "邮箱或密码错误。"
    assert page.page.inner_text("[data-testid=lang-toggle]") == "English"
    page.context.close()


def test_a_saved_session_the_server_refuses_asks_to_sign_in_again(browser: Any, srv: ServerProcess) -> None:
    page = Page(browser, srv, PHONE)
    page.page.evaluate("sessionStorage.setItem('market.console', "
                       "JSON.stringify({token: 'not-a-token', expires: Date.now() + 60000}))")
    page.page.reload()
    page.page.wait_for_selector("[data-testid=error][data-status='401']")
    assert page.page.inner_text("[data-testid=error]") == "Your session has expired: sign in again."
    assert page.page.is_visible("[data-testid=auth]") and page.page.is_hidden("[data-testid=account]")
    assert page.page.evaluate("sessionStorage.getItem('market.console')") is None
    page.context.close()


def test_an_enterprise_account_sees_its_sla_and_downloads_it_as_csv(browser: Any, srv: ServerProcess) -> None:
    """SPEC 20: the SLA panel (enterprise and operators only): components, a bar per day, the CSV files."""
    email = "sla-page@example.com"
    assert run_cli(srv.data_dir, "users", "create", "--email", email, "--password", PASSWORD).returncode == 0
    assert run_cli(srv.data_dir, "users", "plan", email, "enterprise", "--rate", "1000").returncode == 0
    for viewport, lang in ((DESKTOP, "en"), (PHONE, "zh")):
        me = Page(browser, srv, viewport)
        p = me.page
        me.sign_in(email)
        p.wait_for_selector("[data-testid=sla-components] tbody tr[data-id=rest]")
        ids = p.eval_on_selector_all("[data-testid=sla-components] tbody tr", "rs => rs.map(r => r.dataset.id)")
        assert ids[:3] == ["rest", "stream", "storage"] and all(i.startswith("feed:") for i in ids[3:])
        assert p.locator("[data-testid=sla-chart] .bar").count() >= 28  # a bar per day of the month
        me.lang(lang)
        assert me.no_sideways_scroll()
        me.shot(f"sla-{viewport['width']}-{lang}")
        with p.expect_download() as got:
            p.click("[data-testid=sla-csv-days]")
        lines = open(got.value.path(), encoding="utf-8").read().splitlines()  # noqa: SIM115
        assert lines[0].startswith("date,minutes,rest,stream,storage,feed:") and len(lines) >= 29
        with p.expect_download() as got:
            p.click("[data-testid=sla-csv-ranges]")
        assert open(got.value.path(), encoding="utf-8").readline().strip() == "component,from,to,minutes"  # noqa: SIM115
        assert me.errors == []
        me.context.close()
    plain = Page(browser, srv, DESKTOP)  # a free account: no SLA panel, and no request for it
    plain.sign_in("sla-free@example.com", sign_up=True)
    assert plain.page.is_hidden("[data-testid=sla]") and plain.errors == []
    plain.context.close()
