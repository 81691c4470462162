"""Keeping the key cache current while the server runs (CLI changes apply without a restart).

`KeyWatch` refreshes the `KeyCache` from storage every KEY_REFRESH_S; the revocations a refresh notices
are published on the engine's revocation channel, which runs this hub's listeners at once and (Redis)
tells the other hubs. A revocation from anywhere (this refresh, another hub, the CLI) reaches `on_revoked`:
the cache forgets the keys and the listeners (the stream: close their sessions) run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from server.core.background import cancel_and_wait, log_round_failure
from server.engine import RevocationChannel
from server.store.accounts.key_cache import KeyCache
from server.store.sql.db import storage_errors
from server.store.sql.storage import StorageClosed

log = logging.getLogger("market.keys")

KEY_REFRESH_S = 1.0


class KeyWatch:
    def __init__(self, keys: KeyCache, channel: RevocationChannel, refresh_s: float = KEY_REFRESH_S) -> None:
        self.keys = keys
        self.channel = channel
        self.refresh_s = refresh_s
        self.listeners: list[Callable[[set[str]], None]] = []
        # run after every refresh, with the refreshed cache (the stream: apply plan changes to open sessions)
        self.refreshed: list[Callable[[KeyCache], None]] = []
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def subscribed(cls, keys: KeyCache, channel: RevocationChannel, refresh_s: float = KEY_REFRESH_S) -> KeyWatch:
        """A watch told of the revocations published on `channel` (by any hub)."""
        watch = cls(keys, channel, refresh_s)
        channel.subscribe(watch.on_revoked)
        return watch

    async def start(self) -> None:
        """Fill the cache (known keys are answered from memory from the first request on), then keep it current."""
        await self.keys.refresh()
        self._task = asyncio.get_running_loop().create_task(self._refresh_forever(), name="keys")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    def on_revoked(self, key_ids: set[str]) -> None:
        """A revocation noticed here or published by another hub or the CLI: refuse the keys, tell the listeners."""
        self.keys.forget(key_ids)
        for listener in self.listeners:
            listener(key_ids)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_s)
            try:
                revoked = await self.keys.refresh()
            except StorageClosed:
                return
            except storage_errors() as exc:  # PostgreSQL away: known keys stay served
                log_round_failure(log, "key refresh", exc)
                continue
            if revoked:
                log.info("keys revoked: %s", ", ".join(sorted(revoked)))
                await self.channel.publish(revoked)  # here at once; other hubs over the engine
            for listener in self.refreshed:
                listener(self.keys)
