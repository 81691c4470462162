"""Writing the usage meter's counts to storage (SPEC 17): a hub service, off the request path.

Every FLUSH_S (and at each Asia/Shanghai midnight, so a day's counts stay that day's) the meter's counters are
taken on the loop (a swap) and added to storage on a storage thread; several hubs add to the same rows. A failed
write keeps its counts for the next round. `stop` flushes what is left (SIGTERM loses nothing); a `kill -9` loses at
most one interval's counts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from server.core.background import cancel_and_wait, log_round_failure
from server.core.usage import UsageMeter, next_midnight
from server.store.accounts.console import UsageCounts
from server.store.accounts.console_store import ConsoleStore
from server.store.sql.db import storage_errors
from server.store.sql.storage import StorageClosed

log = logging.getLogger("market.usage")

FLUSH_S = 5.0


class UsageFlusher:
    def __init__(self, meter: UsageMeter, store: ConsoleStore, clock: Callable[[], float],
                 interval_s: float = FLUSH_S) -> None:
        self.meter = meter
        self.store = store
        self.clock = clock
        self.interval_s = interval_s
        self._pending: UsageCounts = {}
        self._used: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.meter.since = self.clock()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="usage-flush")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self.flush()

    async def flush(self) -> None:
        """Take the counters and add them (with any a failed round kept) to storage."""
        now = self.clock()
        _, counts, used = self.meter.take(now)
        for cell, values in counts.items():
            old = self._pending.get(cell)
            self._pending[cell] = values if old is None else _add(old, values)
        self._used.update(dict.fromkeys(used, now))
        if not self._pending:
            return
        pending, used_at = self._pending, self._used
        try:
            await self.store.write(lambda r: r.add_usage(pending, used_at))
        except StorageClosed:
            return
        except storage_errors() as exc:
            log_round_failure(log, "usage flush", exc)
            return
        self._pending, self._used = {}, {}

    async def _run(self) -> None:
        while True:
            now = self.clock()
            await asyncio.sleep(max(0.0, min(self.interval_s, next_midnight(now) - now)))
            await self.flush()


Counts5 = tuple[int, int, int, int, int]


def _add(a: Counts5, b: Counts5) -> Counts5:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])
