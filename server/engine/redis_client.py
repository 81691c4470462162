"""Every Redis client of the engine, built from `--redis-url` in one place, on redis-py (with hiredis).

`parse_redis_url` (server/core/redis_url.py) reads the URL; the factories here turn its
`RedisTarget` into redis-py objects, so `redis://`, `rediss://` (TLS), ACL users, `unix://` and
`redis+sentinel://` reach every client the same way:

- `async_client`: a `redis.asyncio.Redis` on a bounded, blocking pool (probes, the lease, pub/sub,
  XREVRANGE). On Sentinel its connections ask the Sentinels for the master whenever they (re)connect
  and drop themselves on a READONLY reply (a demoted master), which is how a failover is followed.
- `sync_client`: a `redis.Redis` for start-up and the CLI (PING, the epoch, `keys revoke`).
- `AutoPipeline`: the hot paths (the GCRA script per keyed request, tick-log appends, XREAD). One
  connection opened by the library (its `Connection`: connect, AUTH/HELLO, SELECT, TLS, Sentinel
  discovery); then the connection's transport delivers to a small asyncio protocol that feeds hiredis's
  `Reader` (the library's own parser), and commands are packed by `hiredis.pack_command`. What this module
  adds is only the scheduling: no RESP code of ours. The transport is handed over by subclasses of
  redis-py's public connection classes (`_HandOver`): the streams they read are the ones
  `AbstractConnection` keeps for its subclasses, and nothing outside them touches a private attribute.

Why auto-pipelining over the library's connection and not `Redis.evalsha`: a redis-py command costs a
pool checkout, a retry wrapper, a timeout context and a response callback, per call; a keyed request
would pay that. Here every command issued during one event-loop iteration goes out in one write, and each
reply is handed to its future in the callback that received its bytes (what Centrifugo's Redis engine gets
from rueidis). Why not the connection's own `send_packed_command`/`read_response`: their asyncio streams, a
writer task and a reader task cost ~157,000 instructions per round trip in process against ~67,000 here
(bench/README.md, "Redis client"), about 5 us per keyed request at the ~17 a round trip carries under wrk.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterator
from typing import Any, cast

import hiredis
import redis
import redis.sentinel
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    ConnectionPool,
    DefaultParser,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import (
    Sentinel,
    SentinelConnectionPool,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ReadOnlyError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.core.redis_url import RedisTarget, parse_redis_url

__all__ = ["AutoPipeline", "RedisTarget", "async_client", "parse_redis_url", "sync_client"]

_MORE = object()  # what hiredis's Reader.gets answers while a reply is incomplete
POOL_SIZE = 32  # connections per async client; a caller beyond it waits for a free one (at most the timeout)


def _target(url: str | RedisTarget) -> RedisTarget:
    return url if isinstance(url, RedisTarget) else parse_redis_url(url)


def _connection_kwargs(t: RedisTarget, timeout: float | None, connect_timeout: float) -> dict[str, Any]:
    """Keyword arguments of a data-node connection (redis-py's, sync and async alike)."""
    kwargs: dict[str, Any] = {"db": t.db, "username": t.username, "password": t.password,
                              "socket_timeout": timeout, "socket_connect_timeout": connect_timeout}
    if t.tls:
        tls = dict(t.tls_options)
        if tls.get("ssl_cert_reqs") == "none":
            tls.setdefault("ssl_check_hostname", False)  # no certificate checked: no name to check either
        kwargs.update(tls)
    return kwargs


def _sentinel_kwargs(t: RedisTarget, timeout: float) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout,
                              "username": t.sentinel_username, "password": t.sentinel_password}
    if t.tls:
        kwargs["ssl"] = True
        kwargs.update(t.tls_options)
    return kwargs


class _SentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """Sentinel's master pool, bounded and blocking like the plain one; closing it closes the Sentinel clients."""

    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        if inuse_connections:  # the client is closing (a master change passes False)
            for node in self.sentinel_manager.sentinels:
                await node.connection_pool.disconnect()


