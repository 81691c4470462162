"""The connection pump: bytes between a TCP transport and websockets' Sans-I/O `ServerProtocol`.

Per connection there is no task and no queue: `data_received` feeds the
protocol, hands its events to the core, and writes what is due. Ticks do
not go through the protocol object: the core writes pre-built frame bytes
straight to ``transport.write``.

Why writing around the protocol object is safe (the single-writer invariant):
- every write happens on the event-loop thread, and each `transport.write`
  carries whole frames (the protocol's `data_to_send()` chunks are whole
  frames or the handshake; tick writes are concatenated whole frames), so
  frames can never interleave mid-frame on the wire;
- the server never sends fragmented messages, so a tick frame can never land
  between the fragments of another message;
- permessage-deflate (when the client offers it and ``--ws-deflate`` is on) is
  negotiated by websockets' `ServerPerMessageDeflateFactory`, always with
  ``server_no_context_takeover``: the server's frames carry no per-connection
  compression state, so one compressed version of a frame is valid for every
  deflating connection (wire.DeflateCache); the protocol object only decodes
  the client's (possibly compressed, possibly context-taking-over) messages and
  sends control frames, which are never compressed;
- ticks are written only while the session is OPEN in the core's registry,
  and a session leaves the registry in the same call that makes the protocol
  send its close frame, so no data frame ever follows a close frame;
- the handshake response is flushed before the first snapshot is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import os
import socket
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import orjson
from aiofastnet.transport import Transport as FastTransport
from websockets.datastructures import Headers
from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol

from server.core.errors import ApiError, CloseCode
from server.stream.core import StreamCore
from server.stream.protocol.handshake import KEY_HEADER, WS_PATHS, handshake_key
from server.stream.protocol.messages import Payload
from server.stream.protocol.states import SessionState
from server.stream.protocol.wire import DeflateCache, deflate_factory

if TYPE_CHECKING:
    from server.stream.protocol.session import Session

MAX_MESSAGE = 64 * 1024  # bigger client messages close with 1009
CLOSE_TIMEOUT_S = 2.0  # after a close starts, the TCP connection is dropped at the latest this much later
SNDBUF = 32 * 1024  # kernel send buffer per socket (Linux doubles it): bounds kernel memory per slow client

# websockets logs every open/close at INFO and, at DEBUG, the request target, which
# carries the key: its logger stays at WARNING whatever --log-level says.
PROTOCOL_LOG = logging.getLogger("market.stream.protocol")
PROTOCOL_LOG.setLevel(logging.WARNING)
log = logging.getLogger("market.stream")

_HANDSHAKE_ERRORS = {405: "method_not_allowed", 426: "upgrade_required"}


class StreamConnection(asyncio.Protocol):
    def __init__(self, core: StreamCore, clock: Callable[[], float],
                 on_made: Callable[[StreamConnection], None], on_lost: Callable[[StreamConnection], None],
                 load_key: Callable[[str], Coroutine[Any, Any, Any]] | None = None, deflate: bool = True) -> None:
        self.core = core
        self.load_key = load_key  # reads a key the cache does not hold (a storage thread; awaited, not blocking)
        self._key_task: asyncio.Task[Any] | None = None
        self.clock = clock
        self.on_made = on_made
        self.on_lost = on_lost
        self.proto = ServerProtocol(max_size=MAX_MESSAGE, logger=PROTOCOL_LOG,
                                    extensions=[deflate_factory()] if deflate else None)
        self.transport: asyncio.Transport | None = None
        self.session: Session | None = None
        self._close_timer: asyncio.TimerHandle | None = None
        self._fragments: list[bytes | bytearray | memoryview] | None = None
        self._fragment_text = True

    # --- asyncio.Protocol ----------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's TCPTransport is not a subclass
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
        cap = self.core.limits.buffer_cap
        transport.set_write_buffer_limits(high=cap, low=cap // 2)
        self.session = self.core.sessions.connect(_frames_write(transport), self.clock())
        self.on_made(self)

    def data_received(self, data: bytes) -> None:
        self.proto.receive_data(data)
        self._process()

    def eof_received(self) -> bool | None:
        self.proto.receive_eof()
        self._process()
        return None  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        if self._close_timer is not None:
            self._close_timer.cancel()
        if self.session is not None:
            self.core.sessions.closed(self.session)
        self.on_lost(self)

    def pause_writing(self) -> None:
        if self.session is not None:
            self.core.sessions.paused(self.session, self.clock())

    def resume_writing(self) -> None:
        if self.session is not None:
            self.core.sessions.resumed(self.session)

    # --- events ----------------------------------------------------------------
    def _process(self) -> None:
        session = self.session
        assert session is not None
        for event in self.proto.events_received():
            if isinstance(event, Request):
                self._handshake(event)
            elif isinstance(event, Frame):
                code = self._frame(event)
                if code is not None:
                    self.close(code)
        self._flush()
        if session.is_open and self.proto.state is not State.OPEN:
            # the protocol closed by itself: the client's close, 1009 (too big), 1002 (protocol error)
            sent = self.proto.close_sent
            failed = self.proto.close_rcvd is None and sent is not None and sent.code in _CODES
            self.core.sessions.closing(session, CloseCode(sent.code) if failed and sent is not None else None)
        if self.proto.close_expected():
            self._arm_close_timer()
        elif (session.is_open and self.transport is not None
              and session.out.exceeds_hard_cap(self.transport.get_write_buffer_size())):
            self.close(CloseCode.SLOW_CONSUMER)

    def _frame(self, frame: Frame) -> CloseCode | None:
        session = self.session
        assert session is not None
        now = self.clock()
        opcode = frame.opcode
        if opcode is Opcode.PONG:
            session.pong_received()
            return self.core.messages.on_control(session, now)
        if opcode is Opcode.PING:
            return self.core.messages.on_control(session, now)
        if opcode is Opcode.CLOSE:
            return None
        if opcode is Opcode.CONT:
            if self._fragments is None:
                return None
            self._fragments.append(frame.data)
            if not frame.fin:
                return None
            data, self._fragments = b"".join(self._fragments), None
            return self._message(self._fragment_text, data, now)
        if not frame.fin:
            self._fragments, self._fragment_text = [frame.data], opcode is Opcode.TEXT
            return None
        return self._message(opcode is Opcode.TEXT, frame.data, now)

    def _message(self, is_text: bool, data: Payload, now: float) -> CloseCode | None:
        session = self.session
        assert session is not None
        if is_text:
            return self.core.messages.on_text(session, data, now)
        return self.core.messages.on_binary(session, now)

    def _handshake(self, request: Request) -> None:
        session = self.session
        assert session is not None
        if self._key_task is None:  # the first pass (a second one follows a key load)
            forwarded = ",".join(request.headers.get_all("X-Forwarded-For")) or None  # repeated: one list
            refusal = self.core.sessions.admit_peer(session, _peer_ip(self.transport), forwarded, self.clock())
            if refusal is not None:
                self._send_problem(refusal.error)
                return
        if self._load_unknown_key(request):
            return  # resumed by the load's callback
        response = self.proto.accept(request)
        if response.status_code != 101 and urlsplit(request.path).path in WS_PATHS:
            code = _HANDSHAKE_ERRORS.get(response.status_code, "bad_handshake")
            self.core.sessions.refuse(session, code)
            self._send_problem(ApiError(code, response.body.decode(errors="replace").strip()[:300]))
            return
        refusal = self.core.sessions.admit(session, request.path, request.headers.get_all(KEY_HEADER))
        if refusal is not None:
            self._send_problem(refusal.error)
            return
        self.proto.send_response(response)
        self._flush()  # the 101 must precede the snapshot the core writes next
        self._deflate_writes(session)
        self.core.sessions.open(session)

    def _deflate_writes(self, session: Session) -> None:
        """permessage-deflate was negotiated: the session's writes (whole uncompressed frames, shared by many
        sessions) go out as their compressed versions, compressed once for every deflating session."""
        ext = next((e for e in self.proto.extensions if isinstance(e, PerMessageDeflate)), None)
        if ext is None or self.transport is None:
            return
        cache = _deflate_cache(ext.local_max_window_bits)
        write = _frames_write(self.transport)
        session.write = lambda data: write(cache.compressed(data))

    def _load_unknown_key(self, request: Request) -> bool:
        """A key the cache does not hold may have been created by the CLI a moment ago: read it from
        storage first (the loop does not wait), then run the handshake again. True while loading."""
        if self.load_key is None or self._key_task is not None:
            return False
        secret = handshake_key(request.path, request.headers.get_all(KEY_HEADER))
        if urlsplit(request.path).path not in WS_PATHS or not secret or self.core.sessions.lookup(secret) is not None:
            return False
        self._key_task = asyncio.get_running_loop().create_task(self.load_key(secret))
        self._key_task.add_done_callback(lambda task: self._resume_handshake(request, task))
        return True

    def _resume_handshake(self, request: Request, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:  # storage down: the key stays unknown
            PROTOCOL_LOG.warning("key lookup failed: %s", type(task.exception()).__name__)
        if self.transport is None or self.transport.is_closing():
            return
        self._handshake(request)
        self._process()

    def _send_problem(self, error: ApiError) -> None:
        self.proto.send_response(_problem_response(error))

    # --- output ------------------------------------------------------------------
    def _flush(self) -> None:
        transport = self.transport
        if transport is None:
            return
        for data in self.proto.data_to_send():
            if data:
                transport.write(data)
            else:  # SEND_EOF: the server closes the TCP connection once the buffer drains
                transport.close()

    def ping(self) -> None:
        session = self.session
        if session is None or not session.is_open or self.proto.state is not State.OPEN:
            return
        self.proto.send_ping(os.urandom(4))
        session.ping_sent(self.clock())
        self._flush()

    def close(self, code: CloseCode, reason: str = "") -> None:
        """Start a server close; the TCP connection is dropped after CLOSE_TIMEOUT_S at the latest."""
        session = self.session
        if session is None or self.transport is None:
            return
        if session.state is SessionState.OPEN and self.proto.state is State.OPEN:
            self.core.sessions.closing(session, code)
            self.proto.send_close(code, reason)
            self._flush()
        elif session.state is SessionState.CONNECTING:
            self.transport.close()
        self._arm_close_timer()

    def _arm_close_timer(self) -> None:
        if self._close_timer is None and self.transport is not None:
            loop = asyncio.get_running_loop()
            self._close_timer = loop.call_later(CLOSE_TIMEOUT_S, self.abort)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def _peer_ip(transport: asyncio.Transport | None) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if peer else ""


def _problem_response(error: ApiError) -> Response:
    """A refused handshake's HTTP response: the problem document, and the connection closes after it."""
    body = orjson.dumps(error.problem())
    headers = Headers([
        ("Date", email.utils.formatdate(usegmt=True)),
        ("Connection", "close"),
        ("Content-Type", "application/problem+json"),
        ("Content-Length", str(len(body))),
        *error.headers,
    ])
    return Response(error.status, error.title, headers, body)


def _frames_write(transport: asyncio.Transport) -> Callable[[bytes], object]:
    """The write the core calls with whole frames (bytes, on the loop thread). On aiofastnet's transports (the
    /ws/quotes listener's) that is `write_nocheck`, as picows uses for its own sends: `write` checks the thread
    and the buffer, then calls `write_nocheck` through Cython's override check, which reads the transport's
    instance dict: a cache miss per connection per tick batch, once the kernel's send path has evicted it."""
    if isinstance(transport, FastTransport):
        return transport.write_nocheck
    return transport.write


_CODES = {int(c) for c in CloseCode}
_DEFLATE_CACHES: dict[int, DeflateCache] = {}  # window bits -> the compressed frames (15 unless a client asks less)


def _deflate_cache(wbits: int) -> DeflateCache:
    cache = _DEFLATE_CACHES.get(wbits)
    if cache is None:
        cache = _DEFLATE_CACHES[wbits] = DeflateCache(wbits)
    return cache
