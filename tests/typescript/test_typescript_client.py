"""The TypeScript client (clients/typescript): its own tests, run with Node's test runner against real servers.

Installs the pinned devDependencies from package-lock.json (`npm ci`, from the npm cache when it holds
them: offline once installed), then `npm test`: tsc --noEmit over the sources, the tests and a consumer
file, the build, and `node --test` (REST, stream resume, a paused server, both engines' restarts). The
servers those tests start run on this interpreter (MARKET_PYTHON). Skips, saying why, without Node 20+.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PKG = ROOT / "clients" / "typescript"
VENDORED = ROOT / "server" / "web" / "market-client.js"
NODE = shutil.which("node")
NPM = shutil.which("npm")


def _node_major() -> int:
    if not NODE:
        return 0
    out = subprocess.run([NODE, "--version"], capture_output=True, text=True, check=False).stdout
    return int(out.strip().lstrip("v").split(".")[0] or 0)


pytestmark = pytest.mark.skipif(
    not NPM or _node_major() < 20, reason="Node 20+ and npm are needed for the TypeScript client's tests"
)


def _run(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=PKG, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def _install() -> None:
    """`npm ci` when node_modules does not match package-lock.json (a stamp of its hash), offline first."""
    want = hashlib.sha256((PKG / "package-lock.json").read_bytes()).hexdigest()
    stamp = PKG / "node_modules" / ".installed-lock"
    if stamp.is_file() and stamp.read_text() == want:
        return
    assert NPM
    out = _run(NPM, "ci", "--offline", "--no-audit", "--no-fund", timeout=300)
    if out.returncode != 0:  # the cache does not hold them yet: fetch from the registry once
        out = _run(NPM, "ci", "--prefer-offline", "--no-audit", "--no-fund", timeout=600)
    assert out.returncode == 0, f"npm ci failed:\n{out.stdout}\n{out.stderr}"
    stamp.write_text(want)


@pytest.fixture(scope="module")
def installed() -> Path:
    _install()
    return PKG


@pytest.mark.timeout(600)
def test_node_tests_pass(installed: Path) -> None:
    assert NPM
    from tests.redis_service import REDIS_URL, fresh_prefix

    # the Redis-engine restart test uses a key prefix that is deleted when this process exits
    env = {**os.environ, "MARKET_PYTHON": sys.executable, "MARKET_TEST_REDIS_URL": REDIS_URL,
           "MARKET_TEST_REDIS_PREFIX": fresh_prefix()}
    out = _run(NPM, "test", timeout=540, env=env)
    assert out.returncode == 0, f"npm test failed:\n{out.stdout[-20000:]}\n{out.stderr[-5000:]}"
    assert "# fail 0" in out.stdout, out.stdout[-5000:]


@pytest.mark.timeout(300)
def test_dashboard_vendors_the_current_build(installed: Path) -> None:
    """server/web/market-client.js is the package's browser build, byte for byte (`npm run vendor` updates it)."""
    built = installed / "dist" / "browser" / "market-client.js"
    if not built.is_file():
        assert NPM
        out = _run(NPM, "run", "build", timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
    assert VENDORED.read_bytes() == built.read_bytes(), "run `npm run vendor` in clients/typescript"
