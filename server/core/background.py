"""How a background round (outbox, key refresh, evidence anchoring, periodic site work, candle persistence)
reports a failure: the same way everywhere.

Storage away (PostgreSQL down or cut off, its pool out of connections) is an outage the round retries by
itself: one WARNING line per failed round, naming the round and the cause, no traceback (an outage of a
minute would otherwise fill the log with identical tracebacks). Anything else is a bug: ERROR with its
traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from server.core.errors import StorageTimeout, storage_unavailable

MAX_REASON = 200


def log_round_failure(log: logging.Logger, what: str, exc: BaseException) -> None:
    """Log that the round `what` (e.g. "key refresh") failed with `exc`."""
    if storage_unavailable(exc):
        log.warning("%s failed: storage unavailable (%s)", what, reason(exc))
    else:
        log.error("%s failed", what, exc_info=exc)


@contextlib.asynccontextmanager
async def storage_deadline(seconds: float) -> AsyncIterator[None]:
    """`asyncio.timeout(seconds)` around storage calls, whose expiry is storage being away (StorageTimeout, a
    TimeoutError), so a round cut short by it logs the one warning line, not an ERROR with a traceback."""
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            yield
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        raise StorageTimeout(f"no answer within {seconds:g} s") from exc


def reason(exc: BaseException) -> str:
    """`Type: first line of the message`, at most MAX_REASON characters."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    shown = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return shown if len(shown) <= MAX_REASON else shown[:MAX_REASON] + "..."


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Stop a background round: cancel it and wait until it has ended (its error, if any, is not news at stop)."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
