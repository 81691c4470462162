"""Chromium (which always offers permessage-deflate) negotiates it on /ws/quotes and still receives ticks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ServerProcess
from tests.e2e.conftest import needs_chromium

pytestmark = needs_chromium

PROBE = """async ([url, n]) => {
  const ws = new WebSocket(url);
  const types = [];
  await new Promise((resolve, reject) => {
    ws.onerror = () => reject(new Error("websocket error"));
    ws.onmessage = (e) => {
      types.push(JSON.parse(e.data).type);
      if (types.filter(t => t === "tick").length >= n) resolve();
    };
    setTimeout(() => reject(new Error("timeout: " + types.join(","))), 10000);
  });
  const extensions = ws.extensions;
  ws.close();
  return {extensions, types};
}"""


@pytest.fixture(scope="module", params=["", "--no-ws-deflate"])
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data = tmp_path_factory.mktemp("deflate-browser") / "data"
    flags = [request.param] if request.param else []
    server = ServerProcess(data, "granian", "--tick-interval-ms", "50", *flags)
    yield server
    assert server.stop() == 0, server.output()


def test_chromium_receives_ticks_with_and_without_deflate(browser: Any, srv: ServerProcess) -> None:
    page = browser.new_page()
    try:
        page.goto(srv.base + "/")
        result = page.evaluate(PROBE, [f"{srv.ws_base}/ws/quotes?key={srv.demo_key}", 5])
    finally:
        page.close()
    assert result["types"][0] == "snapshot" and result["types"].count("tick") >= 5
    if "--no-ws-deflate" in srv.proc.args:  # type: ignore[operator]
        assert result["extensions"] == ""
    else:
        assert result["extensions"].startswith("permessage-deflate")
        assert "server_no_context_takeover" in result["extensions"]
