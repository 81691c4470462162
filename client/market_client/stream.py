"""`stream()`: live quotes over `/ws/quotes` that survive disconnects.

    async for event in stream(["brent", "wti"], key="mk_...", ws_url="ws://127.0.0.1:8001/ws/quotes"):
        if isinstance(event, Tick): ...
        elif isinstance(event, Gap): ...      # ticks that could not be recovered

The key travels in the `X-SERVICE-Key` handshake header (never in the URL). After the
subscription's ack the stream yields a `Snapshot`, then `Tick`s. When the connection
breaks it reconnects with jittered exponential backoff ("full jitter": a random wait up to
min(cap, base x 2^attempt)), subscribes again and asks to resume with `since` (the last
seq seen per instrument) and `epoch`; the server replays what was missed (no snapshot), or
answers `recovered: false`, and the stream yields a `Gap` naming what was lost and then the
fresh `Snapshot`. No tick is yielded twice.

Live candles (SPEC 14): `stream(ids, candles=["1m", "1d"])` adds `CandleUpdate`s of those intervals
(`final` False while the bucket fills, True once it closed). Candle frames are not replayed on resume,
so after a reconnect the stream notices the buckets it missed and reports them as a `CandleGap`, or,
given a `backfill` (as `AsyncMarketClient.stream()` gives it), fetches them with a range query and
yields them as final `CandleUpdate`s (in `t` order, before the new connection's frame).

Heartbeats (SPEC 14): the server sends a `Heartbeat` every `--heartbeat-s` (default 5 s). Once this
stream has seen one, silence on a connection for two intervals (`heartbeat_s`, plus 10%) means the
connection is dead, whatever TCP says: the stream drops it and reconnects with resume. A heartbeat
naming a seq above the last tick seen (ticks lost on the way) does the same, so they are replayed.
`heartbeat_s=None` turns the check off.

Fatal (raised, no reconnect): a handshake refused with 401/403 (`Unauthorized`,
`Forbidden`), the subscription rejected (`StreamError`, e.g. an unknown id), a close for a
revoked key (4001) or a protocol violation (1008/1009), or `max_reconnects` exhausted.
A 429 handshake waits its `Retry-After` and tries again.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlencode

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from market_client.errors import (
    MarketError,
    ProblemError,
    RateLimited,
    StreamError,
    problem_error,
    retry_after_seconds,
)
from market_client.events import (
    CandleGap,
    CandleUpdate,
    ErrorMessage,
    Event,
    Heartbeat,
    ServerMessage,
    Snapshot,
    Subscribed,
    decoder,
)
from market_client.models import Candle
from market_client.resume import ResumeState

DEFAULT_WS_URL = "ws://127.0.0.1:8001/ws/quotes"
FATAL_CLOSE = {4001: "key revoked", 1008: "policy violation", 1009: "message too big"}
WsUrl = str | Callable[[], Awaitable[str]]
Backfill = Callable[[CandleGap], Awaitable[list[Candle]]]
SILENCE_MARGIN = 1.1  # dead after 2 heartbeat intervals plus 10% (a timer's lateness is not a death)


class _Dead(Exception):
    """This connection is to be replaced: a heartbeat named ticks it never delivered."""


class QuoteStream:
    """An async iterator of events; iterate it once. `since`, `epoch`, `reconnects` and `resumes` show its state."""

    def __init__(self, ids: Iterable[str] | None = None, *, key: str | None, ws_url: WsUrl = DEFAULT_WS_URL,
                 candles: Iterable[str] = (), heartbeat_s: float | None = 5.0, backfill: Backfill | None = None,
                 backoff_base: float = 0.25, backoff_cap: float = 10.0, max_reconnects: int | None = None,
                 open_timeout: float = 10.0, rng: random.Random | None = None, key_in_url: bool = False) -> None:
        self._state = ResumeState(ids, candles)
        self._heartbeat_s = heartbeat_s or None
        self._heartbeats = 0  # seen on this stream: the silence check is armed from the first one
        self._last_seen = 0.0  # loop time of the current connection's last message
        self._backfill = backfill
        self.dropped = {"silent": 0, "behind": 0}  # connections this stream replaced itself, and why
        self._key = key
        self._ws_url = ws_url
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._max_reconnects = max_reconnects
        self._open_timeout = open_timeout
        self._key_in_url = key_in_url  # only for servers that predate the X-SERVICE-Key handshake header
        self._rng = rng or random.Random()
        self._ws: ClientConnection | None = None
        self._closed = False
        self._req_ids = itertools.count(1)
        self.reconnects = 0  # connections opened after the first
        self.iterator = self._run()

    @property
    def epoch(self) -> str | None:
        return self._state.epoch

    @property
    def resumes(self) -> dict[str, int]:
        """How the server answered this stream's resumes: {"recovered": n, "refused": m}."""
        return dict(self._state.resumes)

    @property
    def since(self) -> dict[str, int]:
        """Last seq handed on per instrument (what a resume asks from)."""
        return dict(self._state.last)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self.iterator

    async def __anext__(self) -> Event:
        return await self.iterator.__anext__()

    async def aclose(self) -> None:
        self._closed = True
        if self._ws is not None:
            await self._ws.close()
        await self.iterator.aclose()

    async def __aenter__(self) -> QuoteStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def drop_connection(self) -> None:
        """Cut the current connection without a close handshake, as a network failure would (tests, demos)."""
        if self._ws is not None:
            self._ws.transport.abort()

    async def _run(self) -> AsyncGenerator[Event, None]:
        failures = 0  # connections in a row that delivered nothing (or ended)
        for n in itertools.count():
            if n:
                if self._max_reconnects is not None and failures > self._max_reconnects:
                    raise StreamError(f"gave up after {self._max_reconnects} reconnects in a row")
                await asyncio.sleep(self._backoff(failures))
                self.reconnects += 1
            try:
                ws = await self._connect()
            except (TimeoutError, OSError, InvalidHandshake) as exc:  # refused, reset, cut mid-handshake
                await self._before_retry(exc)
                failures += 1
                continue
            self._ws = ws
            watchdog = asyncio.create_task(self._watch_silence(ws))
            try:
                async for event in self._session(ws):
                    failures = 0
                    yield event
            except ConnectionClosed as exc:
                self._check_close(exc)
            except _Dead:
                ws.transport.abort()  # ticks lost on the way: a fresh connection resumes them
            finally:
                watchdog.cancel()
                self._ws = None
                await ws.close()
            if self._closed:
                return
            failures += 1

    def _backoff(self, failures: int) -> float:
        return self._rng.uniform(0, min(self._backoff_cap, self._backoff_base * 2 ** min(failures, 30)))

    async def _connect(self) -> ClientConnection:
        url = self._ws_url if isinstance(self._ws_url, str) else await self._ws_url()
        headers = {"X-SERVICE-Key": self._key} if self._key else {}
        if self._key_in_url and self._key:
            url += ("&" if "?" in url else "?") + urlencode({"key": self._key})
        return await connect(url, additional_headers=headers, compression=None, open_timeout=self._open_timeout,
                             max_size=2**22)

    async def _before_retry(self, exc: Exception) -> None:
        """A refused handshake: 401/403 (and any 4xx but 429) are fatal; 429 waits its Retry-After."""
        if not isinstance(exc, InvalidStatus):
            return
        response = exc.response
        headers = {k.lower(): v for k, v in response.headers.raw_items()}
        try:
            problem: Any = msgspec.json.decode(response.body or b"{}")
        except msgspec.DecodeError:
            problem = {}
        error = problem_error(response.status_code, problem if isinstance(problem, dict) else {}, headers)
        if isinstance(error, RateLimited):
            await asyncio.sleep(retry_after_seconds(headers, error.problem) or 1.0)
        elif isinstance(error, ProblemError) and 400 <= response.status_code < 500:
            raise error

    def _check_close(self, exc: ConnectionClosed) -> None:
        rcvd = exc.rcvd
        if rcvd is not None and rcvd.code in FATAL_CLOSE:
            raise StreamError(f"server closed the stream: {FATAL_CLOSE[rcvd.code]} ({rcvd.reason})", rcvd.code)

    async def _session(self, ws: ClientConnection) -> AsyncIterator[Event]:
        """One connection: subscribe (resuming), drop what precedes the ack, then hand events on."""
        state = self._state
        state.new_connection()
        messages = self._messages(ws)
        if state.needs_ids:  # candles for every instrument: the connection's first snapshot names them
            async for msg in messages:
                if isinstance(msg, Snapshot):
                    state.learn_ids(msg)
                    break
        req_id = f"c{next(self._req_ids)}"
        subscribe = state.subscribe_message(req_id)
        if subscribe is not None:
            await ws.send(subscribe.decode())
        acked = subscribe is None
        async for msg in messages:
            if acked:
                for event in state.on_message(msg):
                    if isinstance(event, CandleGap) and self._backfill is not None:
                        for filled in await self._fill(event):
                            yield filled
                    else:
                        yield event
                if state.behind:  # ticks this connection lost: resume them on a new one
                    self.dropped["behind"] += 1
                    raise _Dead
            elif isinstance(msg, Subscribed) and msg.req_id == req_id:
                acked = True
                for event in state.on_ack(msg):
                    yield event
            elif isinstance(msg, ErrorMessage) and msg.req_id == req_id:
                raise StreamError(f"subscription rejected: {msg.code}: {msg.detail}", msg.code)
            # else: the connection's first full-set snapshot and ticks sent before our subscribe took effect

    async def _messages(self, ws: ClientConnection) -> AsyncIterator[ServerMessage]:
        """The connection's messages, decoded; each one stamps `_last_seen` for the silence watchdog."""
        now = asyncio.get_running_loop().time
        while True:
            raw = await ws.recv()
            self._last_seen = now()
            try:
                msg: ServerMessage = decoder.decode(raw)
            except msgspec.DecodeError:
                continue  # a message type (or a frame) this client does not understand
            if isinstance(msg, Heartbeat):
                self._heartbeats += 1
            yield msg

    async def _watch_silence(self, ws: ClientConnection) -> None:
        """Aborts a connection silent for two heartbeat intervals (+10%) once the stream has seen a heartbeat; the
        reader then sees it closed and `_run` reconnects. A task per connection rather than a timer per message:
        the cost per tick stays one clock read."""
        if not self._heartbeat_s:
            return
        loop = asyncio.get_running_loop()
        limit = self._heartbeat_s * 2 * SILENCE_MARGIN
        self._last_seen = loop.time()
        while True:
            wait = self._last_seen + limit - loop.time() if self._heartbeats else self._heartbeat_s
            if wait <= 0:
                self.dropped["silent"] += 1
                ws.transport.abort()
                return
            await asyncio.sleep(wait)

    async def _fill(self, gap: CandleGap) -> list[Event]:
        """The final candles a reconnect missed, fetched with a range query; the gap itself if that fails."""
        assert self._backfill is not None
        try:
            fetched = await self._backfill(gap)
        except MarketError:
            return [gap]
        return [CandleUpdate(id=gap.id, interval=gap.interval, t=c.t, open=c.open, high=c.high, low=c.low,
                             close=c.close, volume=c.volume, final=True) for c in fetched if gap.wanted(c.t)]


def stream(ids: Iterable[str] | None = None, *, key: str | None, ws_url: WsUrl = DEFAULT_WS_URL,
           **options: Any) -> QuoteStream:
    """Live events for `ids` (None: every instrument); see `QuoteStream` for the options."""
    return QuoteStream(ids, key=key, ws_url=ws_url, **options)


__all__ = ["DEFAULT_WS_URL", "QuoteStream", "stream"]
