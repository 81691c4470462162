"""One client cannot hold everyone hostage; shutdown is ordered and clean (SPEC 4, 11), over real sockets.

The attacker is 127.0.0.1; the bystander binds its socket to 127.0.0.2 (loopback on Linux; the
destination stays 127.0.0.1), so per-IP limits see two clients. Deadlines are hidden settings
(--body-timeout-s, --idle-timeout-s) so the tests take seconds, not the production 10 s / 30 s.
What Robyn cannot do is skipped with the reason (docs/operations.md has the full table).
"""

from __future__ import annotations

import json
import resource
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import RUNTIMES, ServerProcess, open_database

ATTACKERS = 2100
BYSTANDER = "127.0.0.2"
PROMPT_S = 2.0  # "answered promptly"
SHUTDOWN_LIMIT_S = 5.0
STALLED_HEAD = (b"POST /api/cooperation HTTP/1.1\r\nHost: market\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{")
ROBYN_HAS_NO_DEADLINES = ("robyn 0.88 buffers the body in actix before any Python runs and sets no header, body or "
                          "keep-alive timeout we can change (docs/operations.md)")


def _enough_files(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"needs {needed} open files; the hard RLIMIT_NOFILE is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


@contextmanager
def _sockets(port: int, count: int, first_bytes: bytes) -> Iterator[list[socket.socket]]:
    """`count` connections from 127.0.0.1 that send `first_bytes` (maybe nothing) and then stall."""
    _enough_files(count + 512)
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            if first_bytes:
                sock.sendall(first_bytes)
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _raw_request(port: int, request: bytes, source: str = "127.0.0.1", timeout: float = PROMPT_S) -> bytes:
    """Send one request on a fresh connection from `source`; everything the server sends until it closes
    or `timeout` passes (a response that did not finish in time is returned as far as it got)."""
    deadline = time.monotonic() + timeout
    with socket.socket() as sock:
        sock.bind((source, 0))
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", port))
        sock.sendall(request)
        data = b""
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data and _complete(data):
                break
        return data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def _parse(data: bytes) -> tuple[int, dict[str, str], bytes]:
    assert data, "no answer"
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def _assert_problem(data: bytes, status: int, code: str) -> dict[str, str]:
    got, headers, body = _parse(data)
    assert got == status, data[:400]
    assert headers["content-type"] == "application/problem+json"
    assert headers["access-control-allow-origin"] == "*"
    assert headers.get("x-request-id")
    assert json.loads(body)["code"] == code
    return headers


def _healthz_from_bystander(port: int) -> float:
    started = time.monotonic()
    data = _raw_request(port, b"GET /healthz HTTP/1.1\r\nHost: market\r\nConnection: close\r\n\r\n", BYSTANDER)
    elapsed = time.monotonic() - started
    assert data.startswith(b"HTTP/1.1 200"), f"no answer to another IP within {PROMPT_S} s: {data[:100]!r}"
    return elapsed


@pytest.fixture(scope="module", params=RUNTIMES)
def edge_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"edge-{request.param}") / "data"
    srv = ServerProcess(data_dir, request.param, "--public-rate", "1000000", "--body-timeout-s", "2",
                        "--idle-timeout-s", "1", "--uploads-per-ip", "50")
    yield srv
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


@pytest.fixture(scope="module", params=RUNTIMES)
def hostage_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """No effective upload cap and deadlines longer than the test: every attacker stays connected however slowly
    a loaded machine opens 2,100 sockets (with the production 10 s body deadline the first ones could be cut
    before the bystander's turn, and the check that they were all held would fail; the deadlines themselves are
    tested below). Holding longer only makes it harder for the server."""
    data_dir = tmp_path_factory.mktemp(f"hostage-{request.param}") / "data"
    srv = ServerProcess(data_dir, request.param, "--uploads-per-ip", str(ATTACKERS * 2),
                        "--body-timeout-s", "300", "--idle-timeout-s", "60")
    yield srv
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


