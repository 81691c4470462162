"""The jsonl line reader on real files (its own thread, as in the server) and the feed supervisor."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import struct
import termios
import threading
import time
from pathlib import Path

import pytest

from server.feeds import FeedReadError, FeedSupervisor, LineReader
from server.market.tick import Tick

WAIT_S = 5.0


class Collector:
    """Collects what a LineReader hands over; waits on its notify instead of sleeping."""

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.lines: list[bytes] = []
        self.errors: list[Exception] = []
        self.ended = False
        self._event = threading.Event()
        reader.start(self._event.set)

    def until(self, predicate, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + WAIT_S
        while not predicate():
            self._event.clear()
            for chunk in self.reader.take(100):
                if chunk is None:
                    self.ended = True
                elif isinstance(chunk, Exception):
                    self.errors.append(chunk)
                else:
                    self.lines.extend(chunk)
            if predicate():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"reader: {what} not seen; got {self.lines} {self.errors}")
            self._event.wait(left)

    def lines_are(self, *expected: bytes) -> None:
        self.until(lambda: len(self.lines) >= len(expected), f"{len(expected)} lines")
        assert self.lines == list(expected)


@pytest.fixture
def follow(tmp_path: Path):  # type: ignore[no-untyped-def]
    readers: list[LineReader] = []

    def start(path: Path) -> Collector:
        reader = LineReader(str(path), poll_s=0.01)
        readers.append(reader)
        return Collector(reader)

    yield start
    for reader in readers:
        reader.stop()


def test_file_is_read_then_followed_as_it_grows(tmp_path: Path, follow) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ticks.jsonl"
    path.write_bytes(b"a\n\nb\n")
    got = follow(path)
    got.lines_are(b"a", b"b")
    with path.open("ab") as fh:
        fh.write(b"c\nd")  # "d" is not a line until its newline is written
        fh.flush()
        got.lines_are(b"a", b"b", b"c")
        fh.write(b"e\n")
    got.lines_are(b"a", b"b", b"c", b"de")
    assert not got.ended and not got.errors and got.reader.failing is None


def test_truncated_file_is_read_again_from_its_start(tmp_path: Path, follow) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ticks.jsonl"
    path.write_bytes(b"first line\nsecond line\n")
    got = follow(path)
    got.lines_are(b"first line", b"second line")
    path.write_bytes(b"new\n")  # truncate and rewrite in place (same inode)
    got.lines_are(b"first line", b"second line", b"new")


def test_rotated_file_drains_the_old_then_reads_the_new(tmp_path: Path, follow) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ticks.jsonl"
    path.write_bytes(b"old 1\n")
    got = follow(path)
    got.lines_are(b"old 1")
    with path.open("ab") as fh:
        fh.write(b"old 2\n")
    os.rename(path, tmp_path / "ticks.jsonl.1")
    path.write_bytes(b"new 1\n")
    got.lines_are(b"old 1", b"old 2", b"new 1")


def test_missing_file_is_waited_for(tmp_path: Path, follow) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "later.jsonl"
    got = follow(path)
    path.write_bytes(b"x\n")
    got.lines_are(b"x")
    assert got.reader.failing is None


def test_unreadable_path_is_reported_once_and_recovers(tmp_path: Path, follow) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ticks.jsonl"
    path.mkdir()  # a directory where the file should be
    got = follow(path)
    got.until(lambda: got.errors, "a read error")
    assert isinstance(got.errors[0], FeedReadError) and "Is a directory" in str(got.errors[0])
    assert got.reader.failing is not None
    path.rmdir()
    path.write_bytes(b"back\n")
    got.lines_are(b"back")
    assert got.reader.failing is None and len(got.errors) == 1


def _pipe_drained(fd: int) -> bool:
    """Nothing written to the pipe is left unread (FIONREAD on the writer's end)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0] == 0


def _open_writer(path: Path) -> int:
    """The pipe's write end, once the reader has it open (a writer's open without a reader fails with ENXIO)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # the reader thread opens the pipe on its own schedule
            continue
        os.set_blocking(fd, True)
        return fd


def _until(predicate, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)  # the reader thread drains the pipe on its own schedule


def test_named_pipe_is_read_like_stdin_long_lines_and_lines_in_several_writes(
        tmp_path: Path, follow) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ticks.fifo"
    os.mkfifo(path)
    got = follow(path)
    fd = _open_writer(path)
    try:
        long_line = b"x" * (3 * 65536 + 123)  # longer than a pipe's buffer and the reader's chunk
        os.write(fd, long_line + b"\nshort\n")  # one write call blocks until the reader took most of it
        got.lines_are(long_line, b"short")
        os.write(fd, b'{"id": "brent", ')  # one line in two writes, the reader between them
        _until(lambda: _pipe_drained(fd), "the first half read")
        os.write(fd, b'"price": 80.5}\n')
        got.lines_are(long_line, b"short", b'{"id": "brent", "price": 80.5}')
        os.write(fd, b"unfinished")
    finally:
        os.close(fd)  # the last writer closes: its unfinished line counts, as stdin's last line does
    got.lines_are(long_line, b"short", b'{"id": "brent", "price": 80.5}', b"unfinished")
    fd = _open_writer(path)  # the next writer on the same path: read on, no restart, no error
    try:
        os.write(fd, b"again\n")
        got.lines_are(long_line, b"short", b'{"id": "brent", "price": 80.5}', b"unfinished", b"again")
    finally:
        os.close(fd)
    assert not got.ended and not got.errors and got.reader.failing is None


def test_named_pipe_is_accepted_at_start_without_opening_it(tmp_path: Path) -> None:
    from server.config import Settings
    from server.feeds import check_feed_source

    path = tmp_path / "ticks.fifo"
    os.mkfifo(path)
    check_feed_source(Settings(feed=f"jsonl:{path}"))  # returns at once: opening would wait for a writer
    with pytest.raises(OSError):
        os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: it was not left open either


class FailingOnce:
    """A feed source whose first run fails the way a bug would; it runs normally afterwards."""

    def __init__(self) -> None:
        self.runs = 0
        self.running = asyncio.Event()

    async def batches(self):  # type: ignore[no-untyped-def]
        self.runs += 1
        if self.runs == 1:
            raise OverflowError("date value out of range")
        yield [Tick(0, 1.0, 0.0)]
        self.running.set()
        await asyncio.Event().wait()

    def ready(self) -> bool:
        return True


def test_supervisor_logs_the_cause_restarts_and_is_not_ready_meanwhile(caplog: pytest.LogCaptureFixture) -> None:
    asyncio.run(asyncio.wait_for(_supervised(caplog), 20))


async def _supervised(caplog: pytest.LogCaptureFixture) -> None:
    source = FailingOnce()
    ticks: list[Tick] = []
    restarts: list[int] = []
    sup = FeedSupervisor(source, ticks.extend, on_restart=lambda: restarts.append(1),  # type: ignore[arg-type]
                         backoff_s=(0.2, 1.0))
    assert not sup.ready()  # not running yet
    with caplog.at_level(logging.ERROR, logger="market.feed"):
        task = asyncio.create_task(sup.run())
        await asyncio.sleep(0)  # the first run fails at once; the supervisor is in its backoff
        await asyncio.sleep(0)
        assert not sup.ready() and source.runs == 1 and restarts == []
        await asyncio.wait_for(source.running.wait(), 5.0)
    assert sup.ready() and source.runs == 2 and restarts == [1] and len(ticks) == 1
    assert sup.last_failure == "OverflowError: date value out of range"
    assert any("feed failed (OverflowError: date value out of range)" in r.getMessage() for r in caplog.records)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not sup.ready()
