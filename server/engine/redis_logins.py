"""Failed logins per account on Redis (issue 45): every hub counts into one hash per account.

The rule is server/core/login_throttle.py's, computed by one Lua script on Redis time so that hubs with different
clocks agree: `<prefix>login:<account>` holds `count` and `until` (epoch seconds), and expires FORGET_S after its
wait ends. While Redis cannot be reached this hub answers from its own throttle (as the limiter falls back to its
own buckets), and says so once in the log.
"""

from __future__ import annotations

import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError

from server.core.login_throttle import BASE_S, FORGET_S, FREE_FAILURES, LOCK_AFTER, LOCK_S, MAX_BACKOFF_S, LoginThrottle

log = logging.getLogger("market.engine")

# KEYS[1]: the account's hash; ARGV[1]: wait | fail | ok; ARGV[2..7]: the rule's constants.
# Answers {locked now (0/1), seconds to wait (text: Lua numbers are floats)}.
SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
if ARGV[1] == 'ok' then
  redis.call('DEL', KEYS[1])
  return {0, '0'}
end
local free, base, most = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local lock_after, lock_s, forget_s = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if ARGV[1] == 'wait' then
  local ends = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
  return {0, tostring(math.max(0, ends - now))}
end
local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
local delay = 0
if count >= lock_after then
  delay = lock_s
elseif count >= free then
  delay = math.min(most, base * 2 ^ (count - free))
end
redis.call('HSET', KEYS[1], 'until', tostring(now + delay))
redis.call('EXPIRE', KEYS[1], math.ceil(delay + forget_s))
if count == lock_after then
  return {1, tostring(delay)}
end
return {0, tostring(delay)}
"""
RULE = (FREE_FAILURES, BASE_S, MAX_BACKOFF_S, LOCK_AFTER, LOCK_S, FORGET_S)


class RedisLogins:
    def __init__(self, client: Redis, prefix: str, local: LoginThrottle) -> None:
        self.client, self.prefix, self.local = client, prefix + "login:", local
        self.script = client.register_script(SCRIPT)
        self._warned = False

    async def wait_s(self, account: str) -> float:
        answer = await self._run(account, "wait")
        return self.local.wait_s(account) if answer is None else answer[1]

    async def failed(self, account: str) -> bool:
        answer = await self._run(account, "fail")
        return self.local.failed(account) if answer is None else answer[0]

    async def succeeded(self, account: str) -> None:
        self.local.succeeded(account)
        await self._run(account, "ok")

    async def _run(self, account: str, op: str) -> tuple[bool, float] | None:
        try:
            locked, wait = await self.script(keys=[self.prefix + account], args=[op, *RULE])
        except (RedisError, OSError) as exc:
            if not self._warned:
                self._warned = True
                log.warning("login throttle: Redis unreachable (%s); counting on this hub", type(exc).__name__)
            return None
        self._warned = False
        return bool(int(locked)), float(wait)
