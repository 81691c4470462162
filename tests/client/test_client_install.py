"""`pip install ./client` works on its own: the package builds from its pyproject, imports from where it was
installed (not from the source tree) and has its console script."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from tests.client.conftest import CLIENT_DIR


def test_pip_installs_the_client_package(tmp_path: Path) -> None:
    source = tmp_path / "client"  # a copy: building in place would leave build/ and egg-info in the tree
    shutil.copytree(CLIENT_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    # the dev .venv holds httpx, websockets and msgspec, and (Python 3.11's venv) setuptools plus the dev extra's
    # wheel: then no network and no isolated build env; a venv without setuptools (3.12+) builds in isolation
    offline = all(importlib.util.find_spec(m) for m in ("setuptools", "wheel"))
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
           *(["--no-build-isolation"] if offline else []), "--target", str(target), str(source)]
    out = subprocess.run(pip, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (target / "market_client" / "py.typed").is_file()
    script = target / "bin" / "market-client"
    assert script.is_file() and "market_client.cli" in script.read_text()
    check = subprocess.run(
        [sys.executable, "-c", "import market_client, sys; print(market_client.__file__, market_client.__version__)"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env={"PYTHONPATH": str(target)})
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith(str(target / "market_client")) and check.stdout.split()[1] == "0.1.0"
    version = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60,
                             env={"PYTHONPATH": str(target)})
    assert version.returncode == 0 and "quotes" in version.stdout and "watch" in version.stdout
