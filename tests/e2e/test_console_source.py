"""The console's Data source section (SPEC 20, docs/ingest.md) in Chromium: an enterprise account sees its declared
instruments, its namespace and its limits as an operator set them (`users limits`), with a notice once it holds its
cap; a free account sees no such section; English and Chinese at 1440 px and 390 px without sideways scrolling or
console errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, run_cli
from tests.e2e.conftest import needs_chromium
from tests.e2e.test_console_page import DESKTOP, PASSWORD, PHONE, Page

pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium
INSTRUMENT = {"unit": {"zh": "美元/桶", "en": "USD/bbl"}, "currency": "USD", "decimals": 2, "venue": "ice-eu"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("console-source") / "data", "granian", "--public-rate", "100000",
                           "--ingest-rate", "2500")
    yield server
    assert server.stop() == 0, server.output()


def cli(srv: ServerProcess, *args: str) -> None:
    out = run_cli(srv.data_dir, *args)
    assert out.returncode == 0, out.stderr


def test_an_enterprise_account_sees_its_instruments_and_limits(browser: Any, srv: ServerProcess) -> None:
    email = "desk@acme.example"
    c = httpx.Client(base_url=srv.base, timeout=10.0)
    assert c.post("/api/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
    cli(srv, "users", "plan", email, "enterprise", "--rate", "6000")
    cli(srv, "users", "namespace", email, "acme")
    token = c.post("/api/auth/login", json={"email": email, "password": PASSWORD}).json()["token"]
    for name, zh, en in (("blend", "定制原油", "Crude <b>blend</b>"), ("naphtha", "石脑油", "Naphtha")):
        body = {"id": f"acme.{name}", "name": {"zh": zh, "en": en}, **INSTRUMENT}
        resp = c.post("/api/console/instruments", json=body, headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 201, resp.text
    cli(srv, "users", "limits", email, "--instruments", "2", "--ticks-per-second", "50")

    me = Page(browser, srv, DESKTOP)
    p = me.page
    me.sign_in(email)
    p.wait_for_selector("[data-testid=source]:visible")
    assert p.inner_text("[data-testid=source-namespace]") == "Namespace acme:"
    assert p.inner_text("[data-testid=source-limits]") == "2 of 2 instruments declared; up to 50 ticks a second."
    assert p.is_visible("[data-testid=source-full]") and "support ticket" in p.inner_text("[data-testid=source-full]")
    rows = p.eval_on_selector_all("[data-testid=source-instruments] tbody tr", "rs => rs.map(r => r.dataset.id)")
    assert rows == ["acme.blend", "acme.naphtha"]
    assert "Crude <b>blend</b>" in p.inner_text("[data-testid=source-instruments]")  # text, never HTML
    assert p.locator("[data-testid=source-instruments] b").count() == 0
    assert "data source limits changed" in p.inner_text("[data-testid=events]")
    me.shot("source-1440-en")
    me.lang("zh")
    assert p.inner_text("[data-testid=source-limits]") == "已声明 2 个品种，上限 2 个；每秒最多 50 笔报价。"
    assert "定制原油" in p.inner_text("[data-testid=source-instruments]")
    me.shot("source-1440-zh")
    cli(srv, "users", "limits", email, "--reset")  # the plan's defaults: 100 and the hub's --ingest-rate
    me.reload_view()
    p.wait_for_selector("[data-testid=source]:visible")
    assert p.inner_text("[data-testid=source-limits]") == "已声明 2 个品种，上限 100 个；每秒最多 2,500 笔报价。"
    assert p.is_hidden("[data-testid=source-full]")
    assert me.errors == []
    me.context.close()

    phone = Page(browser, srv, PHONE)
    phone.sign_in(email)
    phone.page.wait_for_selector("[data-testid=source]:visible")
    assert phone.no_sideways_scroll()
    phone.shot("source-390")
    assert phone.errors == []
    phone.context.close()


def test_a_free_account_has_no_data_source_section(browser: Any, srv: ServerProcess) -> None:
    me = Page(browser, srv, DESKTOP)
    me.sign_in("free@acme.example", sign_up=True)
    me.page.wait_for_selector("body[data-loaded]")
    assert me.page.is_hidden("[data-testid=source]")
    assert me.errors == []
    me.context.close()
