"""The start-up's freed memory back to the operating system (issue 39 item 8).

Building a hub's state (the demo history of 444 rows, a live feed's candle book and archive replay) makes large
numpy temporaries. glibc's malloc keeps what they freed in its heap (it raises its mmap threshold after the first
large frees, so later large blocks come from the heap too): a demo hub held ~80 MB more RSS than it uses.
``release_free_heap`` asks glibc to hand free pages back (``malloc_trim(0)``, which also releases free pages inside
the heap); elsewhere (another libc, macOS) it does nothing. It changes no data: only what the process keeps mapped.
"""

from __future__ import annotations

import ctypes
import ctypes.util


def release_free_heap() -> bool:
    """``malloc_trim(0)`` where the C library has it (glibc); True when it released memory."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))