def _pool(t: RedisTarget, timeout: float | None, connect_timeout: float, size: int, **extra: Any) -> ConnectionPool:
    kwargs = _connection_kwargs(t, timeout, connect_timeout) | extra
    kwargs["retry"] = Retry(NoBackoff(), 0)  # fail fast: callers fall back or retry on their own schedule
    wait = timeout if timeout is not None else connect_timeout  # for a free connection of the pool
    if t.sentinel:
        sentinel = Sentinel(list(t.sentinels), sentinel_kwargs={**_sentinel_kwargs(t, connect_timeout),
                                                                "retry": Retry(NoBackoff(), 0)})
        return _SentinelPool(t.service, sentinel, ssl=t.tls, max_connections=size, timeout=wait, **kwargs)
    if t.path is not None:
        kwargs.setdefault("connection_class", UnixDomainSocketConnection)
        return BlockingConnectionPool(path=t.path, max_connections=size, timeout=wait, **kwargs)
    kwargs.setdefault("connection_class", SSLConnection if t.tls else Connection)
    return BlockingConnectionPool(host=t.host, port=t.port, max_connections=size, timeout=wait, **kwargs)


def async_client(url: str | RedisTarget, timeout: float, size: int = POOL_SIZE) -> Redis:
    """An asyncio client: connect and command timeouts of `timeout` seconds, no retries, `size` connections."""
    return Redis.from_pool(cast(Any, _pool(_target(url), timeout, timeout, size)))


@contextlib.contextmanager
def sync_client(url: str | RedisTarget, timeout: float = 2.0) -> Iterator[redis.Redis]:
    """A blocking client for start-up and the CLI, closed (with its Sentinel clients) on exit."""
    t = _target(url)
    kwargs = _connection_kwargs(t, timeout, timeout)
    sentinel: redis.sentinel.Sentinel | None = None
    if t.sentinel:
        sentinel = redis.sentinel.Sentinel(list(t.sentinels), sentinel_kwargs=_sentinel_kwargs(t, timeout))
        client: redis.Redis = sentinel.master_for(cast(str, t.service), ssl=t.tls, **kwargs)
    elif t.path is not None:
        client = redis.Redis(unix_socket_path=t.path, **kwargs)
    else:
        client = redis.Redis(host=cast(str, t.host), port=t.port, ssl=t.tls, **kwargs)
    try:
        yield client
    finally:
        client.close()
        if sentinel is not None:
            sentinel.close()


class _HandOver(AbstractConnection):
    """A redis-py connection that, once the library's own `connect()` has run (TLS, AUTH/HELLO, SELECT, on
    Sentinel the master's address), gives its transport to a protocol of ours. It reads the stream pair
    that redis-py's `AbstractConnection` declares (`__slots__`) for its subclasses, which its own
    `Connection._connect` and `UnixDomainSocketConnection._connect` fill: the one place this module relies
    on the library's insides, checked by tests/contract/test_redis_client.py against real servers."""

    async def hand_over(self, protocol: asyncio.Protocol) -> bytes:
        """Point the open transport at `protocol`; the bytes the library's stream had already buffered."""
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            raise RedisConnectionError("Redis connection lost while connecting")
        writer.transport.set_protocol(protocol)
        reader.feed_eof()  # the stream gets nothing more: reading it now returns only what it holds
        return await reader.read()

    def transport(self) -> asyncio.Transport:
        if self._writer is None:
            raise RedisConnectionError("Redis connection is not open")
        return cast(asyncio.Transport, self._writer.transport)


class _TcpHandOver(_HandOver, Connection):
    pass


class _TlsHandOver(_HandOver, SSLConnection):
    pass


class _UnixHandOver(_HandOver, UnixDomainSocketConnection):
    pass


class _SentinelHandOver(_HandOver, SentinelManagedConnection):
    pass


class _SentinelTlsHandOver(_HandOver, SentinelManagedSSLConnection):
    pass


def _hand_over_class(t: RedisTarget) -> type[_HandOver]:
    """The connection class of `t`'s kind (what redis-py's pools would pick), able to hand over its transport."""
    if t.sentinel:
        return _SentinelTlsHandOver if t.tls else _SentinelHandOver
    if t.path is not None:
        return _UnixHandOver
    return _TlsHandOver if t.tls else _TcpHandOver


