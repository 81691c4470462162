"""wire.py's permessage-deflate helpers: one compressed version per shared frame, valid for any receiver."""

from __future__ import annotations

import json
import zlib

from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import Frame, Opcode

from server.stream.protocol import wire
from server.stream.protocol.wire import DeflateCache, deflate_frame, split_frames, text_frame

TAIL = b"\x00\x00\xff\xff"


def _inflate(frame: bytes) -> bytes:
    """The payload of one server frame as a receiver with server_no_context_takeover decodes it."""
    views = split_frames(frame)
    assert len(views) == 1
    first = frame[0]
    second = frame[1] & 0x7F
    start = 2 if second < 126 else 4 if second == 126 else 10
    payload = frame[start:]
    return zlib.decompressobj(wbits=-15).decompress(payload + TAIL) if first & 0x40 else payload


def test_a_compressed_frame_decodes_with_the_websockets_extension() -> None:
    payload = json.dumps({"type": "snapshot", "quotes": [{"id": f"i{i}", "price": 1.5 * i} for i in range(200)]})
    frame = text_frame(payload.encode())
    out = deflate_frame(frame)
    assert out[0] == 0x81 | 0x40 and len(out) < len(frame) // 3
    ext = PerMessageDeflate(False, True, 15, 15)  # the client's side: the server does not take over context
    second = out[1] & 0x7F
    start = 2 if second < 126 else 4 if second == 126 else 10
    decoded = ext.decode(Frame(Opcode.TEXT, out[start:], rsv1=True))
    assert decoded.data == payload.encode()


def test_a_frame_that_does_not_shrink_goes_raw() -> None:
    frame = text_frame(b'{"a":1}')
    assert deflate_frame(frame) == frame


def test_cache_compresses_a_shared_write_once_and_frames_within_joins_once() -> None:
    cache = DeflateCache()
    ticks = [text_frame(json.dumps({"type": "tick", "id": "brent", "price": 80.0 + i, "change": 0.25,
                                    "ts": "2026-11-26T21:30:00.000+08:00", "seq": i, "pad": "x" * 40}).encode())
             for i in range(3)]
    calls = 0
    real = wire.deflate_frame

    def counting(frame: bytes | memoryview, wbits: int = 15) -> bytes:
        nonlocal calls
        calls += 1
        return real(frame, wbits)

    wire.deflate_frame = counting  # type: ignore[assignment]
    try:
        joined = b"".join(ticks)
        first = cache.compressed(joined)
        assert calls == 3
        assert cache.compressed(joined) is first  # every other deflating member: one lookup
        other_group = ticks[0] + ticks[1]  # another group's batch sharing two frames
        cache.compressed(other_group)
        assert calls == 3
    finally:
        wire.deflate_frame = real  # type: ignore[assignment]
    parts = split_frames(first)
    assert [_inflate(bytes(p)) for p in parts] == [_inflate(t) for t in ticks]
    assert all(p[0] & 0x40 for p in parts)


def test_split_frames_handles_every_length_form() -> None:
    frames = [text_frame(b"a" * n) for n in (5, 300, 70000)]
    assert [bytes(v) for v in split_frames(b"".join(frames))] == frames
