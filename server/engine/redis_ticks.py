"""The Redis tick log: one hub leads the feed (a lease), every hub applies ticks from one Redis Stream.

Keys (after the prefix): `feed:lease` (the leader's node id, PX 3000, renewed every second),
`ticks` (the stream, about MAXLEN entries, one per tick batch), `ticks:seq` (hash: instrument id ->
last seq, so a new leader continues every instrument's seq), `ticks:epoch` (the epoch of this
history: set once, kept while the keys survive).

Only the lease holder appends (the script refuses anyone else: a deposed leader cannot write); the
seq of each tick is taken in the same script, so seq is gap-free and never reused. Every hub, the
leader included, reads the stream (XREAD BLOCK) and hands each batch, with its seqs, to the hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import NoScriptError, RedisError

from server.core.redis_url import RedisTarget
from server.engine import EngineUnavailable, settle
from server.engine.redis_client import AutoPipeline, async_client, sync_client
from server.market.tick import DETAIL_FIELDS, DETAIL_FIELDS_BEFORE, Tick, TickDetail, detail_of, detail_text

log = logging.getLogger("market.ticks")

LEASE_MS = 3000
RENEW_S = 1.0
RETRY_S = 0.1  # a renewal that got no answer is sent again after this, while the fence holds
CLIENT_TIMEOUT_S = 0.5  # the lease client's connect and command timeout
BLOCK_MS = 1000
MAXLEN = 10_000  # tick batches kept (approximately): at 4 batches/s about 40 minutes
JOIN_SCAN = 2000  # batches a joining hub reads back for each instrument's newest tick
STALE_S = 5.0  # a hub that has not heard from the stream for this long is not ready
JOIN_RETRY_S = 10.0  # a joining hub asks again this long (a Sentinel failover, a slow link) before it gives up
JOIN_PAUSE_S = 0.25
# a leader appends only while its last successful renewal was sent less than this ago: its lease then has at
# least LEASE_MS - FENCE_S left, so it stops feeding before the lease can pass even if its renewals hang or its
# loop stalls (the append script's lease check is the fence in Redis; this is the leader's own side of it)
FENCE_S = LEASE_MS / 1000 - 1.0
CONNECT_S = 2.0  # the append and read connections are off the request path: a busy start-up loop must not fail them

# KEYS: lease, seq hash, stream, epoch, replid, seqfloor, inbox, inbox position. ARGV: node, maxlen, epoch, highest,
# from, to (an inbox entry's: the position must be `from`, and becomes `to`, the entry deleted; '' for the feed's
# batches, server/engine/redis_inbox.py), then per tick: id,
# price, ts, volume, floor, detail (detail: a futures tick's board fields, `encode_detail`; floor: the leader's
# last applied seq of that instrument; a Redis that lost the hash,
# restarted empty, continues from there instead of from 1, and gets the epoch back: clients see no reset;
# highest: the highest seq of any instrument the leader knows of). Fenced: only the lease holder appends, checked
# in this same atomic step. A failover may have lost the newest entries, which hubs had read and delivered, and
# the new leader may not have read them: every seq moves on by SEQ_JUMP, so lost entries become a gap, never
# reused numbers (docs/scaling.md, "No seq names two ticks"). A failover is a master whose replication id is not
# the one the stream was last appended under, or, with no id recorded at all, a master that was promoted (it has
# a secondary replication id; a Redis that started empty has none): a replica promoted before its first sync
# finished has none of the keys, so the jump is from the highest seq the leader knows (the seqfloor key: every
# instrument's seq is above it; the leader's floors may be behind what clients saw, but by less than SEQ_JUMP).
# Returns the seqs it gave, in tick order (the leader's next floors).
SEQ_JUMP = 1_000_000
TICK_ARGS = 6  # each tick's arguments: id, price, ts, volume, floor, detail (the script's stride)
APPEND_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('NOTLEADER lease lost') end
if ARGV[5] ~= '' and (redis.call('GET', KEYS[8]) or '0-0') ~= ARGV[5] then
  return redis.error_reply('MOVED the inbox position moved')
end
redis.call('SET', KEYS[4], ARGV[3], 'NX')
local info = redis.call('INFO', 'replication')
local replid = string.match(info, 'master_replid:(%w+)')
local under = redis.call('GET', KEYS[5])
if under ~= replid then
  if under or string.match(info, 'master_replid2:(%w+)') ~= string.rep('0', 40) then
    local all = redis.call('HGETALL', KEYS[2])
    for j = 1, #all, 2 do redis.call('HINCRBY', KEYS[2], all[j], SEQ_JUMP) end
    local least = math.max(tonumber(redis.call('GET', KEYS[6]) or '0'), tonumber(ARGV[4]))
    redis.call('SET', KEYS[6], least + SEQ_JUMP)
  end
  redis.call('SET', KEYS[5], replid)
end
local least = tonumber(redis.call('GET', KEYS[6]) or '0')
local parts = {}
local seqs = {}
for i = 7, #ARGV, TICK_ARGS do
  local seq = redis.call('HINCRBY', KEYS[2], ARGV[i], 1)
  local floor = math.max(tonumber(ARGV[i + 4]), least)
  if seq <= floor then
    seq = floor + 1
    redis.call('HSET', KEYS[2], ARGV[i], seq)
  end
  parts[#parts + 1] = ARGV[i] .. ' ' .. ARGV[i + 1] .. ' ' .. ARGV[i + 2] .. ' ' .. ARGV[i + 3] .. ' ' .. seq .. ' '
    .. ARGV[i + 5]
  seqs[#seqs + 1] = seq
end
if #parts > 0 then redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'b', table.concat(parts, ';')) end
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[8], ARGV[6])
  redis.call('XDEL', KEYS[7], ARGV[6])
end
return seqs
""".replace("SEQ_JUMP", str(SEQ_JUMP)).replace("TICK_ARGS", str(TICK_ARGS))

