"""Complete WebSocket frames as bytes, built once and shared by every reader.

A server frame is never masked (RFC 6455 5.1), so the bytes of an uncompressed
frame depend only on its payload: one `bytes` object can be written to any
number of connections unchanged.

permessage-deflate (RFC 7692) keeps that property because the server always
negotiates ``server_no_context_takeover``: each message is compressed by a
fresh raw deflate stream (no window carried from the previous message), so the
compressed bytes of a frame depend only on its payload and the negotiated
window size. `DeflateCache` compresses a shared frame once, lazily, the first
time a deflating connection writes it, and hands the same compressed bytes to
every other deflating connection (the serialise-once rule, compressed).
"""

from __future__ import annotations

import zlib

from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.frames import Opcode

_TAIL = b"\x00\x00\xff\xff"  # RFC 7692 7.2.1: the end of a sync flush, removed from the message
RSV1 = 0x40
CACHE_ENTRIES = 4096  # compressed writes remembered (one per shared frame or per group's joined batch)
CACHE_BYTES = 8 * 1024 * 1024  # and at most this many input bytes: past either, the cache starts over


_TEXT_HEADERS = [bytes((0x81, n)) for n in range(126)]  # FIN + text, unmasked, 7-bit length
PING_FRAME = b"\x89\x00"  # FIN + ping, unmasked, no payload (a control frame may come between any two messages)


def text_frame(payload: bytes) -> bytes:
    """One final, unmasked, uncompressed text frame carrying ``payload`` (UTF-8 JSON): the RFC 6455 5.2 header
    written here (0.1 us) rather than by websockets' `Frame.serialize` (2 us), which builds a Frame, checks it and
    packs it; every tick, candle and heartbeat frame is built this way, once."""
    n = len(payload)
    if n < 126:
        return _TEXT_HEADERS[n] + payload
    if n < 65536:
        return b"\x81\x7e" + n.to_bytes(2, "big") + payload
    return b"\x81\x7f" + n.to_bytes(8, "big") + payload


def deflate_factory() -> ServerPerMessageDeflateFactory:
    """The server's side of the negotiation: accept what a client offers (its context takeover and window
    sizes included), always with server_no_context_takeover, so each message compresses on its own."""
    return ServerPerMessageDeflateFactory(server_no_context_takeover=True)


def _header(first: int, length: int) -> bytes:
    if length < 126:
        return bytes((first, length))
    if length < 65536:
        return bytes((first, 126)) + length.to_bytes(2, "big")
    return bytes((first, 127)) + length.to_bytes(8, "big")


def deflate_frame(frame: bytes | memoryview, wbits: int = 15) -> bytes:
    """One whole unmasked uncompressed data frame as its permessage-deflate frame (RSV1 set), or the frame
    itself when compressing does not make it smaller (RFC 7692 allows uncompressed messages)."""
    first, second = frame[0], frame[1] & 0x7F
    start = 2 if second < 126 else 4 if second == 126 else 10
    payload = frame[start:]
    if first & 0x0F not in (Opcode.TEXT.value, Opcode.BINARY.value) or first & 0x70:
        return bytes(frame)
    encoder = zlib.compressobj(wbits=-wbits)  # a fresh raw deflate: server_no_context_takeover
    data = encoder.compress(payload) + encoder.flush(zlib.Z_SYNC_FLUSH)
    if data.endswith(_TAIL):
        data = data[:-4]
    out = _header(first | RSV1, len(data)) + data
    return out if len(out) < len(frame) else bytes(frame)


def split_frames(data: bytes) -> list[memoryview]:
    """A write of whole unmasked frames (the core's tick batches, acks + replays) as one view per frame."""
    view = memoryview(data)
    frames = []
    at, end = 0, len(data)
    while at < end:
        second = data[at + 1] & 0x7F
        if second < 126:
            start, length = at + 2, second
        elif second == 126:
            start, length = at + 4, int.from_bytes(data[at + 2:at + 4], "big")
        else:
            start, length = at + 10, int.from_bytes(data[at + 2:at + 10], "big")
        frames.append(view[at:start + length])
        at = start + length
    return frames


class DeflateCache:
    """Compressed versions of the frames written to deflating connections, keyed by the uncompressed bytes.

    The core writes the same `bytes` object to every member of a subscription group (a tick frame, a group's
    joined batch, a snapshot, a heartbeat), and a bytes object caches its hash, so after the first deflating
    member compressed it each other one costs one dict lookup. Frames are compressed one by one (each is one
    message) and also remembered on their own, so a tick frame shared by several groups' batches is
    compressed once. One cache per window size a client asked for (15 unless it sent server_max_window_bits).
    """

    __slots__ = ("_frames", "_size", "_writes", "wbits")

    def __init__(self, wbits: int = 15) -> None:
        self.wbits = wbits
        self._writes: dict[bytes, bytes] = {}
        self._frames: dict[bytes, bytes] = {}
        self._size = 0

    def compressed(self, data: bytes) -> bytes:
        out = self._writes.get(data)
        if out is not None:
            return out
        if self._size > CACHE_BYTES or len(self._writes) + len(self._frames) > CACHE_ENTRIES:
            self._writes.clear()
            self._frames.clear()
            self._size = 0
        frames = split_frames(data)
        if len(frames) == 1:
            out = deflate_frame(data, self.wbits)
        else:
            parts = []
            for view in frames:
                frame = view.tobytes()
                part = self._frames.get(frame)
                if part is None:
                    part = self._frames[frame] = deflate_frame(frame, self.wbits)
                    self._size += len(frame)
                parts.append(part)
            out = b"".join(parts)
        self._writes[data] = out
        self._size += len(data)
        return out
