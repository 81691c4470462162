"""The dashboard's files over real HTTP, on both runtimes: content types, caching, 304s, 404s, /api/config."""

from __future__ import annotations

import hashlib
import re

import httpx

from tests.conftest import ROOT, ServerProcess

WEB = ROOT / "server" / "web"
VENDOR_JS = "lightweight-charts.standalone.production.js"


def test_index_is_html_with_security_headers_and_versioned_vendor_url(http: httpx.Client) -> None:
    resp = http.get("/")
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/html; charset=utf-8"
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["x-content-type-options"] == "nosniff"
    csp = resp.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self' ws: wss:" in csp
    assert '<script type="module" src="/static/app.js">' in resp.text
    vendor_hash = hashlib.blake2b((WEB / "vendor" / VENDOR_JS).read_bytes(), digest_size=12).hexdigest()[:12]
    assert f'src="/static/vendor/{VENDOR_JS}?v={vendor_hash}"' in resp.text
    assert "x-request-id" in resp.headers


def test_etag_revalidation_answers_304_without_a_body(http: httpx.Client) -> None:
    for path in ("/", "/static/app.js", f"/static/vendor/{VENDOR_JS}"):
        first = http.get(path)
        etag = first.headers["etag"]
        again = http.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304, path
        assert again.content == b"" and again.headers["etag"] == etag
        assert http.get(path, headers={"If-None-Match": '"other"'}).status_code == 200


def test_static_files_have_their_content_types_and_cache_policies(http: httpx.Client) -> None:
    expected = {
        "/static/app.js": "text/javascript; charset=utf-8",
        "/static/keyed.js": "text/javascript; charset=utf-8",
        "/static/app.css": "text/css; charset=utf-8",
        "/static/favicon.svg": "image/svg+xml",
        f"/static/vendor/{VENDOR_JS}": "text/javascript; charset=utf-8",
        "/static/vendor/lightweight-charts.LICENSE": "text/plain; charset=utf-8",
    }
    for path, ctype in expected.items():
        resp = http.get(path)
        assert resp.status_code == 200, path
        assert resp.headers["content-type"] == ctype, path
        want_cache = "public, max-age=31536000, immutable" if "/vendor/" in path else "no-cache"
        assert resp.headers["cache-control"] == want_cache, path
    app = http.get("/static/app.js")
    assert app.content == (WEB / "app.js").read_bytes()


def test_vendored_chart_library_is_the_pinned_release(http: httpx.Client) -> None:
    readme = (WEB / "vendor" / "README.md").read_text()
    assert re.search(r"\*\*5\.2\.1\*\* \(pinned\)", readme)
    recorded = re.search(r"sha256\s+`([0-9a-f]{64})`", readme)
    assert recorded is not None
    body = http.get(f"/static/vendor/{VENDOR_JS}").content
    assert hashlib.sha256(body).hexdigest() == recorded.group(1)
    assert b"TradingView Lightweight Charts\xe2\x84\xa2 v5.2.1" in body[:300]
    assert "Apache License" in http.get("/static/vendor/lightweight-charts.LICENSE").text


def test_unknown_or_escaping_file_names_are_json_404s(http: httpx.Client) -> None:
    for path in ("/static/nope.js", "/static/..%2Fapi%2Fweb.py", "/static/vendor/..%2F..%2Fconfig.py",
                 "/static/index.html", "/static/vendor/README.mdx"):
        resp = http.get(path)
        assert resp.status_code == 404, path
        assert resp.headers["content-type"] == "application/problem+json", path
        assert resp.json()["code"] == "not_found"


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_a_browsers_unknown_page_is_an_html_404_with_links_home(http: httpx.Client) -> None:
    for path in ("/nope", "/status/extra", "/console/settings"):
        resp = http.get(path, headers={"Accept": BROWSER_ACCEPT})
        assert resp.status_code == 404, path
        assert resp.headers["content-type"] == "text/html; charset=utf-8", path
        assert "default-src 'self'" in resp.headers["content-security-policy"]
        assert all(f'href="{link}"' in resp.text for link in ("/", "/console", "/docs")), path
        assert "Page not found" in resp.text and "页面不存在" in resp.text
    # API clients keep their problem documents: no Accept, a JSON Accept, anything under /api/, or not a GET
    for path, accept in (("/nope", None), ("/nope", "application/json, text/html"), ("/api/v1/nope", BROWSER_ACCEPT),
                         ("/api/nope", BROWSER_ACCEPT)):
        resp = http.get(path, headers={"Accept": accept} if accept else {})
        assert resp.status_code == 404, path
        assert resp.headers["content-type"] == "application/problem+json", (path, accept)
    resp = http.post("/nope", headers={"Accept": BROWSER_ACCEPT}, json={})
    assert resp.status_code == 404 and resp.json()["code"] == "not_found"


def test_docs_page_links_home_and_says_how_to_get_a_key(http: httpx.Client) -> None:
    text = http.get("/docs").text
    assert 'href="/"' in text and 'href="/console"' in text
    assert "X-SERVICE-Key" in text and "market-server keys create" in text  # the operator's way, moved from /


def test_head_and_wrong_method(http: httpx.Client) -> None:
    head = http.head("/")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == "text/html; charset=utf-8"
    post = http.post("/", json={})
    assert post.status_code == 405 and post.json()["code"] == "method_not_allowed"


def test_client_config_names_the_websocket_port(server: ServerProcess, http: httpx.Client) -> None:
    resp = http.get("/api/config")
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    assert resp.json() == {"wsPort": server.ws_port, "wsPath": "/ws/quotes", "demo": True, "heartbeatS": 5.0}
    assert "x-ratelimit-limit" not in resp.headers  # open: the page may ask as often as it loads
    spec = http.get("/openapi.json").json()
    assert spec["paths"]["/api/config"]["get"]["tags"] == ["dashboard"]
    assert "text/html" in spec["paths"]["/"]["get"]["responses"]["200"]["content"]
