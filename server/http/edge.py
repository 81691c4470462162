"""What both HTTP runtimes do at the edge, before and around the pipeline (SPEC 11).

- Every request is counted in flight, so shutdown can wait for them (`drain`).
- After shutdown starts (`closing`), new requests are refused with a 503 problem.
- A request body must arrive within `body_timeout_s` of the headers (a total deadline, so a client
  dripping one byte every few seconds is cut too); shutdown cuts every body read at once.
- One client IP may have at most `uploads_per_ip` requests reading a body at the same time; one more is
  answered 429 at once, without reading its body.

Invariants: `in_flight` counts requests between `enter` and `leave`; `uploads` holds only IPs with a
body being read (an entry is removed at zero), so it never grows with the number of clients seen.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from server.core.errors import ApiError

CLOSE = ("connection", "close")  # the rest of an unread body must never be parsed as the next request


class EdgeGate:
    def __init__(self, body_timeout_s: float, uploads_per_ip: int) -> None:
        self.body_timeout_s = body_timeout_s
        self.uploads_per_ip = uploads_per_ip
        self.in_flight = 0
        self.closing = False
        self.uploads: dict[str, int] = {}
        self._deadlines: set[asyncio.Timeout] = set()
        self._idle: asyncio.Event | None = None

    def enter(self) -> bool:
        """Count a request in flight (always pair with `leave`); False once shutdown has started."""
        self.in_flight += 1
        return not self.closing

    def leave(self) -> None:
        self.in_flight -= 1
        if self.closing:
            self.settled()

    def settled(self) -> None:
        """Called after a request left while closing: wakes `drain` when none is left."""
        if self._idle is not None and not self.in_flight:
            self._idle.set()

    def start_upload(self, ip: str) -> ApiError | None:
        """Admit one more body read for `ip`, or say why not."""
        if self.closing:
            return shutting_down()
        count = self.uploads.get(ip, 0)
        if count >= self.uploads_per_ip:
            return ApiError(
                "too_many_uploads",
                f"At most {self.uploads_per_ip} requests per client may be sending a body at the same time.",
                headers=[("retry-after", "1"), CLOSE],
                extra={"retryAfter": 1},
            )
        self.uploads[ip] = count + 1
        return None

    def end_upload(self, ip: str) -> None:
        count = self.uploads[ip] - 1
        if count:
            self.uploads[ip] = count
        else:
            del self.uploads[ip]

    @contextlib.asynccontextmanager
    async def body_deadline(self) -> AsyncIterator[None]:
        """Raises TimeoutError in the body read when the deadline passes or shutdown starts."""
        async with asyncio.timeout(self.body_timeout_s) as deadline:
            self._deadlines.add(deadline)
            try:
                yield
            finally:
                self._deadlines.discard(deadline)

    def timed_out(self) -> ApiError:
        if self.closing:
            return shutting_down()
        return ApiError("request_timeout", f"The request body did not arrive within {self.body_timeout_s:g} s.",
                        headers=[CLOSE])

    async def drain(self, timeout_s: float) -> bool:
        """Refuse new requests, cut body reads now, wait up to `timeout_s` for in-flight requests to finish."""
        self.closing = True
        now = asyncio.get_running_loop().time()
        for deadline in list(self._deadlines):
            deadline.reschedule(now)
        if not self.in_flight:
            return True
        self._idle = asyncio.Event()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            return False
        return True


def shutting_down() -> ApiError:
    return ApiError("shutting_down", "The server is shutting down; retry shortly.", headers=[CLOSE])
