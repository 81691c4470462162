"""The code stays ruff- and mypy-clean (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_ruff_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "server"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
