"""Ingest on every hub of the Redis engine (SPEC 20, docs/ingest.md): a dedicated data source's batch taken by any
hub goes through a Redis Stream inbox to the feed lease holder, which appends it to the tick log.

Keys (after the prefix): `ingest:rate:{account}` (the account's ticks-a-second bucket: "tokens at", Redis time),
`ingest:once:{account}:{key}` (a batch's Idempotency-Key: "fingerprint answer", 24 h, set with the batch),
`ingest:inbox` (the stream of accepted batches not yet in the tick log), `ingest:inbox:pos` (the last inbox entry
the tick log holds).

- Any hub (the holder too): one script call per batch (`INGEST_LUA`) takes the batch's ticks from the account's
  bucket (`TickBuckets`' arithmetic, server/core/tick_buckets.py) and, if it may go, adds the batch to the inbox;
  the hub answers once Redis answered. A refused batch is neither kept nor counted; a kept one is counted. Redis
  unreachable: InboxUnavailable (nothing kept; after a timeout the script may have run all the same).
- The holder: reads the inbox after the position (XREAD BLOCK) and appends each entry with the tick log's own
  script (redis_ticks.py, `APPEND_LUA`), which also checks that the position is where the holder read from and
  moves it to that entry and deletes it, in the same atomic step as the numbering and the XADD: an entry is in the
  tick log exactly once whatever happens to the holder (a kill -9, a lost lease: a deposed holder's call is
  refused by the lease check, a second reader's by the position check), and a new holder continues after it.

An inbox entry names each tick's instrument by the tick log's name (`~custom-{k}` for a reserved row), so the
holder appends it even before its own refresh bound the declaration.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from redis.exceptions import NoScriptError, RedisError

from server.core.redis_url import RedisTarget
from server.engine import ONCE_TTL_S, InboxFull, InboxUnavailable, Once, Put, Replayed
from server.engine.redis_client import AutoPipeline
from server.engine.redis_ticks import (
    APPEND_SCRIPT,
    APPEND_SHA,
    BLOCK_MS,
    CONNECT_S,
    RETRY_S,
    RedisTicks,
    decode_detail,
    encode_detail,
)
from server.market.tick import Tick

log = logging.getLogger("market.ingest")

ENTRIES = 100  # inbox entries read (and appended, pipelined) at once

# KEYS: the account's bucket, the inbox, the batch's Idempotency-Key (`ingest:once:{account}:{key}`, unused without
# one). ARGV: rate (ticks a second), n (ticks in the batch), the batch, the most batches the inbox may hold, the
# body's fingerprint ('' without a key), the answer to keep with it, its lifetime (ms). Returns '0' (kept), the
# seconds to wait (refused, nothing kept), as text (a Lua number reply is an integer), 'full' (the inbox holds its
# most: refused before the bucket, nothing kept or taken), or 'once FINGERPRINT ANSWER' (the key kept already:
# nothing else done).
INGEST_LUA = """
if ARGV[5] ~= '' then
  local held = redis.call('GET', KEYS[3])
  if held then return 'once ' .. held end
end
if redis.call('XLEN', KEYS[2]) >= tonumber(ARGV[4]) then return 'full' end
local rate = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tokens, at = rate, now
local stored = redis.call('GET', KEYS[1])
if stored then
  local a, b = string.match(stored, '^(%S+) (%S+)$')
  if a then tokens, at = tonumber(a), tonumber(b) end
