"""/docs end to end: Swagger UI 5 renders this server's OpenAPI 3.1 document in headless Chromium, on both runtimes.

Swagger UI 4 answered an OpenAPI 3.1 document with "Unable to render this definition"; these tests
look for the operations themselves, for the absence of that error, and for a clean console (the
page runs under its own CSP, so a blocked script, style or request shows up as a console error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess
from tests.e2e.conftest import ARTIFACTS, needs_chromium

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium



@pytest.fixture
def docs_page(browser: Any, server: ServerProcess) -> Iterator[tuple[Any, list[str]]]:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=server.base)
    page = context.new_page()
    page.set_default_timeout(15000)  # parsing a 1.7 MB bundle on a shared 2-core machine
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.goto("/docs")
    # whichever comes first: the rendered operations, or Swagger UI's own error box
    page.locator(".opblock").or_(page.get_by_text("Unable to render")).first.wait_for()
    yield page, errors
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"docs-{server.runtime}.png"))
    context.close()


def test_docs_lists_every_operation_of_the_openapi_document(
    docs_page: tuple[Any, list[str]], server: ServerProcess
) -> None:
    page, errors = docs_page
    assert page.get_by_text("Unable to render").count() == 0
    assert page.locator(".errors-wrapper").count() == 0
    spec = httpx.get(server.base + "/openapi.json", timeout=10).json()
    expected = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}
    shown = page.evaluate(
        """() => [...document.querySelectorAll('.opblock')].map(b => [
             b.querySelector('.opblock-summary-method').textContent.trim(),
             b.querySelector('.opblock-summary-path').dataset.path])"""
    )
    assert {(method, path) for method, path in shown} == expected
    assert ("GET", "/api/v1/quotes") in expected
    assert page.locator(".info .title").inner_text().startswith(spec["info"]["title"])
    assert errors == []


def test_an_operation_opens_with_its_parameters_and_responses(docs_page: tuple[Any, list[str]]) -> None:
    page, errors = docs_page
    block = page.locator("#operations-market_data-get_quotes")
    block.locator(".opblock-summary").click()
    params = block.locator(".parameters .parameter__name")
    params.first.wait_for()
    assert {"kind", "ids"} <= {t.strip().split("\n")[0].rstrip("*").strip() for t in params.all_inner_texts()}
    codes = {t.strip() for t in block.locator(".responses-table .response-col_status").all_inner_texts()}
    assert {"200", "400", "401", "429"} <= codes
    assert errors == []


def test_docs_page_is_served_with_its_csp_and_versioned_vendor_files(server: ServerProcess) -> None:
    resp = httpx.get(server.base + "/docs", timeout=10)
    assert resp.status_code == 200 and resp.headers["content-type"] == "text/html; charset=utf-8"
    csp = resp.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f'"/static/vendor/{name}?v=' in resp.text
        vendored = httpx.get(f"{server.base}/static/vendor/{name}", timeout=10)
        assert vendored.status_code == 200 and "immutable" in vendored.headers["cache-control"]
    again = httpx.get(server.base + "/docs", headers={"If-None-Match": resp.headers["etag"]}, timeout=10)
    assert again.status_code == 304
    assert httpx.get(server.base + "/static/docs.html", timeout=10).status_code == 404


def test_try_it_out_calls_the_origin_the_page_came_from(browser: Any, server: ServerProcess) -> None:
    """Opened by another host name than the bind address, "Try it out" still works: the relative server URL
    comes first, so the call goes to the page's own origin (the only one its CSP allows)."""
    context = browser.new_context(base_url=server.base.replace("127.0.0.1", "docs.test"))
    try:
        page = context.new_page()
        page.set_default_timeout(15000)
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto("/docs")
        block = page.locator("#operations-operations-get_healthz")
        block.locator(".opblock-summary").click()
        block.locator(".try-out__btn").click()
        block.locator(".execute").click()
        status = block.locator(".live-responses-table tr.response .response-col_status")
        status.wait_for()
        assert status.inner_text().strip() == "200", block.locator(".live-responses-table").inner_text()
        assert '"status": "ok"' in block.locator(".live-responses-table .microlight").first.inner_text()
        assert errors == []
    finally:
        context.close()