class _Session(asyncio.Protocol):
    """One connection, once the library has opened it (TLS, AUTH/HELLO, SELECT, on Sentinel the master's
    address): its transport then delivers to this protocol, where hiredis's `Reader` (the parser the library
    itself uses) cuts the bytes into replies, each handed to the next owed future. No reader task, no stream
    layers: a reply is handed over in the callback that received its bytes."""

    def __init__(self, pipeline: AutoPipeline, conn: _HandOver) -> None:
        self.pipeline = pipeline
        self.conn = conn
        self.owed: deque[asyncio.Future[Any]] = deque()
        self.replies = 0  # replies read so far (the watchdog checks that it moves)
        self.watchdog: asyncio.TimerHandle | None = None
        self.broken = False
        self.demotion_is_loss = pipeline.target.sentinel  # READONLY from a Sentinel master: it was demoted
        self.transport = conn.transport()
        # error replies become the library's exception classes (NoScriptError, ReadOnlyError, ...): the
        # parser class's public `parse_error`, as the library's hiredis parser passes it to its Reader
        self.parser = hiredis.Reader(protocolError=InvalidResponse, replyError=DefaultParser.parse_error,
                                     notEnoughData=_MORE)

    async def start(self) -> None:
        """Take the transport over from the library's stream."""
        left = await self.conn.hand_over(self)  # nothing is owed yet: bytes already buffered are a protocol error
        if left:
            self.data_received(left)

    def data_received(self, data: bytes) -> None:
        parser, owed = self.parser, self.owed
        parser.feed(data)
        while True:
            try:
                reply = parser.gets()
            except Exception as exc:  # the library's InvalidResponse: bytes that are not RESP
                self.pipeline._break(self, exc)
                return
            if reply is _MORE:
                return
            self.replies += 1
            if not owed:
                self.pipeline._break(self, RedisConnectionError("Redis sent a reply nobody asked for"))
                return
            fut = owed.popleft()
            if isinstance(reply, ResponseError):
                if self.demotion_is_loss and isinstance(reply, ReadOnlyError):  # as SentinelManagedConnection
                    owed.appendleft(fut)
                    self.pipeline._break(self, RedisConnectionError("The previous master is now a slave"))
                    return
                if not fut.done():
                    fut.set_exception(reply)
            elif not fut.done():
                fut.set_result(reply)

    def eof_received(self) -> bool:
        return False  # the transport closes itself: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.pipeline._break(self, RedisConnectionError(f"Redis connection lost: {exc or 'closed by the server'}"))