APPEND_SCRIPT = APPEND_LUA.encode()
APPEND_SHA = hashlib.sha1(APPEND_SCRIPT).hexdigest().encode()
HEAD_ARGS = 15  # the append call's arguments before the ticks: numkeys, 8 keys, node, maxlen, epoch, highest, from, to
HIGHEST_ARG = HEAD_ARGS - 3

# KEYS: stream, seq hash. Where a hub joins: the stream's newest entry id (false when empty) and every seq, together.
JOIN_LUA = """
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local id = false
if newest[1] then id = newest[1][1] end
return {id, redis.call('HGETALL', KEYS[2])}
"""

RENEW_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

Replicated = list[tuple[Tick, int]]  # ticks of one batch with their seqs
NO_DETAIL = "-"


def encode_detail(detail: TickDetail | None) -> str:
    """A futures tick's board fields (SPEC 19) as one space-free token of the log's entry (`detail_text`); `-` for
    a tick without them. Every hub applies the tick with the same fields, so their quotes and snapshots agree
    byte for byte."""
    return NO_DETAIL if detail is None else detail_text(detail)


def decode_detail(token: str) -> TickDetail | None:
    if token == NO_DETAIL or token.count(",") + 1 not in (DETAIL_FIELDS_BEFORE, DETAIL_FIELDS):
        return None
    return detail_of(token)


def shared_epoch(url: str | RedisTarget, prefix: str, proposed: str) -> str:
    """The epoch of the stream's history: ours if there was none (start-up, before anything is served)."""
    with sync_client(url, 2.0) as client:
        client.set(prefix + "ticks:epoch", proposed, nx=True)
        value: Any = client.get(prefix + "ticks:epoch")
        return value.decode() if value else proposed


