"""Complete WebSocket frames as bytes, built once and shared by every reader.

A server frame is never masked (RFC 6455 5.1) and we negotiate no extension
(no permessage-deflate), so the bytes of a frame depend only on its payload:
one `bytes` object can be written to any number of connections unchanged.
"""

from __future__ import annotations

from websockets.frames import Frame, Opcode

NO_EXTENSIONS: list = []  # type: ignore[type-arg]


def text_frame(payload: bytes) -> bytes:
    """One final, unmasked, uncompressed text frame carrying ``payload`` (UTF-8 JSON)."""
    return Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=NO_EXTENSIONS)