class AutoPipeline:
    """Commands of one loop iteration in one write, on one connection the library opened (see the module doc).

    `call(*args)` returns a future of the reply in RESP2 shapes (callers read XREAD's nested lists; redis-py 8
    speaks RESP3 by default elsewhere): the value, a `ResponseError` raised (e.g. NoScriptError,
    the script's own error), or a redis-py `ConnectionError`/`TimeoutError` when the connection fails or
    no reply arrives for `timeout` seconds while replies are owed (then every owed reply fails at once
    and the next call connects again: on Sentinel, to whatever master the Sentinels name then).
    Invariants: replies arrive in the order commands were written, so `_Session.owed` is a FIFO; commands are
    written only by `flush` (a callback after the callers of one loop iteration, or a caller that wants its
    commands out now) and replies read only by the session's `data_received`."""

    def __init__(self, url: str | RedisTarget, timeout: float, connect_timeout: float | None = None) -> None:
        self.target = _target(url)
        self.timeout = timeout
        # connecting takes a few round trips (TLS, AUTH, SELECT; on Sentinel first the Sentinels), each one
        # also waiting for whatever else runs on the loop: a caller off the request path can allow more
        self.connect_timeout = connect_timeout or timeout * (4 if self.target.sentinel else 1)
        # socket_timeout None: no timeout context per reply; the watchdog bounds every wait instead
        self._pool = _pool(self.target, None, self.connect_timeout, 1, protocol=2,
                           connection_class=_hand_over_class(self.target))
        self._queued: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        self._scheduled = False
        self._connecting: asyncio.Task[None] | None = None
        self._session: _Session | None = None
        self._closed = False

    def call(self, *args: Any) -> asyncio.Future[Any]:
        """The future of the reply to one command (its arguments)."""
        if self._closed:
            raise RedisConnectionError("the Redis client is closed")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._queued.append((args, fut))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self.flush)  # after every caller of this loop iteration
        return fut

    def flush(self) -> None:
        """Write every queued command now, in one write (connecting first if there is no connection)."""
        self._scheduled = False
        if not self._queued or self._closed:
            return
        session = self._session
        if session is None:
            if self._connecting is None:
                self._connecting = asyncio.get_running_loop().create_task(self._connect(), name="redis-connect")
            return  # written once connected
        batch, self._queued = self._queued, []
        owed = session.owed
        parts = []
        for args, fut in batch:
            if fut.done():  # a caller that gave up
                continue
            parts.append(hiredis.pack_command(args))
            owed.append(fut)
        if not parts:
            return
        if session.watchdog is None:
            session.watchdog = asyncio.get_running_loop().call_later(self.timeout, self._check, session,
                                                                     session.replies)
        try:
            session.transport.write(parts[0] if len(parts) == 1 else b"".join(parts))
        except (RuntimeError, OSError) as exc:  # a transport already closing
            self._break(session, exc)

    async def _connect(self) -> None:
        conn = cast(_HandOver, self._pool.make_connection())
        try:
            try:
                await asyncio.wait_for(conn.connect(), self.connect_timeout)
            except TimeoutError:
                raise RedisTimeoutError(f"no answer from Redis in {self.connect_timeout} s while connecting") from None
            if self._closed:
                raise RedisConnectionError("the Redis client is closed")
            session = _Session(self, conn)
            await session.start()
            if not session.broken:  # buffered bytes nobody asked for broke it: the next flush connects again
                self._session = session
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await conn.disconnect(nowait=True)
            queued, self._queued = self._queued, []
            _fail([fut for _, fut in queued], exc if isinstance(exc, (RedisError, OSError)) else
                  RedisConnectionError(f"connecting to Redis failed: {exc!r}"))
            if not isinstance(exc, (RedisError, OSError)):
                raise
        finally:
            self._connecting = None
        self.flush()

    def _check(self, session: _Session, replies_then: int) -> None:
        session.watchdog = None
        if session.broken or not session.owed:
            return
        if session.replies == replies_then:  # replies were owed a whole timeout and none came
            self._break(session, RedisTimeoutError(f"no reply from Redis in {self.timeout} s"))
            return
        session.watchdog = asyncio.get_running_loop().call_later(self.timeout, self._check, session,
                                                                 session.replies)

    def _break(self, session: _Session, exc: BaseException) -> None:
        if session.broken:
            return
        session.broken = True
        if self._session is session:
            self._session = None
        if session.watchdog is not None:
            session.watchdog.cancel()
        error = exc if isinstance(exc, RedisError) else RedisConnectionError(f"Redis connection lost: {exc}")
        _fail(list(session.owed), error)
        session.owed.clear()
        task = asyncio.get_running_loop().create_task(session.conn.disconnect(nowait=True))
        task.add_done_callback(_quiet)

    async def aclose(self) -> None:
        self._closed = True
        if self._connecting is not None:
            self._connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connecting
        _fail([fut for _, fut in self._queued], RedisConnectionError("the Redis client is closed"))
        self._queued.clear()
        if self._session is not None:
            self._break(self._session, RedisConnectionError("the Redis client is closed"))
        with contextlib.suppress(Exception):
            await self._pool.disconnect()


def _fail(futures: list[asyncio.Future[Any]], exc: BaseException) -> None:
    for fut in futures:
        if not fut.done():
            fut.set_exception(exc)


def _quiet(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a failed close of a broken connection is not worth a traceback
