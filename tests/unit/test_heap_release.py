"""server/core/heap.py: the start-up's freed heap handed back to the operating system (issue 39 item 8)."""

from __future__ import annotations

import ctypes.util
import platform

import pytest

from server.core.heap import release_free_heap


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_freed_blocks_leave_the_process() -> None:
    # 64 KiB blocks come from malloc's heap (under its mmap threshold): freed, glibc keeps them mapped
    blocks = [bytearray(64 * 1024) for _ in range(1600)]  # 100 MiB, written (bytearray zero-fills)
    held = rss_kib()
    keep = blocks[-1]  # the heap's top stays in use: only a trim inside the heap gives the rest back
    del blocks
    assert release_free_heap() is True
    assert rss_kib() < held - 50 * 1024
    assert len(keep) == 64 * 1024


def test_without_malloc_trim_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libdoesnotexist.so.0")
    assert release_free_heap() is False