@pytest.mark.parametrize("first_bytes", [STALLED_HEAD, b""], ids=["stalled-uploads", "idle"])
def test_another_ip_is_answered_while_one_ip_holds_2100_connections(
    hostage_server: ServerProcess, first_bytes: bytes
) -> None:
    """Granian used to serve 2,048 connections at once: the 2,049th client waited for one to end."""
    with _sockets(hostage_server.port, ATTACKERS, first_bytes) as attackers:
        _wait_accepted(hostage_server.port)  # the attacker now holds them; the bystander does not queue behind
        assert _healthz_from_bystander(hostage_server.port) < PROMPT_S
        sample = attackers[::20]  # they were all still held open, unanswered, while the bystander got in
        closed = [got for got in map(_unanswered, sample) if got is not None]
        assert not closed, f"{len(closed)} of {len(sample)} attackers were not held: {closed[:3]}"


def _wait_accepted(port: int, limit_s: float = 5.0) -> None:
    """Until the server has accepted every connection waiting on its listening socket (Linux: a LISTEN row's
    rx_queue in /proc/net/tcp is its accept queue), or `limit_s`: a server that never accepts them all (Granian
    before the fix) then fails the bystander check. The queue is FIFO, so a burst of 2,100 connections delays
    the next one by however long accepting them takes on a busy machine: that burst is not what is measured."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and _accept_queue(port) > 0:
        time.sleep(0.02)  # a kernel counter: nothing to await


def _accept_queue(port: int) -> int:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
            return int(fields[4].split(":")[1], 16)
    return 0


def _unanswered(sock: socket.socket) -> str | None:
    """None while the server holds the connection open without answering; else what happened."""
    sock.setblocking(False)
    try:
        data = sock.recv(200)
    except BlockingIOError:
        return None
    except OSError as exc:
        return repr(exc)
    return repr(data)


def test_uploads_over_the_per_ip_cap_are_refused_at_once_with_a_problem(edge_server: ServerProcess) -> None:
    if edge_server.runtime == "robyn":
        pytest.skip(ROBYN_HAS_NO_DEADLINES)
    # 60 stalled uploads from 127.0.0.1 against a cap of 50: whatever order the server sees them in, 50 are
    # admitted (and cut by the 2 s deadline) and 10 are refused at once, as long as all arrive within 2 s
    with _sockets(edge_server.port, 60, STALLED_HEAD) as uploads:
        other_ip = _raw_request(edge_server.port, STALLED_HEAD, BYSTANDER, timeout=5.0)
        answers = [_answer(sock) for sock in uploads]
    _assert_problem(other_ip, 408, "request_timeout")  # admitted (its own cap), then cut by the deadline
    statuses = sorted(_parse(answer)[0] for answer in answers)
    assert statuses == [408] * 50 + [429] * 10
    refused = next(answer for answer in answers if answer.startswith(b"HTTP/1.1 429"))
    headers = _assert_problem(refused, 429, "too_many_uploads")
    assert headers["retry-after"] == "1" and headers["connection"] == "close"


def _answer(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """What the server sends on `sock` until it closes it (or `timeout`)."""
    sock.settimeout(timeout)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_stalled_body_is_cut_with_408(edge_server: ServerProcess) -> None:
    if edge_server.runtime == "robyn":
        pytest.skip(ROBYN_HAS_NO_DEADLINES)
    started = time.monotonic()
    data = _raw_request(edge_server.port, STALLED_HEAD, timeout=5.0)
    assert 2.0 <= time.monotonic() - started < 4.0
    headers = _assert_problem(data, 408, "request_timeout")
    assert headers["connection"] == "close"  # the unread rest of the body is not taken for a next request


def test_a_dripping_body_is_cut_too(edge_server: ServerProcess) -> None:
    """The deadline covers the whole body, so one byte every 0.2 s does not keep it alive."""
    if edge_server.runtime == "robyn":
        pytest.skip(ROBYN_HAS_NO_DEADLINES)
    with socket.create_connection(("127.0.0.1", edge_server.port), timeout=5.0) as sock:
        sock.sendall(STALLED_HEAD)
        started = time.monotonic()
        sock.settimeout(0.2)
        data = b""
        while time.monotonic() - started < 5.0 and not data:
            try:
                sock.sendall(b" ")
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        assert time.monotonic() - started < 4.0
    _assert_problem(data, 408, "request_timeout")


def test_an_idle_keep_alive_connection_is_closed(edge_server: ServerProcess) -> None:
    if edge_server.runtime == "robyn":
        pytest.skip(ROBYN_HAS_NO_DEADLINES)
    with socket.create_connection(("127.0.0.1", edge_server.port), timeout=5.0) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: market\r\n\r\n")
        data = b""
        while not _complete(data):
            data += sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert sock.recv(65536) == b""  # closed by the server, not timed out by us (5 s)
        assert time.monotonic() - started < 4.0


def test_an_over_long_request_target_is_a_414_problem(edge_server: ServerProcess) -> None:
    """Under Granian's and actix's own limits (64 KiB), the pipeline answers, with CORS, not the runtime."""
    data = _raw_request(edge_server.port, b"GET /api/v1/quotes?ids=" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: m\r\n\r\n")
    _assert_problem(data, 414, "uri_too_long")


def test_sigterm_with_stalled_uploads_exits_0_quickly_and_cleanly(tmp_path: Path) -> None:
    """Granian waited for the stalled uploads, gave up after 3 s and logged an InvalidStateError traceback."""
    for runtime in RUNTIMES:
        srv = ServerProcess(tmp_path / runtime, runtime)
        with _sockets(srv.port, 300, STALLED_HEAD) as stalled, _sockets(srv.port, 50, b""):
            with httpx.Client(base_url=srv.base) as idle:  # and an idle keep-alive connection
                assert idle.get("/healthz").status_code == 200
                started = time.monotonic()
                srv.proc.send_signal(signal.SIGTERM)
                code = srv.proc.wait(SHUTDOWN_LIMIT_S + 5)
                elapsed = time.monotonic() - started
            out = srv.output()
            assert code == 0, out
            assert elapsed < SHUTDOWN_LIMIT_S, f"{runtime} took {elapsed:.2f} s"
            assert "Traceback" not in out and "did not stop" not in out and "exceeded" not in out, out
            if runtime == "granian":  # the cut uploads were told why
                stalled[0].settimeout(1.0)
                _assert_problem(stalled[0].recv(65536), 503, "shutting_down")


COOPERATION = json.dumps({"company": "Acme", "contactName": "Li", "email": "li@example.com"}).encode()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_post_in_the_shutdown_window_is_stored_with_its_jobs_or_refused(tmp_path: Path, runtime: str) -> None:
    """The outbox worker used to stop before HTTP did, so a POST in that window got 201 without its jobs."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        webhook = f"generic=http://127.0.0.1:{closed.getsockname()[1]}/hook"  # jobs are stored, never delivered
    srv = ServerProcess(tmp_path / "data", runtime, "--public-rate", "1000000", "--webhook", webhook)
    created: list[str] = []
    other: list[int] = []
    stop_at: list[float] = []
    lock = threading.Lock()

    def post_until_refused() -> None:
        with httpx.Client(base_url=srv.base, timeout=5.0) as client:
            while not stop_at or time.monotonic() < stop_at[0]:
                try:
                    resp = client.post("/api/cooperation", content=COOPERATION,
                                       headers={"content-type": "application/json"})
                except httpx.TransportError:
                    return  # refused or closed: allowed
                with lock:
                    (created.append(resp.json()["id"]) if resp.status_code == 201 else other.append(resp.status_code))

    threads = [threading.Thread(target=post_until_refused) for _ in range(6)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(created) < 30 and time.monotonic() < deadline:  # traffic is flowing: now stop the server
        time.sleep(0.01)
    srv.proc.send_signal(signal.SIGTERM)
    stop_at.append(time.monotonic() + SHUTDOWN_LIMIT_S)
    code = srv.proc.wait(SHUTDOWN_LIMIT_S + 5)
    for thread in threads:
        thread.join(10)
    assert code == 0, srv.output()
    assert set(other) <= {503}, f"answers other than 201 or a 503 refusal: {other}\n{srv.output()}"
    db = open_database(tmp_path / "data")
    try:
        with_jobs = {row[0] for row in db.execute(
            "SELECT DISTINCT record_id FROM outbox_jobs WHERE record_kind = 'cooperation'")}
    finally:
        db.close()
    missing = [rid for rid in created if rid not in with_jobs]
    assert created and not missing, f"{len(missing)} of {len(created)} got 201 without jobs"
