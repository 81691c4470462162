"""Waiting for another process's effect (a hub's key refresh, its usage flush, an archive's commit): `until` polls
`check` until it gives a truthy value and returns that value, or returns the last, falsy one at the deadline, so the
caller's `assert until(...), context` names what it waited for. A barrier, never a fixed sleep before a check."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(check: Callable[[], T], timeout: float = 30.0, every: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)
