"""Every problem `type` the server emits resolves on the server itself (/problems/<code>), on both runtimes;
/favicon.ico is served."""

from __future__ import annotations

from urllib.parse import urljoin

import httpx

from server.core.errors import ERROR_KINDS
from tests.conftest import ServerProcess

ENGINE_NEUTRAL = "the problem type pages are static"


def test_every_code_has_a_page_in_html_and_json(http: httpx.Client) -> None:
    for code, (status, title) in ERROR_KINDS.items():
        page = http.get(f"/problems/{code}", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert page.status_code == 200, code
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert f"<code>{code}</code>" in page.text and title in page.text
        assert "vary" in page.headers and "accept" in page.headers["vary"].lower()
        for accept in ("application/json", "application/problem+json"):
            doc = http.get(f"/problems/{code}", headers={"Accept": accept})
            assert doc.status_code == 200 and doc.headers["content-type"] == "application/json"
            body = doc.json()
            assert body["code"] == code and body["status"] == status and body["title"] == title
            assert body["type"] == f"/problems/{code}" and len(body["description"]) > 20
    unknown = http.get("/problems/no_such_code", headers={"Accept": "application/json"})
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    assert unknown.json()["code"] == "not_found"


def test_every_type_in_a_sample_of_error_responses_resolves(server: ServerProcess, http: httpx.Client) -> None:
    key = {"X-SERVICE-Key": server.demo_key}
    sample = [
        http.get("/api/v1/quotes"),  # 401 no key
        http.get("/api/v1/quotes", headers={"X-SERVICE-Key": "mk_wrong"}),  # 401 unknown key
        http.get("/api/v1/quotes/nope", headers=key),  # 404
        http.get("/api/v1/kline/brent?days=0", headers=key),  # 400 invalid_parameter
        http.get("/api/v1/quotes?kind=metal", headers=key),  # 400
        http.delete("/api/v1/quotes", headers=key),  # 405
        http.post("/api/auth/register", content=b"not json", headers={"Content-Type": "application/json"}),  # 400
        http.post("/api/auth/register", content=b"{}", headers={"Content-Type": "text/plain"}),  # 415
        http.get("/static/nothing.js"),  # 404
        http.get("/problems/nothing"),  # 404 of the problem pages themselves
    ]
    codes = set()
    for resp in sample:
        assert resp.status_code >= 400, resp.request.url
        assert resp.headers["content-type"] == "application/problem+json"
        problem = resp.json()
        assert problem["type"] == f"/problems/{problem['code']}"  # relative: resolves against the URL that answered
        target = urljoin(str(resp.request.url), problem["type"])
        assert target.startswith(server.base + "/problems/")
        page = httpx.get(target, headers={"Accept": "application/problem+json"})
        assert page.status_code == 200, target
        assert page.json()["status"] == resp.status_code
        codes.add(problem["code"])
    assert {"unauthorized", "not_found", "invalid_parameter", "method_not_allowed"} <= codes, codes


def test_favicon_ico_and_the_openapi_entries(http: httpx.Client) -> None:
    icon = http.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
    assert icon.content.startswith(b"<svg") and "etag" in icon.headers
    assert http.get("/favicon.ico", headers={"If-None-Match": icon.headers["etag"]}).status_code == 304
    spec = http.get("/openapi.json").json()
    assert set(spec["paths"]["/problems/{code}"]["get"]["parameters"][0]["schema"]["enum"]) == set(ERROR_KINDS)
    assert "/favicon.ico" in spec["paths"]
    assert spec["components"]["schemas"]["Problem"]["properties"]["type"]["format"] == "uri-reference"
