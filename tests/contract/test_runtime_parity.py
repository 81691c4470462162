"""What the runtime adapters translate, over real HTTP, on both runtimes (SPEC 2, 4, 11).

Granian and Robyn hand the adapters different things (Robyn: no raw query string, one trailing
slash dropped, any body size, its own text 404 for unrouted paths); these tests pin down that
clients see the same answers either way. The keyed API itself is in test_keyed_api.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.api.core.pipeline import MAX_BODY
from tests.conftest import ROOT, RUNTIMES, ServerProcess

SHUTDOWN_LIMIT_S = 5.0


def _problem(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert body["status"] == status and body["code"] == code
    return body


@pytest.mark.parametrize("path", ["/nope", "/api/v1/nope/deeper/still", "/static", "/api/v1/quotes/brent/x",
                                  "/%E2%9C%93", "/healthz/x"])
def test_unknown_paths_are_json_404(http: httpx.Client, path: str) -> None:
    _problem(http.get(path), 404, "not_found")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "TRACE"])
def test_wrong_method_is_json_405_with_allow(http: httpx.Client, method: str) -> None:
    resp = http.request(method, "/api/v1/quotes")
    _problem(resp, 405, "method_not_allowed")
    assert resp.headers["allow"] == "GET, HEAD, OPTIONS"
    assert resp.headers["access-control-allow-origin"] == "*"


def test_preflight_is_204_with_cors_and_needs_no_key(http: httpx.Client) -> None:
    resp = http.options("/api/v1/quotes", headers={"Origin": "https://dash.example",
                                                  "Access-Control-Request-Method": "GET",
                                                  "Access-Control-Request-Headers": "X-SERVICE-Key"})
    assert resp.status_code == 204 and resp.content == b""
    assert resp.headers["access-control-allow-origin"] == "*"
    assert "GET" in resp.headers["access-control-allow-methods"]
    assert "X-SERVICE-Key" in resp.headers["access-control-allow-headers"]
    assert "content-type" not in resp.headers


def test_paths_are_percent_decoded_once(http: httpx.Client, pro_key: str) -> None:
    h = {"X-SERVICE-Key": pro_key}
    assert http.get("/api/v1/quotes/bre%6Et", headers=h).json()["id"] == "brent"
    _problem(http.get("/api/v1/quotes/%E2%9C%93", headers=h), 404, "not_found")
    _problem(http.get("/api/v1/quotes/bre%256Et", headers=h), 404, "not_found")  # %25 is a literal %
    assert http.get("/heal%74hz").json() == {"status": "ok"}


def test_query_strings_decode_the_same(http: httpx.Client, pro_key: str) -> None:
    def days(query: str) -> httpx.Response:
        return http.get(f"/api/v1/kline/brent?{query}", headers={"X-SERVICE-Key": pro_key})

    assert len(days("days=%31%30").json()["series"]) == 10
    assert len(days("days=abc&days=%37").json()["series"]) == 7  # the last value wins
    assert days("days=7&x=%26").json()["errors"] == [{"field": "x", "message": "not a parameter of this endpoint"}]
    for bad in ("days=", "days", "days=+5", "days=5%20"):
        _problem(days(bad), 400, "invalid_parameter")


def test_trailing_slash_is_ignored(http: httpx.Client, pro_key: str) -> None:
    assert http.get("/healthz/").json() == {"status": "ok"}
    assert http.get("/api/v1/quotes/brent/", headers={"X-SERVICE-Key": pro_key}).json()["id"] == "brent"


@pytest.mark.parametrize("chunked", [False, True])
def test_body_over_64_kib_is_json_413(http: httpx.Client, chunked: bool) -> None:
    body = b"x" * (100 * 1024)
    content = iter([body[:50_000], body[50_000:]]) if chunked else body
    resp = http.post("/api/submit-inquiry", content=content, headers={"Content-Type": "application/json"})
    _problem(resp, 413, "payload_too_large")
    assert str(MAX_BODY) in resp.json()["detail"]


def test_head_is_get_without_a_body(http: httpx.Client) -> None:
    resp = http.head("/healthz")
    assert resp.status_code == 200 and resp.content == b""
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers["x-request-id"]


def test_request_id_is_echoed_on_success_and_error(http: httpx.Client) -> None:
    for path in ("/healthz", "/nope"):
        assert http.get(path, headers={"X-Request-ID": "parity-42"}).headers["x-request-id"] == "parity-42"


def test_static_files_arrive_byte_exact_with_our_content_type(http: httpx.Client) -> None:
    resp = http.get("/static/app.js")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/javascript")
    assert resp.content == (ROOT / "server" / "web" / "app.js").read_bytes()
    page = http.get("/")
    assert page.headers["content-type"].startswith("text/html") and b"<html" in page.content.lower()


@pytest.fixture(params=RUNTIMES)
def fresh_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path / "data", request.param)
    yield srv
    srv.kill()


def test_sigterm_exits_0_within_5_s(fresh_server: ServerProcess) -> None:
    with fresh_server.client() as client:  # leaves an idle keep-alive connection open
        assert client.get("/healthz").status_code == 200
        started = time.monotonic()
        fresh_server.proc.send_signal(signal.SIGTERM)
        code = fresh_server.proc.wait(SHUTDOWN_LIMIT_S + 5)
        elapsed = time.monotonic() - started
    assert code == 0, fresh_server.output()
    assert elapsed < SHUTDOWN_LIMIT_S, f"{fresh_server.runtime} took {elapsed:.2f} s"
    assert "hub stopped" in fresh_server.output()
    with pytest.raises(httpx.ConnectError):
        httpx.get(fresh_server.base + "/healthz", timeout=2.0)


@pytest.mark.parametrize("runtime", ["granian", "robyn"])
def test_a_port_another_server_holds_is_refused(tmp_path: Path, runtime: str) -> None:
    """Robyn binds with SO_REUSEPORT (without our check a second server would share the port);
    Granian fails in its serve task, which must stop the whole process, not leave a hub without HTTP."""
    first = ServerProcess(tmp_path / "first", runtime)
    try:
        cmd = [sys.executable, "-m", "server", "serve", "--runtime", runtime, "--data-dir", str(tmp_path / "second"),
               "--port", str(first.port), "--ws-port", str(first.ws_port + 1)]
        second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert second.returncode != 0
        assert "already in use" in second.stderr
    finally:
        assert first.stop() == 0
