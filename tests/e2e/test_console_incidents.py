"""SPEC 20's incidents on the console page (/console) in Chromium: an operator opens an incident, posts an update,
resolves it and schedules maintenance, each visible on /api/v1/status; a customer sees no operator panel and turns
incident e-mails on. English and Chinese at 390 px, nothing scrolling sideways, no console error."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, run_cli
from tests.e2e.conftest import needs_chromium
from tests.e2e.test_console_page import PASSWORD, PHONE, Page

pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("console-incidents") / "data", "granian", "--public-rate",
                           "100000")
    yield server
    assert server.stop() == 0, server.output()


def _until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + 10
    while not (value := check()):
        assert time.monotonic() < deadline, f"not seen: {what}"
        time.sleep(0.05)
    return value


def _status(srv: ServerProcess) -> dict[str, Any]:
    return httpx.get(srv.base + "/api/v1/status").json()  # type: ignore[no-any-return]


def test_an_operator_runs_an_incident_from_the_console(browser: Any, srv: ServerProcess) -> None:
    out = run_cli(srv.data_dir, "users", "create", "--email", "ops@example.com", "--password", PASSWORD, "--operator")
    assert out.returncode == 0, out.stderr
    ui = Page(browser, srv, PHONE)
    p = ui.page
    try:
        ui.sign_in("ops@example.com")
        p.wait_for_selector("[data-testid=incidents-admin]:visible")
        p.fill("[data-testid=incident-title]", "Delayed quotes")
        p.select_option("[data-testid=incident-impact]", "major")
        p.fill("[data-testid=incident-components]", "feed:ice-eu, stream")
        p.click("[data-testid=incident-submit]")
        card = p.wait_for_selector("[data-testid=incident-admin-list] .incident-admin")
        inc_id = card.get_attribute("data-id")
        shown = _until(lambda: [i for i in _status(srv)["incidents"] if i["id"] == inc_id], "the opened incident")
        assert shown[0]["components"] == ["feed:ice-eu", "stream"] and shown[0]["impact"] == "major"
        p.select_option(f"[data-id='{inc_id}'] [data-testid=update-status]", "monitoring")
        p.fill(f"[data-id='{inc_id}'] [data-testid=update-message]", "A fix is out.")
        p.click(f"[data-id='{inc_id}'] [data-act=update]")
        p.wait_for_selector(f".incident-admin[data-id='{inc_id}'][data-status=monitoring]")
        assert ui.no_sideways_scroll()
        ui.lang("zh")
        assert "观察中" in p.inner_text(f".incident-admin[data-id='{inc_id}']")
        ui.shot("incidents-zh-390")
        ui.lang("en")
        p.click(f"[data-id='{inc_id}'] [data-act=resolve]")
        p.wait_for_selector(f".incident-done[data-id='{inc_id}']")
        listed = httpx.get(srv.base + "/api/v1/status/incidents").json()["incidents"]
        assert [u["status"] for u in next(i for i in listed if i["id"] == inc_id)["updates"]] == [
            "resolved", "monitoring", "investigating"]
        p.fill("[data-testid=maintenance-title]", "Database upgrade")
        p.fill("[data-testid=maintenance-from]", "2030-01-01T02:00")
        p.fill("[data-testid=maintenance-to]", "2030-01-01T01:00")  # before the start: refused, named
        p.click("[data-testid=maintenance-submit]")
        p.wait_for_selector("[data-testid=error]:visible")
        assert "the end must be after the start" in p.inner_text("[data-testid=error]")
        p.fill("[data-testid=maintenance-to]", "2030-01-01T04:00")
        p.click("[data-testid=maintenance-submit]")
        item = p.wait_for_selector("[data-testid=maintenance-admin-list] li[data-status=scheduled]")
        assert "2030-01-01 02:00" in item.inner_text()
        ui.shot("incidents-en-390")
        assert ui.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"], \
            ui.errors  # the refused window only
    finally:
        ui.context.close()


def test_a_customer_sees_no_operator_panel_and_opts_in_to_incident_mail(browser: Any, srv: ServerProcess) -> None:
    ui = Page(browser, srv, PHONE)
    p = ui.page
    try:
        ui.sign_in("someone@example.com", sign_up=True)
        assert p.locator("[data-testid=incidents-admin]").is_hidden()
        toggle = p.locator("[data-testid=incident-mail-toggle]")
        assert not toggle.is_checked()
        toggle.check()
        p.wait_for_selector("[data-testid=message]:visible")
        with httpx.Client(base_url=srv.base) as c:
            token = c.post("/api/auth/login", json={"email": "someone@example.com", "password": PASSWORD}).json()
            mail = c.get("/api/console/notifications", headers={"Authorization": f"Bearer {token['token']}"}).json()
        assert mail == {"incidents": True, "default": False, "chosen": True}
        assert ui.errors == [], ui.errors
    finally:
        ui.context.close()
