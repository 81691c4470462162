"""Complete lines of a jsonl feed's file as it grows (like ``tail -F``), or of stdin, on a reader thread.

The reader hands the event loop chunks of lines through a bounded queue (back-pressure), and
tells it when a chunk is ready; the loop never blocks on the file.
"""

from __future__ import annotations

import logging
import os
import queue
import select
import stat
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO

log = logging.getLogger("market.feed")

POLL_S = 0.05  # how often a followed file is checked for growth, rotation or truncation
CHUNK = 65536
QUEUE_CHUNKS = 64  # chunks read ahead of the loop before the reader waits (back-pressure)


class FeedReadError(Exception):
    """The jsonl file could not be read (the reader keeps retrying; the feed reports it as a failure)."""


Chunk = list[bytes] | Exception | None  # lines, a read failure, or None at the end of stdin


class LineReader:
    """Complete lines of a file as it grows (like ``tail -F``), or of stdin until EOF, on its own thread.

    The file is read from its start, then polled every ``poll_s``: appended lines are read; a file
    replaced under the same name (rotation) is read from its start once the old one is drained; a
    file that shrank (truncation) is read again from its start; a file that disappeared is waited
    for. A line counts once its newline is written (stdin's last line counts without one). A read
    failure (the path became a directory, permissions) is handed to the loop once as an exception,
    ``failing`` says why until a read works again; the reader keeps retrying meanwhile.

    A named pipe (FIFO) at the path is read like stdin (``jsonl:-``): as its writers write, a line
    in as many writes as it takes; it is never checked for truncation (only regular files are, and
    only after a read found nothing new). When its last writer closes it, its unfinished last line
    counts (as stdin's) and the reader waits for the next writer on the same path, without ever
    leaving the pipe without a reader (a writer never gets a broken pipe from us).
    """

    def __init__(self, path: str, poll_s: float = POLL_S) -> None:
        self.path = path
        self.poll_s = poll_s
        self.failing: str | None = None
        self._chunks: queue.Queue[Chunk] = queue.Queue(maxsize=QUEUE_CHUNKS)
        self._notify: Callable[[], object] = lambda: None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._followed: _FollowedFile | None = None

    def start(self, notify: Callable[[], object]) -> None:
        """Start reading unless a reader runs; ``notify`` is called from the reader thread after each chunk."""
        self._notify = notify
        self._stop.clear()  # started again after stop() (a hub that lost the feed lease and took it back)
        if self._thread is None or (not self._thread.is_alive() and self.path != "-"):
            self._thread = threading.Thread(target=self._run, daemon=True, name="jsonl-feed")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def take(self, limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks read so far, without waiting."""
        out: list[Chunk] = []
        while len(out) < limit:
            try:
                out.append(self._chunks.get_nowait())
            except queue.Empty:
                break
        return out

    # --- reader thread -------------------------------------------------------------------------
    def _put(self, chunk: Chunk) -> None:
        while not self._stop.is_set():
            try:
                self._chunks.put(chunk, timeout=0.25)
                break
            except queue.Full:
                continue
        try:
            self._notify()
        except RuntimeError:  # the loop is closed: the server is stopping
            self._stop.set()

    def _run(self) -> None:
        try:
            if self.path == "-":
                self._read_stdin(sys.stdin.buffer)
                self._put(None)
            else:
                self._follow()
        except Exception as exc:  # a bug, not an I/O condition: the feed fails with it and is restarted
            self._put(exc)

    def _read_stdin(self, stream: BinaryIO) -> None:
        partial = b""
        while not self._stop.is_set():
            data = stream.read1(CHUNK)  # type: ignore[attr-defined]
            if not data:
                break
            lines, partial = _split_lines(partial + data)
            if lines:
                self._put(lines)
        if partial.strip():
            self._put([partial])

    def _follow(self) -> None:
        followed = self._followed  # kept on self: a reader started again resumes where this one was
        waiting_logged = False
        while not self._stop.is_set():
            try:
                if followed is None:
                    self._followed = followed = _FollowedFile.open(self.path)
                    if followed is None:
                        if not waiting_logged:
                            log.warning("jsonl feed: %s is missing; waiting for it to appear", self.path)
                            waiting_logged = True
                        self._stop.wait(self.poll_s)
                        continue
                    self._recovered()
                    waiting_logged = False
                if followed.is_pipe:
                    if self._read_pipe(followed):  # its last writer closed it: wait for the next one
                        self._followed = followed = followed.reopen(self.path, self._put)
                    continue
                lines = followed.read_lines()
                if lines:
                    self._put(lines)
                    continue
                if lines is not None:  # part of a line: read on at once
                    continue
                if followed.replaced_or_truncated(self.path):  # a regular file after an empty read
                    self._drain(followed)  # what was appended to the old file before it was replaced
                    followed.close()
                    self._followed = followed = None
                    continue
            except OSError as exc:
                if followed is not None:
                    followed.close()
                    self._followed = followed = None
                self._failed(exc)
            self._stop.wait(self.poll_s)

    def _read_pipe(self, followed: _FollowedFile) -> bool:
        """Lines of a named pipe as they arrive; True at its end (every writer closed it), False when stopped."""
        poller = select.poll()
        poller.register(followed.fh.fileno(), select.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(self.poll_s * 1000):  # no writer yet, or nothing written: look at _stop again
                continue
            data = followed.fh.read(CHUNK)
            if data is None:  # woken, but another read took it (EAGAIN)
                continue
            if not data:
                return True
            lines, followed.partial = _split_lines(followed.partial + data)
            if lines:
                self._put(lines)
        return False

    def _drain(self, followed: _FollowedFile) -> None:
        while (lines := followed.read_lines()) is not None:
            if lines:
                self._put(lines)
        if followed.partial.strip():
            self._put([followed.partial])

    def _failed(self, exc: OSError) -> None:
        if self.failing is None:
            self.failing = f"cannot read {self.path}: {exc.strerror or exc}"
            self._put(FeedReadError(self.failing))

    def _recovered(self) -> None:
        if self.failing is not None:
            log.info("jsonl feed: reading %s again", self.path)
            self.failing = None


class _FollowedFile:
    """One open generation of a followed file: where we are in it and the unfinished last line."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        st = os.fstat(fh.fileno())
        self.identity = (st.st_dev, st.st_ino)
        self.is_pipe = stat.S_ISFIFO(st.st_mode)
        self.offset = 0
        self.partial = b""

    @classmethod
    def open(cls, path: str) -> _FollowedFile | None:
        """The file at ``path``, or None while it does not exist (other errors raise OSError).

        Opened without blocking: a named pipe with no writer yet is open at once (reading it waits in poll),
        where a blocking open would wait for a writer and could not be stopped."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        try:
            return cls(open(fd, "rb", buffering=0))  # type: ignore[arg-type]
        except BaseException:
            os.close(fd)
            raise

    def reopen(self, path: str, put: Callable[[list[bytes]], object]) -> _FollowedFile | None:
        """A pipe whose writers all closed it: open it again (for the next writer) before closing this end, so
        the pipe always has a reader; the unfinished last line counts, as stdin's does."""
        again = _FollowedFile.open(path)
        if self.partial.strip():
            put([self.partial])
        self.close()
        return again

    def read_lines(self) -> list[bytes] | None:
        """Complete lines read now ([] when only part of a line arrived); None when nothing was read."""
        data = self.fh.read(CHUNK)
        if not data:
            return None
        self.offset += len(data)
        lines, self.partial = _split_lines(self.partial + data)
        return lines

    def replaced_or_truncated(self, path: str) -> bool:
        """At EOF: True when ``path`` is now another file; rewinds when this one was truncated."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return False  # renamed away, nothing new yet: keep the old one until a new one appears
        if (st.st_dev, st.st_ino) != self.identity:
            return True
        if stat.S_ISREG(st.st_mode) and st.st_size < self.offset:  # only a regular file has a size to shrink
            log.info("jsonl feed: %s was truncated; reading it from the start", path)
            self.fh.seek(0)
            self.offset, self.partial = 0, b""
        return False

    def close(self) -> None:
        self.fh.close()


def _split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete non-blank lines in ``data`` and the unfinished rest."""
    *lines, rest = data.split(b"\n")
    return [line for line in lines if line.strip()], rest