end
tokens = math.min(rate, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens <= 0 then wait = -tokens / rate + 1 / rate else tokens = tokens - tonumber(ARGV[2]) end
local full_ms = math.ceil((rate - tokens) / rate * 1000) + 1000
redis.call('SET', KEYS[1], string.format('%.17g %.17g', tokens, now), 'PX', full_ms)
if wait > 0 then return string.format('%.17g', wait) end
redis.call('XADD', KEYS[2], '*', 'b', ARGV[3])
if ARGV[5] ~= '' then redis.call('SET', KEYS[3], ARGV[5] .. ' ' .. ARGV[6], 'PX', ARGV[7]) end
return '0'
"""
INGEST_SCRIPT = INGEST_LUA.encode()
INGEST_SHA = hashlib.sha1(INGEST_SCRIPT).hexdigest().encode()


class RedisInbox:
    """The Redis engine's `TickInbox` (server/engine/__init__.py), and the holder's consumer of it."""

    def __init__(self, url: str | RedisTarget, prefix: str, ticks: RedisTicks, fast: AutoPipeline,
                 most: int = 1000) -> None:
        """`fast`: the request path's auto-pipelined connection (the limiter's); `ticks`: the tick log; `most`: the
        batches the inbox may hold (--ingest-inbox-max)."""
        self.ticks, self.fast, self.most = ticks, fast, most
        self.rate_prefix, self.once_prefix = prefix + "ingest:rate:", prefix + "ingest:once:"
        self.reader = AutoPipeline(url, BLOCK_MS / 1000 + 1.0, connect_timeout=CONNECT_S)  # the holder's XREAD
        self._task: asyncio.Task[None] | None = None
        ticks.lead_listeners.append(self.lead)

    async def put(self, account: str, ticks: list[Tick], rate: int, floors: list[int],
                  once: Once | None = None) -> Put:
        """The Idempotency-Key, the account's bucket and the inbox in one script call (`floors`: unused, the holder
        numbers)."""
        ids = self.ticks.ids
        body = ";".join(f"{ids[t.row]} {t.price!r} {t.ts!r} {t.volume!r} {encode_detail(t.detail)}" for t in ticks)
        held = f"{self.once_prefix}{account}:{once.key}" if once is not None else self.once_prefix
        fingerprint, answer = (once.fingerprint, once.answer) if once is not None else ("", b"")
        args = (3, self.rate_prefix + account, self.ticks.inbox, held, rate, len(ticks), body, self.most, fingerprint,
                answer, ONCE_TTL_S * 1000)
        try:
            try:
                reply = await self.fast.call(b"EVALSHA", INGEST_SHA, *args)
            except NoScriptError:  # a restarted Redis forgot the script
                reply = await self.fast.call(b"EVAL", INGEST_SCRIPT, *args)
        except (RedisError, OSError) as exc:
            raise InboxUnavailable(f"{type(exc).__name__}: {exc}") from None
        if reply == b"full":
            raise InboxFull(f"the inbox holds {self.most} batches")
        if reply.startswith(b"once "):
            kept_fingerprint, _, kept_answer = reply[5:].partition(b" ")
            return Replayed(kept_fingerprint.decode(), kept_answer)
        return float(reply)

    # --- the lease holder ---------------------------------------------------------------------------------------
    def lead(self, leading: bool) -> None:
        if leading and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._consume(), name="ingest-inbox")
        elif not leading and self._task is not None:
            self._task.cancel()
            self._task = None

    async def _consume(self) -> None:
        """While this hub holds the lease: every inbox entry after the position onto the tick log, in order."""
        after: str | None = None  # the position as last read or moved by this hub (None: read it again)
        warned = False
        block, inbox = str(BLOCK_MS).encode(), self.ticks.inbox.encode()
        while self.ticks.leading:
            try:
                if not self.ticks.fenced():  # a renewal overdue: appends would be refused
                    await asyncio.sleep(RETRY_S)
                    continue
                if after is None:
                    stored = await self.reader.call(b"GET", self.ticks.inbox_pos.encode())
                    after = stored.decode() if stored else "0-0"
                answer: Any = await self.reader.call(b"XREAD", b"COUNT", str(ENTRIES).encode(), b"BLOCK", block,
                                                     b"STREAMS", inbox, after.encode())
                for _, entries in answer or ():
                    after = await self._append(entries, after)
                warned = False
            except (RedisError, OSError) as exc:  # NOTLEADER, MOVED, Redis away: read the position again
                if not warned:
                    log.warning("ingest inbox not consumed (%s: %s); retrying", type(exc).__name__, exc)
                    warned = True
                after = None
                await asyncio.sleep(RETRY_S)

    async def _append(self, entries: list[Any], after: str) -> str:
        """The entries appended, each moving the position from the one before (pipelined: a refused one makes
        every later one refused too); the position after the last appended, or the first refusal raised."""
        calls = []
        for entry_id, fields in entries:
            entry = entry_id.decode()
            calls.append((entry, self._append_entry(self._decode(fields), after, entry)))
            after = entry
        self.ticks.fast.flush()
        moved = None
        failure: BaseException | None = None
        for entry, call in calls:
            try:
                await call
            except (RedisError, OSError) as exc:
                failure = failure or exc
            else:
                moved = entry if failure is None else moved
        if failure is not None:
            raise failure
        assert moved is not None
        return moved

    def _append_entry(self, ticks: list[Tick], after: str, entry: str) -> asyncio.Future[Any]:
        args = self.ticks.args_of(ticks, self.ticks.floors(ticks), after, entry)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def answered(command: bytes, answer: asyncio.Future[Any]) -> None:
            exc = RedisError("the append was cancelled") if answer.cancelled() else answer.exception()
            if isinstance(exc, NoScriptError) and command == b"EVALSHA":  # answers in order: so are the retries
                self.ticks.fast.call(b"EVAL", APPEND_SCRIPT, *args).add_done_callback(lambda a: answered(b"EVAL", a))
                return
            self.ticks.appended(args, exc, answer)
            if done.done():  # the consumer was cancelled (the lease lost, the hub stopping)
                return
            if exc is not None:
                done.set_exception(exc)
                done.exception()  # retrieved here: the consumer awaits it unless it was cancelled meanwhile
            else:
                done.set_result(answer.result())

        self.ticks.fast.call(b"EVALSHA", APPEND_SHA, *args).add_done_callback(lambda a: answered(b"EVALSHA", a))
        return done

    def _decode(self, fields: list[bytes]) -> list[Tick]:
        body = dict(zip(fields[::2], fields[1::2], strict=True)).get(b"b", b"")
        rows, ticks = self.ticks.rows, []
        for part in body.decode().split(";") if body else ():
            inst_id, price, ts, volume, detail = part.split(" ")
            row = rows.get(inst_id)
            if row is not None:  # another catalogue's name (hubs started with different settings): skipped
                ticks.append(Tick(row, float(price), float(ts), float(volume), decode_detail(detail)))
        return ticks

    async def stop(self) -> None:
        self.lead(False)
        await self.reader.aclose()
