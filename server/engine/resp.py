"""A minimal pipelined Redis client (RESP2) for the hot paths: the GCRA script and the tick log (appends, XREAD).

Why not redis-py here: its asyncio client spends about 200 us of CPU per command on this machine
(bench/limiter_cost.py), and its pipelines about 35 us per command; one keyed request costs the hub
about 10 us in all. This client keeps one connection per hub and pipelines automatically: every
command issued during one event-loop iteration goes out in one write, and replies resolve their
futures in order (what Centrifugo's Redis engine gets from rueidis' auto-pipelining). redis-py
still does everything else (pub/sub, probes, the CLI).

Invariants: replies arrive in the order commands were written, so `_waiting` is a FIFO of
futures; the connection is aborted (every waiting future fails) when no reply arrives for
`timeout` seconds while commands wait, so a caller never waits longer than that for a dead Redis.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit


class ReplyError(Exception):
    """Redis answered with an error reply (e.g. NOSCRIPT)."""


class _Incomplete(Exception):
    pass


def encode(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def parse(buf: bytes | bytearray, pos: int) -> tuple[Any, int]:
    """One reply starting at `pos`: (value, position after it), or _Incomplete."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete
    kind, line = buf[pos:pos + 1], buf[pos + 1:end]
    pos = end + 2
    if kind == b":":
        return int(line), pos
    if kind == b"+":
        return bytes(line), pos
    if kind == b"-":
        return ReplyError(line.decode(errors="replace")), pos
    if kind == b"$":
        size = int(line)
        if size < 0:
            return None, pos
        if len(buf) < pos + size + 2:
            raise _Incomplete
        return bytes(buf[pos:pos + size]), pos + size + 2
    if kind == b"*":
        count = int(line)
        if count < 0:
            return None, pos
        items = []
        for _ in range(count):
            item, pos = parse(buf, pos)
            items.append(item)
        return items, pos
    raise ConnectionError(f"unexpected reply type {kind!r} from Redis")


class _Protocol(asyncio.Protocol):
    def __init__(self, timeout: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.timeout = timeout
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._out: list[bytes] = []
        self._buf = bytearray()
        self._replies = 0  # replies received so far (the watchdog checks that it moves)
        self._watchdog: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def send(self, payload: bytes) -> asyncio.Future[Any]:
        if self.closed:
            raise ConnectionError("Redis connection closed")
        fut = self.loop.create_future()
        self._waiting.append(fut)
        if not self._out:
            self.loop.call_soon(self._flush)
        self._out.append(payload)
        if self._watchdog is None:
            self._watchdog = self.loop.call_later(self.timeout, self._check_progress, self._replies)
        return fut

    def _flush(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(b"".join(self._out))
        self._out.clear()

    def _check_progress(self, replies_then: int) -> None:
        self._watchdog = None
        if not self._waiting:
            return
        if self._replies == replies_then:  # commands waited a whole timeout without one reply
            self._fail(TimeoutError(f"no reply from Redis in {self.timeout} s"))
            if self.transport is not None:
                self.transport.abort()
            return
        self._watchdog = self.loop.call_later(self.timeout, self._check_progress, self._replies)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        pos = 0
        try:
            while pos < len(self._buf):
                value, pos = parse(self._buf, pos)
                self._replies += 1
                fut = self._waiting.popleft()
                if not fut.done():
                    fut.set_result(value)
        except _Incomplete:
            pass
        except (ConnectionError, ValueError, IndexError) as exc:  # a reply we cannot read: start afresh
            self._fail(ConnectionError(f"bad reply from Redis: {exc}"))
            if self.transport is not None:
                self.transport.abort()
            return
        del self._buf[:pos]

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"Redis connection lost: {exc or 'closed'}"))

    def _fail(self, exc: Exception) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        while self._waiting:
            fut = self._waiting.popleft()
            if not fut.done():
                fut.set_exception(exc)


class RespClient:
    """One pipelined connection, opened on first use and again after it was lost."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self._proto: _Protocol | None = None
        self._connecting: asyncio.Task[_Protocol] | None = None

    async def call(self, payload: bytes) -> Any:
        """Send one encoded command (see `encode`); its reply, a ReplyError raised, or ConnectionError."""
        proto = self._proto
        if proto is None or proto.closed:
            proto = await self._connect()
        reply = await proto.send(payload)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    async def _connect(self) -> _Protocol:
        task = self._connecting
        if task is None:  # concurrent callers share one connection attempt
            task = self._connecting = asyncio.get_running_loop().create_task(self._open())
            task.add_done_callback(self._opened)
        return await asyncio.shield(task)

    def _opened(self, task: asyncio.Task[_Protocol]) -> None:
        self._connecting = None
        if not task.cancelled() and task.exception() is None:
            self._proto = task.result()

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        parts = urlsplit(self.url)
        db = _database(parts.scheme, parts.path, parts.query)
        if parts.scheme == "unix":
            connecting = loop.create_unix_connection(lambda: _Protocol(self.timeout), parts.path)
        else:
            context = ssl.create_default_context() if parts.scheme == "rediss" else None
            connecting = loop.create_connection(lambda: _Protocol(self.timeout), parts.hostname or "127.0.0.1",
                                                parts.port or 6379, ssl=context)
        _, proto = await asyncio.wait_for(connecting, self.timeout)
        setup = []
        if parts.password is not None:
            user = [unquote(parts.username).encode()] if parts.username else []
            setup.append(encode(b"AUTH", *user, unquote(parts.password).encode()))
        if db != "0":
            setup.append(encode(b"SELECT", db.encode()))
        replies = [proto.send(cmd) for cmd in setup]
        for reply in await asyncio.wait_for(asyncio.gather(*replies), self.timeout):
            if isinstance(reply, ReplyError):
                if proto.transport is not None:
                    proto.transport.abort()
                raise ConnectionError(f"Redis refused the connection set-up: {reply}")
        return proto

    def close(self) -> None:
        if self._proto is not None and self._proto.transport is not None:
            self._proto.transport.close()


def _database(scheme: str, path: str, query: str) -> str:
    """The database number of a Redis URL: ?db=N, else /N for redis(s)://, else 0."""
    db = parse_qs(query).get("db")
    if db:
        return db[0]
    return (path.lstrip("/") or "0") if scheme != "unix" else "0"
