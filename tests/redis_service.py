"""Real Redis for the engine tests: the machine's service, a key prefix per test, keys deleted afterwards.

Redis at MARKET_TEST_REDIS_URL (default redis://127.0.0.1:6379/0). When it cannot be reached the
tests that need it are skipped with a message saying how to run them, unless
MARKET_REQUIRE_SERVICES=1 (CI on a machine that has the services), which turns that into a failure.
`OwnRedis` runs a private redis-server on a free port for the tests that stop and restart Redis.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.required import unavailable

REDIS_URL = os.environ.get("MARKET_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def require_redis(url: str = REDIS_URL) -> str:
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2.0, socket_timeout=2.0).ping()
    except (redis.RedisError, OSError) as exc:
        message = (f"Redis not reachable at {url} ({exc}): start redis-server (or set MARKET_TEST_REDIS_URL) "
                   "to run the Redis engine tests")
        unavailable(message)
    return url


_USED: list[str] = []  # prefixes handed out in this pytest process, deleted when it exits


def fresh_prefix() -> str:
    """A new key prefix; everything under it is deleted when this test process exits (a server's tick
    stream, seq hash and epoch do not expire by themselves)."""
    if not _USED:
        atexit.register(_delete_used)
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    _USED.append(prefix)
    return prefix


def _delete_used() -> None:
    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2.0, socket_timeout=5.0)
        for prefix in _USED:
            keys = list(client.scan_iter(match=prefix + "*", count=1000))
            if keys:
                client.delete(*keys)
        client.close()
    except (redis.RedisError, OSError):
        pass  # Redis gone at exit: nothing left to clean there


@contextmanager
def redis_prefix(url: str = REDIS_URL) -> Iterator[str]:
    """A fresh key prefix; every key under it is deleted at the end."""
    prefix = fresh_prefix()
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


@contextmanager
def redis_hub_pair(data_dir: Path, *flags: str, url: str = REDIS_URL) -> Iterator[tuple[Any, Any]]:
    """Two hubs on one Redis prefix and one data dir, a granian one and a robyn one (`flags` added to both's
    `--engine redis --redis-url URL --redis-prefix P`), both stopped with exit code 0 afterwards."""
    from tests.conftest import ServerProcess

    with redis_prefix(url) as prefix:
        both = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, *flags)
        a = ServerProcess(data_dir, "granian", *both)
        b = ServerProcess(data_dir, "robyn", *both)
        try:
            yield a, b
        finally:
            codes = [hub.stop() for hub in (a, b)]
            assert codes == [0, 0], f"{codes}\n{a.output()}\n{b.output()}"


class OwnRedis:
    """A throwaway redis-server (no persistence) on a given port: stop() and start() it at will."""

    def __init__(self, port: int, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed: apt-get install redis-server to run this test")
        self.binary, self.port, self.workdir = binary, port, workdir
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> None:
        """Started (and answering PING); `extra`: more redis-server arguments (e.g. `--replicaof`)."""
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                client.ping()
                return
            except (redis.RedisError, OSError):
                time.sleep(0.02)  # the port is not open yet: nothing to await
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