class RedisTicks:
    """The Redis engine's tick bus, tick log and resume-history source (server/engine/__init__.py)."""

    shared = True  # every hub on this prefix applies the same stream

    def __init__(self, url: str | RedisTarget, prefix: str, node: str, ids: list[str]) -> None:
        self.node = node
        self.epoch = ""  # the hub's (shared) epoch, set by the hub before start
        self.ids = ids
        self.rows = {inst_id: row for row, inst_id in enumerate(ids)}
        self.lease, self.seqs, self.stream = prefix + "feed:lease", prefix + "ticks:seq", prefix + "ticks"
        self.epoch_key = prefix + "ticks:epoch"
        self.replid_key, self.seqfloor_key = prefix + "ticks:replid", prefix + "ticks:seqfloor"
        self.inbox, self.inbox_pos = prefix + "ingest:inbox", prefix + "ingest:inbox:pos"  # redis_inbox.py
        self.client = async_client(url, CLIENT_TIMEOUT_S, size=4)  # the lease, the joining reads, the hand-over
        # appends and reads go through auto-pipelined connections (redis_client.py): a redis-py command
        # costs far more CPU, paid before every batch reached any hub (bench/README.md, "Redis client").
        # The reader has its own connection: a blocking XREAD must not trip the command timeout.
        self.fast = AutoPipeline(url, 0.5, connect_timeout=CONNECT_S)
        self.reader = AutoPipeline(url, BLOCK_MS / 1000 + 1.0, connect_timeout=CONNECT_S)
        self.renew_script = self.client.register_script(RENEW_LUA)
        self.leading = False
        self._renewed = 0.0  # when the last successful take or renewal of the lease was sent (monotonic)
        self.heard = time.monotonic()  # last time the reader got an answer from the stream
        self.lag = 0.0  # age of the newest batch applied, when it was applied
        # the highest seq the log gave each row for this hub's appends: a floor too, so a Redis that restarted
        # empty before this hub read its own last batch back does not number that batch's seqs again (other
        # hubs may have read and sent them). Batches in flight together (within one round trip) do not see
        # each other's seqs here: only a restart inside that window could number one of them again.
        self._assigned = [0] * len(ids)
        # the highest seq of any instrument this hub knows (joined at, read, given): the append script's jump
        # after a failover to a replica that has none of the keys starts above it
        self._highest = 0
        self._seen = [0] * len(ids)  # each row's last seq this hub joined at or read: its applied seq (floors)
        self.lead_listeners: list[Callable[[bool], None]] = []  # told of lease changes after `on_lead`
        self._not_appended = 0  # batches refused or lost since the last one appended (one warning for them all)
        self._last = "$"  # the stream entry this hub has read up to (load_seqs sets where it joins)
        self._tasks: list[asyncio.Task[None]] = []
        self._lease_tried = asyncio.Event()  # set after the first attempt to take the lease

    async def lease_tried(self, timeout: float = 2.0) -> None:
        """Wait (bounded) for the first attempt at the feed lease: a lone hub leads before it is ready."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._lease_tried.wait(), timeout)

    async def _joining(self, what: str, ask: Callable[[], Any]) -> Any:
        """A read of a hub that starts: asked again for JOIN_RETRY_S while Redis does not answer (a failover in
        progress, a lost packet), one warning line; then EngineUnavailable (one line from the CLI, exit 1)."""
        deadline = time.monotonic() + JOIN_RETRY_S
        warned = False
        while True:
            try:
                return await ask()
            except (RedisError, OSError) as exc:
                if time.monotonic() >= deadline:
                    raise EngineUnavailable(f"--engine redis: could not read the tick log ({what}) for "
                                            f"{JOIN_RETRY_S:g} s: {type(exc).__name__}: {exc}") from None
                if not warned:
                    log.warning("joining the tick log: %s failed (%s); asking again for up to %g s", what,
                                type(exc).__name__, JOIN_RETRY_S)
                    warned = True
                await asyncio.sleep(JOIN_PAUSE_S)

    async def load_seqs(self) -> dict[str, int]:
        """Where this hub joins: it reads every entry after the stream's last one now (so nothing appended
        from here on, by anyone, is missed) and continues every instrument's seq from the hash."""
        # one atomic read: the append script bumps the hash and adds the entry in one step, so the seqs read
        # here are exactly those of the entries up to `_last`; read apart, a batch appended in between was in the
        # seqs and then read again from the stream (applied twice: its volume counted twice, its seq sent twice)
        answer: Any = await self._joining("the stream's newest entry and the seqs", lambda: self.client.eval(
            JOIN_LUA, 2, self.stream, self.seqs))
        newest, flat = answer
        self._last = newest.decode() if newest else "0-0"
        seqs = {flat[i].decode(): int(flat[i + 1]) for i in range(0, len(flat), 2)}
        self._highest = max(self._highest, *seqs.values(), 0)
        for inst_id, seq in seqs.items():
            if inst_id in self.rows:
                self._seen[self.rows[inst_id]] = seq
        return seqs

    async def last_ticks(self, entries: int = JOIN_SCAN) -> Replicated:
        """The newest tick of each instrument among the stream's last `entries` batches (a joining hub
        shows the prices and times every other hub shows, not its own start-up ones), with its own seq.

        The entries come newest first, but a batch holds its ticks in feed order, several of one instrument
        among them (ticks a millisecond apart, or in the same one): an instrument's newest tick is the one with
        the highest seq, its last in the newest batch that has it, never the first (issue 44: a restarted hub
        named seq N with the price of N-1)."""
        newest: dict[int, tuple[Tick, int]] = {}
        if self._last == "0-0":
            return []
        # up to where this hub joins: entries after it come through the reader, and must not be applied twice
        answer: Any = await self._joining("the newest ticks", lambda: self.client.xrevrange(
            self.stream, max=self._last, count=entries))
        for _, fields in answer:
            for tick, seq in self._decode(fields[b"b"]):
                held = newest.get(tick.row)
                if held is None or seq > held[1]:
                    newest[tick.row] = (tick, seq)
            if len(newest) == len(self.ids):
                break
        return sorted(newest.values(), key=lambda pair: pair[0].ts)

    async def tail(self, enough: Callable[[list[int], float], bool], page: int = 500) -> list[Replicated]:
        """The resume history of a joining hub: the batches up to where it joins (`load_seqs`), oldest
        first, read backwards a page at a time until `enough(ticks per instrument, seconds spanned)` or
        the stream's start. Best effort: Redis unreachable gives what was read (resumes get snapshots)."""
        batches: list[Replicated] = []
        counts = [0] * len(self.ids)
        newest_ms: int | None = None
        bound = self._last  # inclusive at first, then "(id": before the oldest read so far
        try:
            while bound != "0-0":
                answer: Any = await self.client.xrevrange(self.stream, max=bound, count=page)
                for _, fields in answer:
                    batch = self._decode(fields[b"b"])
                    batches.append(batch)
                    for tick, _ in batch:
                        counts[tick.row] += 1
                if not answer:
                    break
                oldest = answer[-1][0].decode()
                newest_ms = newest_ms if newest_ms is not None else int(answer[0][0].decode().split("-")[0])
                if len(answer) < page or enough(counts, (newest_ms - int(oldest.split("-")[0])) / 1000):
                    break
                bound = "(" + oldest
        except (RedisError, OSError) as exc:
            log.warning("resume history not loaded from the tick stream (%s)", type(exc).__name__)
        batches.reverse()
        return batches

    def start(self, on_batch: Callable[[Replicated], None], on_lead: Callable[[bool], None]) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read(on_batch), name="ticks-read"),
                       loop.create_task(self._hold_lease(on_lead), name="feed-lease")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await settle(list(self._tasks), 1.0)
        if self.leading:  # hand over at once instead of after the lease expires
            await settle([self.client.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return "
                                           "redis.call('DEL', KEYS[1]) end return 0", 1, self.lease, self.node)], 1.0)
        await settle([self.fast.aclose(), self.reader.aclose(), self.client.aclose()], 1.0)

    def healthy(self) -> bool:
        return time.monotonic() - self.heard < STALE_S and self.lag < STALE_S

    # --- leader ---------------------------------------------------------------------
    def fenced(self) -> bool:
        """Is the lease sure to be ours for a while yet? (its last renewal was sent under FENCE_S ago)"""
        return self.leading and time.monotonic() - self._renewed < FENCE_S

    def append(self, ticks: list[Tick], floors: list[int]) -> None:
        """From the feed (synchronous): the script call is written on the auto-pipelined connection at once, in
        feed order; its answer is handled by `_appended`. No queue and
        no writer task in between (one loop iteration less per batch), and no batch waits for the previous
        one's answer (the connection keeps them in order)."""
        if not (ticks and self.fenced()):  # a renewal overdue: stop before the lease passes
            return
        self._send(b"EVALSHA", APPEND_SHA, self.args_of(ticks, floors, "", ""))
        self.fast.flush()  # written now: the batch's round trip starts in the feed's own call

    def args_of(self, ticks: list[Tick], floors: list[int], after: str, entry: str) -> list[str | int]:
        """The append script's arguments (after EVALSHA and its SHA); `after`, `entry`: an inbox entry's, or ''."""
        assigned, highest = self._assigned, self._highest
        args: list[str | int] = [8, self.lease, self.seqs, self.stream, self.epoch_key, self.replid_key,
                                 self.seqfloor_key, self.inbox, self.inbox_pos, self.node, MAXLEN, self.epoch, 0,
                                 after, entry]
        for t, floor in zip(ticks, floors, strict=True):
            floor = max(floor, assigned[t.row])
            highest = max(highest, floor)
            args += [self.ids[t.row], repr(t.price), repr(t.ts), repr(t.volume), floor, encode_detail(t.detail)]
        args[HIGHEST_ARG] = self._highest = highest
        return args

    def _send(self, command: bytes, script: bytes, args: list[str | int]) -> None:
        try:
            answer = self.fast.call(command, script, *args)
        except (RedisError, OSError) as exc:  # the client is closed (stopping)
            log.warning("tick batch not appended (%s: %s)", type(exc).__name__, exc)
            return
        answer.add_done_callback(functools.partial(self._appended, command, args))

    def floors(self, ticks: list[Tick]) -> list[int]:
        """Each tick's instrument's seq as this hub last joined at or read it (its applied seq)."""
        return [self._seen[t.row] for t in ticks]

    def _appended(self, command: bytes, args: list[str | int], answer: asyncio.Future[Any]) -> None:
        if answer.cancelled():
            return
        exc = answer.exception()
        if isinstance(exc, NoScriptError) and command == b"EVALSHA":  # a restarted Redis forgot the script
            self._send(b"EVAL", APPEND_SCRIPT, args)  # answers come in order: so do these retries
            return
        self.appended(args, exc, answer)

    def appended(self, args: list[str | int], exc: BaseException | None, answer: asyncio.Future[Any]) -> None:
        """An append's answer: the seqs it gave are this hub's floors; a refusal is logged once in a row."""
        if exc is not None:  # NOTLEADER (a lost lease), Redis away: one warning until a batch is appended again
            self._not_appended += 1
            if self._not_appended == 1:
                log.warning("tick batch not appended (%s: %s)", type(exc).__name__, exc)
            return
        if self._not_appended:
            log.info("tick batches appended again (%d not appended)", self._not_appended)
            self._not_appended = 0
        assigned, rows = self._assigned, self.rows
        for i, seq in enumerate(answer.result()):
            row = rows[str(args[HEAD_ARGS + TICK_ARGS * i])]
            assigned[row] = max(assigned[row], int(seq))
            self._highest = max(self._highest, int(seq))

    async def _hold_lease(self, on_lead: Callable[[bool], None]) -> None:
        retrying = False
        while True:
            sent = time.monotonic()
            try:
                if self.leading:
                    held = bool(await self.renew_script(keys=[self.lease], args=[self.node, LEASE_MS]))
                else:
                    held = bool(await self.client.set(self.lease, self.node, nx=True, px=LEASE_MS))
            except (RedisError, OSError) as exc:
                if self.fenced():  # no answer (a lost packet, a slow link or loop), the lease surely still ours:
                    # ask again instead of giving it up, which stopped the feed until the lease expired (3 s: nobody
                    # else can take it before). Appends stop at FENCE_S all the same; the lease is given up at most
                    # FENCE_S + CLIENT_TIMEOUT_S (2.5 s) after the last renewal was sent, before it can pass.
                    if not retrying:
                        log.warning("feed lease renewal got no answer (%s); asking again while the lease is surely "
                                    "ours node=%s", type(exc).__name__, self.node)
                        retrying = True
                    await asyncio.sleep(RETRY_S)
                    continue
                held = False
            if retrying and held:
                log.info("feed lease renewed again node=%s", self.node)
            retrying = False
            if held:
                self._renewed = sent  # the lease runs LEASE_MS from when Redis got this: later than `sent`
            if held != self.leading:
                self.leading = held
                log.info("feed lease %s node=%s", "taken: this hub runs the feed" if held else "lost", self.node)
                on_lead(held)
                for listener in self.lead_listeners:
                    listener(held)
            self._lease_tried.set()
            await asyncio.sleep(RENEW_S)

    # --- every hub ------------------------------------------------------------------
    async def _read(self, on_batch: Callable[[Replicated], None]) -> None:
        last = self._last
        warned = False
        block, stream = str(BLOCK_MS).encode(), self.stream.encode()
        while True:
            try:
                answer: Any = await self.reader.call(b"XREAD", b"COUNT", b"100", b"BLOCK", block, b"STREAMS", stream,
                                                     last)
            except (RedisError, OSError) as exc:
                if not warned:
                    log.warning("tick stream unreachable (%s); retrying", type(exc).__name__)
                    warned = True
                await asyncio.sleep(0.5)
                continue
            if warned:
                log.info("tick stream reachable again")
                warned = False
            self.heard = time.monotonic()
            for _, entries in answer or ():  # None: BLOCK ran out
                for entry_id, fields in entries:
                    last = entry_id.decode()
                    self.lag = max(0.0, time.time() - int(last.split("-")[0]) / 1000)
                    body = dict(zip(fields[::2], fields[1::2], strict=True))[b"b"]
                    on_batch(self._decode(body))

    def _decode(self, body: bytes) -> Replicated:
        out: Replicated = []
        highest = self._highest
        for part in body.decode().split(";"):
            inst_id, price, ts, volume, number, *rest = part.split(" ")  # entries before SPEC 19 have no detail
            seq = int(number)
            if seq > highest:
                highest = seq
            row = self.rows.get(inst_id)
            if row is not None:
                self._seen[row] = seq
                detail = decode_detail(rest[0]) if rest else None
                out.append((Tick(row, float(price), float(ts), float(volume), detail), seq))
        self._highest = highest
        return out
