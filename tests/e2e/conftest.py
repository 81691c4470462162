"""Browser tests share one way to find and launch Debian's Chromium through Playwright.

Playwright's own browser downloads are never used: the tests launch the system Chromium through
`executable_path`, and skip (saying why) only where no Chromium is installed. Modules that drive
the browser set `pytestmark = needs_chromium` and use the `browser` fixture.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM, reason="Chromium not found: install Debian's `chromium` (apt-get install chromium) to run these"
)
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP docs.test 127.0.0.1",  # another name for this machine: traffic stays on 127.0.0.1
]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
