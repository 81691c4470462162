"""`pip install ./client` works on its own: the package builds from its pyproject, imports from where it was
installed (not from the source tree) and has its console script, and the install leaves the source tree as it
was (issue 22: setuptools left an untracked client/build/ behind)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from tests.client.conftest import CLIENT_DIR


def test_pip_installs_the_client_package(tmp_path: Path) -> None:
    source = tmp_path / "client"  # a copy of the tracked tree, so that what the install adds shows
    shutil.copytree(CLIENT_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    target = tmp_path / "site"
    # the dev .venv holds httpx, websockets, msgspec and the build backend (flit_core, the dev extra): then no
    # network and no isolated build env; without it pip fetches the backend into an isolated env
    offline = importlib.util.find_spec("flit_core") is not None
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
           *(["--no-build-isolation"] if offline else []), "--target", str(target), str(source)]
    out = subprocess.run(pip, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(p.relative_to(source) for p in source.rglob("*")) == before, "the install left files in client/"
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
