"""The status page (/status, SPEC 20) in Chromium with incidents and maintenance (issue 42 item 5): an open incident
with its updates, a resolved one under past incidents, a maintenance window in progress, in English and Chinese at
390 px, with nothing scrolling sideways, an update body shown as text (never markup) and no console error. And the
90 days of daily uptime (issue 42 item 1): a bar per day per component, coloured by the day's availability, from
availability rows written before the hub starts on its own clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from server.core.availability import MinuteRecord
from server.market.timefmt import iso
from server.store.accounts.console import SqliteDb
from server.store.availability.minutes import MinutesRepo
from server.store.sql.storage import SqliteStorage
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


def _minute(shanghai: str) -> int:
    return int(datetime.fromisoformat(shanghai + "+08:00").timestamp() // 60)


# minutes without a row (no hub: down) per Shanghai day, and the bar each day gets (rest's availability)
GAPS = {"2026-03-09": 1, "2026-03-10": 10, "2026-03-11": 100}
BARS = {"2026-03-07": "none", "2026-03-08": "good", "2026-03-09": "good", "2026-03-10": "fair",
        "2026-03-11": "poor"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A hub started at 10:00 on 12 March (Shanghai, its own clock) on a data dir whose availability rows begin on
    8 March at midnight, with GAPS minutes missing from 10:00 on the days listed."""
    data_dir = tmp_path_factory.mktemp("status-uptime") / "data"
    gaps = {m for day, n in GAPS.items() for m in range(_minute(f"{day}T10:00"), _minute(f"{day}T10:00") + n)}
    rows = [MinuteRecord("earlier:1", m) for m in range(_minute("2026-03-08T00:00"), _minute("2026-03-12T10:00"))
            if m not in gaps]
    storage = SqliteStorage(data_dir)
    try:
        storage.write_blocking(lambda c: MinutesRepo(SqliteDb(c)).add(rows))  # playwright's loop runs here
    finally:
        storage.close()
    start = datetime.fromisoformat("2026-03-12T10:00:00+08:00").timestamp()
    server = ServerProcess(data_dir, "granian", "--clock-start", iso(start))
    yield server
    assert server.stop() == 0, server.output()


def test_ninety_days_of_uptime_bars_in_both_languages(browser: Any, recorded: ServerProcess) -> None:
    deadline = time.monotonic() + 20
    while httpx.get(recorded.base + "/api/v1/status/uptime").json()["asOf"] is None:  # computed at the hub's start
        assert time.monotonic() < deadline, "the daily uptime was never computed"
        time.sleep(0.05)
    context = browser.new_context(viewport=PHONE, base_url=recorded.base, locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(15000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    try:
        page.goto("/status")
        page.wait_for_selector("[data-testid=uptime] .uptime-row[data-id=rest] .bar")
        rest = "[data-testid=uptime] .uptime-row[data-id=rest]"
        assert page.locator(f"{rest} .bar").count() == 90
        assert page.locator("[data-testid=uptime] .uptime-row").count() >= 4  # rest, stream, storage, a feed each
        assert page.get_attribute(f"{rest} .bar:last-child", "data-date") == "2026-03-12"
        for day, level in BARS.items():
            assert page.get_attribute(f"{rest} .bar[data-date='{day}']", "class") == f"bar {level}", day
        assert page.get_attribute(f"{rest} .bar[data-date='2026-03-10']", "title") == (
            "2026-03-10 · 99.306% up · 10 min down")
        assert page.get_attribute(f"{rest} .bar[data-date='2026-03-07']", "title") == "2026-03-07 · no data"
        colours = page.eval_on_selector_all(f"{rest} .bar", "bars => new Set(bars.map("
                                            "b => getComputedStyle(b).backgroundColor)).size")
        assert colours == 4  # grey, green, amber, red: each level has its own colour
        widths = page.eval_on_selector_all(f"{rest} .bar", "bars => bars.map(b => b.getBoundingClientRect().width)")
        assert min(widths) > 1, widths  # 90 bars fit at 390 px, each still visible
        assert "Uptime, last 90 days" in page.inner_text("[data-testid=uptime]")
        page.click(f"{rest} .bar[data-date='2026-03-11']")  # a tap shows the day (no hover on a phone)
        assert page.inner_text(f"{rest} .uptime-detail") == "2026-03-11 · 93.056% up · 100 min down"
        _no_sideways(page)
        page.screenshot(path=str(ARTIFACTS / "status-uptime-en-390.png"), full_page=True)
        page.click("[data-testid=lang-toggle]")
        page.wait_for_selector("html[lang=zh-CN]")
        assert "近 90 天可用率" in page.inner_text("[data-testid=uptime]")
        assert page.get_attribute(f"{rest} .bar[data-date='2026-03-10']", "title") == (
            "2026-03-10 · 可用率 99.306% · 中断 10 分钟")
        _no_sideways(page)
        page.screenshot(path=str(ARTIFACTS / "status-uptime-zh-390.png"), full_page=True)
        assert errors == []
    finally:
        context.close()
