"""The status page (/status, SPEC 20) in Chromium with incidents and maintenance (issue 42 item 5): an open incident
with its updates, a resolved one under past incidents, a maintenance window in progress, in English and Chinese at
390 px, with nothing scrolling sideways, an update body shown as text (never markup) and no console error."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, run_cli
from tests.e2e.conftest import ARTIFACTS, needs_chromium

pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium
PHONE = {"width": 390, "height": 844}


def _cli(srv: ServerProcess, *args: str) -> str:
    out = run_cli(srv.data_dir, *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("status-page") / "data", "granian")
    yield server
    assert server.stop() == 0, server.output()


def test_incidents_and_maintenance_in_both_languages(browser: Any, srv: ServerProcess) -> None:
    opened = _cli(srv, "incidents", "open", "--title", "Delayed quotes on ICE Futures Europe", "--impact", "major",
                  "--component", "feed:ice-eu").split()[1]
    _cli(srv, "incidents", "update", opened, "--status", "identified", "--message", "<b>A gateway</b> is down.")
    past = _cli(srv, "incidents", "open", "--title", "Slow stream", "--impact", "minor").split()[1]
    _cli(srv, "incidents", "resolve", past)
    start = datetime.now().astimezone().replace(microsecond=0)
    _cli(srv, "maintenance", "add", "--title", "Database upgrade", "--from", start.isoformat(), "--to",
         start.replace(year=start.year + 1).isoformat())
    deadline = time.monotonic() + 10
    while True:  # the hub's board reads every 2 s
        body = httpx.get(srv.base + "/api/v1/status").json()
        if body["incidents"] and body["scheduledMaintenances"]:
            break
        assert time.monotonic() < deadline, "the board never read the incidents"
        time.sleep(0.05)
    context = browser.new_context(viewport=PHONE, base_url=srv.base, locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(15000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    try:
        page.goto("/status")
        page.wait_for_selector(f"[data-testid=incidents] article[data-id='{opened}']")
        card = page.inner_text(f"[data-testid=incidents] article[data-id='{opened}']")
        assert "Delayed quotes on ICE Futures Europe" in card and "Identified" in card and "Major" in card
        assert "<b>A gateway</b> is down." in card  # the body as text, not markup
        assert "Affects: Feed: ICE Futures Europe" in card
        assert page.locator(f"[data-testid=past-incidents] article[data-id='{past}']").count() == 1
        assert "In progress" in page.inner_text("[data-testid=maintenance]")
        _no_sideways(page)
        page.screenshot(path=str(ARTIFACTS / "status-incidents-en-390.png"), full_page=True)
        page.click("[data-testid=lang-toggle]")
        page.wait_for_selector("html[lang=zh-CN]")
        card = page.inner_text(f"[data-testid=incidents] article[data-id='{opened}']")
        assert "已定位" in card and "严重" in card and "进行中" in page.inner_text("[data-testid=maintenance]")
        _no_sideways(page)
        page.screenshot(path=str(ARTIFACTS / "status-incidents-zh-390.png"), full_page=True)
        assert errors == []
    finally:
        context.close()


def _no_sideways(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways: {width}px"
