"""A small tmpfs to fill: a real full disk for the archive's tests (root only; skipped, saying why, elsewhere,
unless MARKET_REQUIRE_SERVICES=1: then a failure)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.required import unavailable


@contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (mount's `size=`, e.g. "2m") mounted at `where` (made here), unmounted afterwards."""
    if os.geteuid() != 0:
        unavailable(f"mounting a {size} tmpfs to fill needs root")
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        unavailable(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
