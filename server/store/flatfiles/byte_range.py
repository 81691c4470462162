"""Serving a byte range of a file (RFC 9110 `Range: bytes=...`), so a broken flat-file download resumes.

Pure parsing plus a chunked file reader; the HTTP adapter maps the results: `None` -> 200 with the whole file,
a `ByteRange` -> 206 with `Content-Range`, `RangeNotSatisfiable` -> 416 with `Content-Range: bytes */size`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CHUNK = 64 * 1024


class RangeNotSatisfiable(ValueError):
    """A well-formed range that no byte of the file satisfies (416)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"range not satisfiable for {size} bytes")
        self.content_range = f"bytes */{size}"


@dataclass(frozen=True)
class ByteRange:
    start: int  # first byte, inclusive
    end: int  # last byte, inclusive
    size: int  # of the whole file

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end}/{self.size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The range to serve, or None for the whole file (no header, another unit, several ranges, or a
    malformed one: RFC 9110 lets a server ignore those). Raises RangeNotSatisfiable."""
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    first, last = first.strip(), last.strip()
    if not dash or not (first.isdigit() or first == "") or not (last.isdigit() or last == ""):
        return None
    if first == "":
        if last == "":
            return None
        n = int(last)  # a suffix: the last n bytes
        if n == 0 or size == 0:
            raise RangeNotSatisfiable(size)
        return ByteRange(max(0, size - n), size - 1, size)
    start = int(first)
    end = size - 1 if last == "" else int(last)
    if last != "" and end < start:
        return None
    if start >= size:
        raise RangeNotSatisfiable(size)
    return ByteRange(start, min(end, size - 1), size)


def iter_file(path: Path, start: int = 0, end: int | None = None, chunk: int = CHUNK) -> Iterator[bytes]:
    """Bytes start..end (inclusive; end None: to the end of the file), `chunk` bytes at a time: bounded memory
    whatever the file's size. Blocking reads: the adapter pulls each chunk off the event loop."""
    with open(path, "rb") as fh:
        fh.seek(start)
        left = None if end is None else end - start + 1
        while left is None or left > 0:
            data = fh.read(chunk if left is None else min(chunk, left))
            if not data:
                return
            if left is not None:
                left -= len(data)
            yield data
