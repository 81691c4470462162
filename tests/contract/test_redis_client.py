"""server/engine/redis_client.py against real redis-servers: the auto-pipeline's ordering, error replies,
timeouts and reconnects; ACL users, TLS (`rediss://`) and Sentinel (`redis+sentinel://`, following a
failover) through every factory (async pool, sync, auto-pipeline).

Private redis-servers on free ports in tmp_path (the machine's Redis is not touched, except by the tests
that need nothing special, under their own key prefix). Skipped, saying why, without redis-server.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.engine.redis_client import AutoPipeline, async_client, sync_client
from tests.conftest import free_port, free_ports
from tests.redis_service import redis_prefix, require_redis


def _binary() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed: apt-get install redis-server to run this test")
    return binary


class Server:
    """A throwaway redis-server (or Sentinel) with the given arguments; `ping_url` says when it is up."""

    def __init__(self, args: list[str], ping: redis.Redis, workdir: Path) -> None:
        self.args, self.ping, self.workdir = [_binary(), *args], ping, workdir
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        self.proc = subprocess.Popen(self.args, cwd=self.workdir, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.ping.ping()
                return self
            except (RedisError, OSError):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited: {self.args}") from None
                time.sleep(0.02)  # the port is not open yet: nothing to await
        raise RuntimeError(f"redis-server did not start: {self.args}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.ping.close()


BASE = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def _plain(port: int, tmp: Path, servers: list[Server], *extra: str, username: str | None = None,
           password: str | None = None) -> Server:
    work = tmp / f"r{port}"
    work.mkdir()
    ping = redis.Redis(host="127.0.0.1", port=port, username=username, password=password, socket_connect_timeout=0.2)
    server = Server(["--port", str(port), *BASE, "--dir", str(work), *extra], ping, work)
    servers.append(server)
    return server.start()


# --- the auto-pipeline ----------------------------------------------------------------------------------


def test_commands_of_one_iteration_share_a_write_and_replies_keep_their_order() -> None:
    url = require_redis()

    async def scenario(prefix: str) -> None:
        pipe = AutoPipeline(url, 1.0)
        key = prefix + "n"
        replies = await asyncio.gather(*(pipe.call("INCR", key) for _ in range(300)))
        assert replies == list(range(1, 301))
        session = pipe._session
        assert session is not None
        # an error reply fails its own call only; the connection and the calls around it go on
        calls = [pipe.call("INCR", key), pipe.call("HSET", key, "f", "v"), pipe.call("INCR", key)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert results[0] == 301 and results[2] == 302
        assert isinstance(results[1], ResponseError) and "WRONGTYPE" in str(results[1])
        with pytest.raises(NoScriptError):
            await pipe.call("EVALSHA", "0" * 40, 0)
        assert pipe._session is session  # still the first connection
        await pipe.aclose()
        with pytest.raises(RedisConnectionError):
            pipe.call("PING")

    with redis_prefix(url) as prefix:
        asyncio.run(scenario(prefix))


def test_a_redis_that_never_answers_fails_every_owed_reply_after_the_timeout() -> None:
    """A listener that accepts and reads but never replies: the calls fail with TimeoutError, bounded."""
    async def scenario() -> None:
        async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.read(65536):
                pass
            writer.close()

        server = await asyncio.start_server(swallow, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pipe = AutoPipeline(f"redis://127.0.0.1:{port}/0", 0.3)
        started = time.monotonic()
        results = await asyncio.gather(*(pipe.call("PING") for _ in range(5)), return_exceptions=True)
        assert all(isinstance(r, RedisTimeoutError) for r in results), results
        assert time.monotonic() - started < 3.0
        await pipe.aclose()
        server.close()

    asyncio.run(scenario())


def test_nothing_listening_fails_at_once_and_a_restarted_redis_is_used_again(
        tmp_path: Path, servers: list[Server]) -> None:
    port = free_port()

    async def scenario() -> None:
        pipe = AutoPipeline(f"redis://127.0.0.1:{port}/0", 0.5)
        with pytest.raises(RedisConnectionError):
            await pipe.call("PING")
        server = _plain(port, tmp_path, servers)
        assert await pipe.call("SET", "k", "1") == b"OK"
        server.stop()  # kill -9 with the connection open
        with pytest.raises((RedisConnectionError, RedisTimeoutError)):
            await pipe.call("GET", "k")
        server.start()
        assert await pipe.call("GET", "k") is None  # a new, empty Redis on the same port
        await pipe.aclose()

    asyncio.run(scenario())


# --- ACL users ------------------------------------------------------------------------------------------


def test_an_acl_user_and_a_db_reach_every_client(tmp_path: Path, servers: list[Server]) -> None:
    port = free_port()
    _plain(port, tmp_path, servers, "--user", "default", "off", "--user", "hub", "on", ">s3cret", "~*", "&*",
           "+@all", username="hub", password="s3cret")
    url = f"redis://hub:s3cret@127.0.0.1:{port}/2"

    async def scenario() -> None:
        pipe = AutoPipeline(url, 1.0)
        assert await pipe.call("SET", "from-pipe", "1") == b"OK"
        client = async_client(url, 1.0)
        await client.set("from-pool", "1")
        assert await client.acl_whoami() in ("hub", b"hub")
        await client.aclose()
        await pipe.aclose()
        wrong = AutoPipeline(f"redis://hub:nope@127.0.0.1:{port}/2", 1.0)
        with pytest.raises(RedisError, match=r"(?i)invalid|WRONGPASS|auth"):
            await wrong.call("PING")
        await wrong.aclose()

    asyncio.run(scenario())
    with sync_client(url) as sync:
        sync.set("from-sync", "1")
        assert sorted(sync.keys()) == [b"from-pipe", b"from-pool", b"from-sync"]  # all in db 2
        assert sync.dbsize() == 3
    assert servers[0].ping.dbsize() == 0  # db 0 untouched


# --- TLS ------------------------------------------------------------------------------------------------


def _certificates(tmp: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1, written as PEM files: (ca, cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "market test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def test_rediss_verifies_the_server_and_reaches_every_client(tmp_path: Path, servers: list[Server]) -> None:
    ca, cert, key = _certificates(tmp_path)
    port = free_port()
    ping = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=str(ca), socket_connect_timeout=0.5)
    work = tmp_path / "tls"
    work.mkdir()
    server = Server(["--port", "0", "--tls-port", str(port), *BASE, "--dir", str(work), "--tls-cert-file", str(cert),
                     "--tls-key-file", str(key), "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no"],
                    ping, work)
    servers.append(server)
    try:
        server.start()
    except RuntimeError:
        pytest.skip("this redis-server was built without TLS")
    url = f"rediss://127.0.0.1:{port}/1?ssl_ca_certs={ca}"
    # timeouts of 5 s: a TLS handshake costs this machine's Python 0.5 s of CPU and more under load

    async def scenario() -> None:
        pipe = AutoPipeline(url, 5.0)
        assert await pipe.call("SET", "tls", "1") == b"OK"
        await pipe.aclose()
        client = async_client(url, 5.0)
        assert await client.get("tls") == b"1"
        await client.aclose()
        unverified = AutoPipeline(f"rediss://127.0.0.1:{port}/1", 5.0)  # the system CAs do not know ours
        with pytest.raises(RedisConnectionError, match=r"(?i)certificate"):
            await unverified.call("PING")
        await unverified.aclose()
        plain = AutoPipeline(f"redis://127.0.0.1:{port}/1", 0.5)  # no TLS against a TLS port: no answer
        with pytest.raises((RedisConnectionError, RedisTimeoutError)):
            await plain.call("PING")
        await plain.aclose()

    asyncio.run(scenario())
    with sync_client(url) as sync:
        assert sync.get("tls") == b"1"


# --- Sentinel -------------------------------------------------------------------------------------------


def _sentinel(port: int, master_port: int, tmp: Path, servers: list[Server]) -> Server:
    work = tmp / f"s{port}"
    work.mkdir()
    conf = work / "sentinel.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {work}\n"
                    f"sentinel monitor market 127.0.0.1 {master_port} 1\n"
                    "sentinel down-after-milliseconds market 1000\nsentinel failover-timeout market 5000\n")
    ping = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
    server = Server([str(conf), "--sentinel"], ping, work)
    servers.append(server)
    return server.start()


def _role(port: int) -> str:
    with redis.Redis(host="127.0.0.1", port=port, socket_timeout=1) as client:
        return str(client.role()[0], "ascii") if isinstance(client.role()[0], bytes) else str(client.role()[0])


def _wait(condition: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)  # another process (Sentinel) must act: nothing to await here
    raise AssertionError(f"timed out waiting for {what}")


def test_sentinel_url_finds_the_master_and_follows_a_failover(tmp_path: Path, servers: list[Server]) -> None:
    master, replica, sentinel = free_ports(3)
    _plain(master, tmp_path, servers)
    _plain(replica, tmp_path, servers, "--replicaof", "127.0.0.1", str(master))
    _sentinel(sentinel, master, tmp_path, servers)
    url = f"redis+sentinel://127.0.0.1:{sentinel},127.0.0.1:{free_port()}/market/3"  # a dead Sentinel listed too

    def replica_known() -> bool:
        """Sentinel promotes only a replica whose link to the master it has seen up (else NOGOODSLAVE)."""
        with redis.Redis(host="127.0.0.1", port=sentinel) as s:
            return any(r["port"] == replica and "s_down" not in r["flags"] and r.get("master-link-status") == "ok"
                       for r in s.sentinel_slaves("market"))

    _wait(replica_known, "Sentinel to see the replica")

    async def scenario() -> None:
        pipe = AutoPipeline(url, 0.5)
        client = async_client(url, 0.5)
        assert await pipe.call("SET", "before", "1") == b"OK"
        await client.set("before-pool", "1")
        with redis.Redis(host="127.0.0.1", port=master, db=3) as direct:
            assert direct.get("before") == b"1" and direct.get("before-pool") == b"1"
        with redis.Redis(host="127.0.0.1", port=sentinel) as s:
            s.execute_command("SENTINEL", "FAILOVER", "market")
        started = time.monotonic()
        while _role(replica) != "master" or _role(master) != "slave":
            assert time.monotonic() - started < 30, "Sentinel did not fail over"
            await asyncio.sleep(0.1)
        promoted = time.monotonic()
        written = False
        while not written:  # the old master now answers READONLY: both clients move to the new one
            assert time.monotonic() - promoted < 10, "the clients did not follow the promotion"
            try:
                assert await pipe.call("SET", "after", "1") == b"OK"
                await client.set("after-pool", "1")
                written = True
            except (RedisError, OSError):
                await asyncio.sleep(0.1)
        with redis.Redis(host="127.0.0.1", port=replica, db=3) as direct:
            assert direct.get("after") == b"1" and direct.get("after-pool") == b"1"
        await pipe.aclose()
        await client.aclose()

    asyncio.run(scenario())
    with sync_client(url) as sync:  # start-up and the CLI ask the Sentinels too
        sync.set("sync", "1")
        assert sync.connection_pool.get_master_address()[1] == replica  # type: ignore[attr-defined]


def test_a_sentinel_url_without_a_reachable_sentinel_fails_fast() -> None:
    url = f"redis+sentinel://127.0.0.1:{free_port()}/market"

    async def scenario() -> None:
        pipe = AutoPipeline(url, 0.5)
        started = time.monotonic()
        with pytest.raises(RedisConnectionError, match="No master found"):
            await pipe.call("PING")
        assert time.monotonic() - started < 3
        await pipe.aclose()

    asyncio.run(scenario())

