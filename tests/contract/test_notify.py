"""Notifications against real far sides: aiosmtpd as the SMTP server, a real local HTTP server as the
webhook receiver (scriptable: answer 500, an error code in a 200, or stall), the real outbox worker,
the real CLI, and a real server process killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import json
import logging
import ssl
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from server.config import Settings, Webhook
from server.core.metrics import Registry
from server.notify.channels import configured_channels
from server.notify.worker import OutboxWorker
from server.store.outbox.jobs import JobState
from server.store.site.records import Cooperation, Inquiry
from server.store.sql.db import open_db
from server.store.sql.sqlite_repos import SqliteOutbox
from server.store.sql.sqlite_sync import OutboxRepo, RecordRepo
from server.store.sql.storage import SqliteStorage
from tests.conftest import (
    RUNTIMES,
    ServerProcess,
    admin_repos,
    free_port,
    free_ports,
    run_cli,
    worker_on_sqlite,
)

# --- far sides -----------------------------------------------------------------------------------

OK_BODY = {"wecom": {"errcode": 0, "errmsg": "ok"}, "dingtalk": {"errcode": 0, "errmsg": "ok"},
           "feishu": {"code": 0, "msg": "success"}, "generic": {"received": True}}
ERROR_BODY = {"wecom": {"errcode": 45009, "errmsg": "api freq out of limit"},
              "dingtalk": {"errcode": 310000, "errmsg": "sign not match"},
              "feishu": {"code": 19021, "msg": "sign match fail or timestamp is not within one hour"},
              "generic": {"error": "nope"}}


@dataclass
class Hit:
    platform: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    answer: str

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """Webhook receiver on 127.0.0.1: the first path segment names the platform; `script` queues faults
    ("500", "errcode", "stall") per platform, served before it answers ok."""

    def __init__(self, port: int = 0) -> None:
        self.hits: list[Hit] = []
        self.script: defaultdict[str, deque[str]] = defaultdict(deque)
        self.lock = threading.Lock()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                receiver.handle(self)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length", "0")))
        parts = urlsplit(h.path)
        platform = parts.path.strip("/").split("/")[0]
        with self.lock:
            answer = self.script[platform].popleft() if self.script[platform] else "ok"
            self.hits.append(Hit(platform, parts.path, parse_qs(parts.query), dict(h.headers), body, answer))
        if answer == "stall":
            self.release.wait(30)
            h.close_connection = True
            return
        status, payload = {"ok": (200, OK_BODY), "500": (500, ERROR_BODY), "errcode": (200, ERROR_BODY)}[answer]
        data = json.dumps(payload[platform]).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def of(self, platform: str, answer: str | None = None) -> list[Hit]:
        with self.lock:
            return [h for h in self.hits if h.platform == platform and (answer is None or h.answer == answer)]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Inbox:
    """aiosmtpd handler: records every accepted message; refuses the first `refuse` with a 451."""

    refuse: int = 0
    # (envelope from, recipients, parsed message, peer)
    messages: list[tuple[str, list[str], EmailMessage, Any]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse > 0:
            self.refuse -= 1
            return "451 4.3.0 Mailbox busy, try again later"
        msg = BytesParser(policy=policy.default).parsebytes(envelope.original_content)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), msg, session.peer))
        return "250 2.0.0 OK"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


# --- helpers -------------------------------------------------------------------------------------

SECRETS = ("WECOMKEY42", "DTTOKEN42", "DTSECRET42", "FSTOKEN42", "FSSECRET42", "GENSECRET42")


def specs(settings: Settings) -> list[tuple[str, str]]:
    """The (kind, target) pairs the records service writes a job for, as the hub configures them."""
    return [(c.kind, c.target) for c in configured_channels(settings)]


def settings_for(data_dir: Path, receiver: Receiver, smtp_port: int | None, **kw: Any) -> Settings:
    hooks = (
        Webhook("wecom", f"{receiver.base}/wecom/cgi-bin/webhook/send?key=WECOMKEY42"),
        Webhook("dingtalk", f"{receiver.base}/dingtalk/robot/send?access_token=DTTOKEN42", "DTSECRET42"),
        Webhook("feishu", f"{receiver.base}/feishu/open-apis/bot/v2/hook/FSTOKEN42", "FSSECRET42"),
        Webhook("generic", f"{receiver.base}/generic/in", "GENSECRET42"),
    )
    email: dict[str, Any] = {}
    if smtp_port is not None:
        email = {"smtp_url": f"smtp://127.0.0.1:{smtp_port}", "notify_email": ("ops@example.com", "sales@example.cn")}
    defaults: dict[str, Any] = {"outbox_base_s": 0.05, "outbox_timeout_s": 1.0}
    return Settings(data_dir=data_dir, mail_from="Market <noreply@market.example>", webhooks=hooks,
                    **email, **{**defaults, **kw})


async def until(pred: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll a condition of another thread or process with a deadline (there is nothing to await)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def states(repo: OutboxRepo, kind: str, record_id: str) -> dict[str, JobState]:
    return {j.channel: j.state for j in repo.for_record(kind, record_id)}


def all_delivered(repo: OutboxRepo, kind: str, record_id: str, n: int) -> Callable[[], bool]:
    def check() -> bool:
        got = states(repo, kind, record_id)
        return len(got) == n and set(got.values()) == {JobState.DELIVERED}
    return check


COOP = Cooperation("上海某某化工有限公司", "王经理", "wang@chem.example.cn", "+86 21 5555 0000", "data",
                   "希望合作数据服务\nWe would like a data partnership.")


_STORAGES: list[SqliteStorage] = []


def worker_for(settings: Settings, registry: Registry, poll_s: float) -> OutboxWorker:
    """An outbox worker on the data dir's SQLite (a hub hands its worker the hub's storage; here one of its own,
    closed after the test)."""
    storage = SqliteStorage(settings.data_dir)
    _STORAGES.append(storage)
    return OutboxWorker(settings, registry, SqliteOutbox(storage), configured_channels(settings), poll_s=poll_s)


@pytest.fixture(autouse=True)
def _close_storages() -> Iterator[None]:
    yield
    while _STORAGES:
        _STORAGES.pop().close()


# --- in-process worker against real far sides ------------------------------------------------------

def test_every_channel_gets_the_record_in_its_own_format(
        tmp_path: Path, receiver: Receiver, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    settings = settings_for(tmp_path / "data", receiver, port)
    registry = Registry()

    async def scenario() -> str:
        worker = worker_for(settings, registry, poll_s=60.0)  # only a wake-up can deliver in time
        await worker.start()
        try:
            records = RecordRepo(open_db(settings.data_dir), channels=specs(settings))
            receipt = records.add_cooperation(COOP)
            worker.wake()  # what the hub's records service does after the commit
            repo = OutboxRepo(open_db(settings.data_dir))
            await until(all_delivered(repo, "cooperation", receipt.id, 5), "five deliveries", timeout=8.0)
            return receipt.id
        finally:
            await worker.stop()

    record_id = asyncio.run(scenario())
    jobs = {j.channel: j for j in OutboxRepo(open_db(settings.data_dir)).for_record("cooperation", record_id)}
    assert {j.attempts for j in jobs.values()} == {1}

    # e-mail: envelope, headers and a bilingual body with every field
    (mail_from, rcpts, msg, _login), = inbox.messages
    assert mail_from == "noreply@market.example"
    assert sorted(rcpts) == ["ops@example.com", "sales@example.cn"]
    assert msg["From"] == "Market <noreply@market.example>"
    assert msg["Subject"] == f"[Cooperation 合作意向] {record_id}"
    assert msg["Message-ID"] == f"<{jobs['email'].idempotency_id}@market.example>"
    text = msg.get_content()
    for value in (record_id, "上海某某化工有限公司", "王经理", "wang@chem.example.cn", "+86 21 5555 0000", "data",
                  "希望合作数据服务", "We would like a data partnership.", "公司 Company", "received"):
        assert value in text

    # each webhook in its platform's format, with the job's idempotency key
    for platform in ("wecom", "dingtalk", "feishu", "generic"):
        (hit,) = receiver.of(platform)
        assert hit.headers["Idempotency-Key"] == hit.headers["X-Idempotency-Key"] == jobs[platform].idempotency_id
        assert record_id in hit.body.decode() and "上海某某化工有限公司" in hit.body.decode()
    wecom = receiver.of("wecom")[0]
    assert wecom.query == {"key": ["WECOMKEY42"]} and wecom.json["msgtype"] == "markdown"
    assert f"[Cooperation 合作意向] {record_id}" in wecom.json["markdown"]["content"]
    ding = receiver.of("dingtalk")[0]
    assert ding.json["msgtype"] == "markdown" and ding.json["markdown"]["title"].endswith(record_id)
    ts = ding.query["timestamp"][0]
    assert abs(int(ts) / 1000 - time.time()) < 60
    expected = base64.b64encode(hmac.new(b"DTSECRET42", f"{ts}\nDTSECRET42".encode(), hashlib.sha256).digest())
    assert ding.query["sign"] == [expected.decode()] and ding.query["access_token"] == ["DTTOKEN42"]
    feishu = receiver.of("feishu")[0].json
    assert feishu["msg_type"] == "text" and record_id in feishu["content"]["text"]
    key = f"{feishu['timestamp']}\nFSSECRET42".encode()
    assert feishu["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    generic = receiver.of("generic")[0]
    assert generic.json["kind"] == "cooperation" and generic.json["id"] == record_id
    assert generic.json["record"]["contactName"] == "王经理" and generic.json["record"]["id"] == record_id
    signed = generic.headers["X-Market-Timestamp"].encode() + b"." + generic.body
    assert generic.headers["X-Market-Signature"] == "sha256=" + hmac.new(
        b"GENSECRET42", signed, hashlib.sha256).hexdigest()

    metrics = registry.render().decode()
    for channel in ("email", "wecom", "dingtalk", "feishu", "generic"):
        assert f'market_outbox_deliveries_total{{channel="{channel}"}} 1' in metrics
    assert "market_outbox_backlog 0" in metrics


def test_faults_are_retried_until_the_far_side_recovers(
        tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    inbox, port = Inbox(refuse=2), free_port()  # SMTP is down at first, then answers 451 twice
    receiver.script["generic"].extend(["500", "500", "500"])
    receiver.script["wecom"].extend(["errcode", "errcode"])  # HTTP 200 with errcode != 0
    receiver.script["dingtalk"].extend(["stall"])  # times out
    receiver.script["feishu"].extend(["errcode", "500"])
    settings = settings_for(tmp_path / "data", receiver, port, outbox_timeout_s=1.0)
    registry = Registry()
    caplog.set_level(logging.DEBUG)  # every logger, libraries included (httpx logs URLs at INFO)

    async def scenario() -> str:
        worker = worker_for(settings, registry, poll_s=0.05)
        await worker.start()
        try:
            receipt = RecordRepo(open_db(settings.data_dir), channels=specs(settings)).add_inquiry(
                Inquiry("usr_1", "buyer@example.com", "甲醇", 200.0, "吨", "急需", "宁波", "13800000000"))
            worker.wake()
            repo = OutboxRepo(open_db(settings.data_dir))
            await until(lambda: states(repo, "inquiry", receipt.id)["email"] is JobState.FAILED, "SMTP down")
            smtp_server.start()  # the SMTP server comes up
            await until(all_delivered(repo, "inquiry", receipt.id, 5), "delivery after faults", timeout=15.0)
            return receipt.id
        finally:
            await worker.stop()

    smtp_server = Controller(inbox, hostname="127.0.0.1", port=port)
    try:
        record_id = asyncio.run(scenario())
    finally:
        smtp_server.stop()
    jobs = {j.channel: j for j in OutboxRepo(open_db(settings.data_dir)).for_record("inquiry", record_id)}
    assert jobs.pop("email").attempts >= 4  # >= 1 while down, 2 refused, 1 accepted
    assert {c: j.attempts for c, j in jobs.items()} == {"generic": 4, "wecom": 3, "dingtalk": 2, "feishu": 3}
    assert len(inbox.messages) == 1 and inbox.messages[0][2]["Subject"] == f"[Inquiry 询价] {record_id}"
    for platform, n in (("generic", 4), ("wecom", 3), ("dingtalk", 2), ("feishu", 3)):
        hits = receiver.of(platform)
        assert len(hits) == n and len({h.headers["Idempotency-Key"] for h in hits}) == 1  # same key each time
        assert len(receiver.of(platform, "ok")) == 1
    metrics = registry.render().decode()
    assert 'market_outbox_attempts_total{channel="generic"} 4' in metrics
    assert 'market_outbox_failures_total{channel="generic"} 3' in metrics
    assert 'market_outbox_failures_total{channel="wecom"} 2' in metrics
    failures = [r.getMessage() for r in caplog.records if "outbox failed" in r.getMessage()]
    assert any("wecom errcode 45009" in m for m in failures)
    assert any("feishu code 19021" in m for m in failures)
    assert any("timed out" in m and "dingtalk 127.0.0.1" in m for m in failures)
    assert any("HTTP 500" in m for m in failures) and any("smtp 451" in m for m in failures)
    assert any("smtp SMTPConnectError" in m for m in failures)
    for secret in SECRETS:  # neither tokens nor signing secrets reach a log line
        assert secret not in caplog.text


@worker_on_sqlite
def test_dead_letters_are_listed_and_retried_from_the_cli(tmp_path: Path, receiver: Receiver) -> None:
    smtp_port = free_port()  # nothing listens there: SMTP is down
    receiver.script["generic"].extend(["500"] * 10)
    settings = settings_for(tmp_path / "data", receiver, smtp_port, outbox_max_attempts=2)
    registry = Registry()

    async def scenario() -> None:
        worker = worker_for(settings, registry, poll_s=0.1)
        await worker.start()
        try:
            receipt = RecordRepo(open_db(settings.data_dir), channels=specs(settings)).add_cooperation(COOP)
            worker.wake()
            repo = OutboxRepo(open_db(settings.data_dir))
            want = {"email": JobState.DEAD, "generic": JobState.DEAD, "wecom": JobState.DELIVERED,
                    "dingtalk": JobState.DELIVERED, "feishu": JobState.DELIVERED}
            await until(lambda: states(repo, "cooperation", receipt.id) == want, "two dead letters")
            metrics = registry.render().decode()
            assert 'market_outbox_dead_letters_total{channel="email"} 1' in metrics
            # the gauge is the worker's count from its next round (read from storage off the loop)
            await until(lambda: "market_outbox_dead 2" in registry.render().decode(), "the dead-letter gauge")

            listed = await asyncio.to_thread(run_cli, settings.data_dir, "outbox", "list", "--status", "dead", "--json")
            assert listed.returncode == 0, listed.stderr
            dead = {j["channel"]: j for j in json.loads(listed.stdout)}
            assert set(dead) == {"email", "generic"}
            assert dead["email"]["attempts"] == 2 and "smtp" in dead["email"]["lastError"]
            assert dead["generic"]["lastError"] == "HTTP 500" and dead["generic"]["target"] == (
                f"generic 127.0.0.1:{receiver.port}")
            assert all(s not in listed.stdout for s in SECRETS)

            receiver.script["generic"].clear()  # the receiver recovers; the operator retries
            retried = await asyncio.to_thread(run_cli, settings.data_dir, "outbox", "retry", dead["generic"]["id"])
            assert retried.returncode == 0, retried.stderr
            await until(lambda: states(repo, "cooperation", receipt.id)["generic"] is JobState.DELIVERED,
                        "delivery after a CLI retry (picked up by polling)")
            again = await asyncio.to_thread(run_cli, settings.data_dir, "outbox", "retry", dead["generic"]["id"])
            assert again.returncode == 1 and "delivered" in again.stderr
        finally:
            await worker.stop()

    asyncio.run(scenario())
    assert len(receiver.of("generic", "ok")) == 1


def test_stop_mid_send_puts_the_job_back_and_the_resend_keeps_its_idempotency_key(
        tmp_path: Path, receiver: Receiver) -> None:
    receiver.script["generic"].append("stall")
    only_generic = Webhook("generic", f"{receiver.base}/generic/in")
    settings = Settings(data_dir=tmp_path / "data", webhooks=(only_generic,), outbox_base_s=0.05,
                        outbox_timeout_s=20.0)

    async def scenario() -> str:
        worker = worker_for(settings, Registry(), poll_s=0.05)
        await worker.start()
        receipt = RecordRepo(open_db(settings.data_dir), channels=specs(settings)).add_cooperation(COOP)
        worker.wake()
        await until(lambda: len(receiver.of("generic")) == 1, "the stalled request")
        await worker.stop()  # the send is cut off: the job must not stay in sending
        # a record accepted while no worker runs still gets its jobs; the next worker delivers them
        late = RecordRepo(open_db(settings.data_dir), channels=specs(settings)).add_cooperation(COOP)
        (job,) = OutboxRepo(open_db(settings.data_dir)).for_record("cooperation", receipt.id)
        assert (job.state, job.attempts) == (JobState.PENDING, 1)
        receiver.release.set()
        worker = worker_for(settings, Registry(), poll_s=0.05)
        await worker.start()
        repo = OutboxRepo(open_db(settings.data_dir))
        try:
            await until(all_delivered(repo, "cooperation", receipt.id, 1), "redelivery")
            await until(all_delivered(repo, "cooperation", late.id, 1), "the late record's delivery")
        finally:
            await worker.stop()
        return receipt.id

    record_id = asyncio.run(scenario())
    first, second = (r for r in receiver.of("generic") if record_id in r.body.decode())
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"]  # the far side can drop one


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_smtp_starttls_with_auth_and_implicit_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts our test CA through the default context
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth: Any) -> AuthResult:
        assert isinstance(auth, LoginPassword)
        logins.append((auth.login, auth.password))
        return AuthResult(success=auth.login == b"bot@market.example" and auth.password == b"p@ss:w0rd")

    starttls_inbox, tls_inbox = Inbox(), Inbox()
    starttls_port, tls_port = free_ports(2)
    starttls = Controller(starttls_inbox, hostname="127.0.0.1", port=starttls_port, tls_context=server_tls,
                          require_starttls=True, authenticator=authenticator, auth_required=True)
    implicit = Controller(tls_inbox, hostname="127.0.0.1", port=tls_port, ssl_context=server_tls)
    starttls.start()
    implicit.start()
    try:
        for url, inbox in ((f"smtp://bot%40market.example:p%40ss%3Aw0rd@127.0.0.1:{starttls_port}", starttls_inbox),
                           (f"smtps://127.0.0.1:{tls_port}", tls_inbox)):
            data_dir = tmp_path / f"data-{len(logins)}-{inbox is tls_inbox}"
            settings = Settings(data_dir=data_dir, smtp_url=url, notify_email=("ops@example.com",),
                                mail_from="noreply@market.example", outbox_base_s=0.05, outbox_timeout_s=3.0)

            async def scenario(settings: Settings = settings) -> None:
                worker = worker_for(settings, Registry(), poll_s=0.05)
                await worker.start()
                try:
                    receipt = RecordRepo(open_db(settings.data_dir), channels=specs(settings)).add_cooperation(COOP)
                    worker.wake()
                    repo = OutboxRepo(open_db(settings.data_dir))
                    await until(all_delivered(repo, "cooperation", receipt.id, 1), "TLS delivery")
                finally:
                    await worker.stop()

            asyncio.run(scenario())
            (_, rcpts, msg, _peer), = inbox.messages
            assert rcpts == ["ops@example.com"] and msg["Subject"].startswith("[Cooperation 合作意向] coop_")
        # require_starttls refuses MAIL before STARTTLS, AUTH is refused in clear, and the smtps listener
        # speaks only TLS: each delivery proves its TLS mode
        assert logins == [(b"bot@market.example", b"p@ss:w0rd")]
    finally:
        starttls.stop()
        implicit.stop()


# --- a real server process, killed with SIGKILL ----------------------------------------------------

def _jobs(data_dir: Path, record_id: str) -> list[Any]:
    repos = admin_repos(data_dir)
    try:
        return sorted(repos.outbox.for_record("cooperation", record_id), key=lambda j: j.target[-1])  # a, b
    finally:
        repos.close()


def _submit(srv: ServerProcess, company: str) -> str:
    with srv.client() as client:
        started = time.monotonic()
        response = client.post("/api/cooperation", json={"company": company, "contactName": "赵女士",
                                                         "email": "zhao@example.cn", "type": "partnership"})
        elapsed = time.monotonic() - started
    assert response.status_code == 201, response.text
    assert elapsed < 2.0  # the answer never waits for a delivery (one receiver is down, one stalls for 30 s)
    return str(response.json()["id"])


def test_kill_9_between_accepting_and_delivering_loses_nothing_and_resends_nothing(tmp_path: Path) -> None:
    down_port = free_port()  # receiver A is down while the first server runs
    stalling = Receiver()  # receiver B takes the request and never answers: that job is in `sending` at the kill
    stalling.script["generic"].append("stall")
    data_dir = tmp_path / "data"
    flags = ("--webhook", f"generic=http://127.0.0.1:{down_port}/generic/a", "--webhook",
             f"generic={stalling.base}/generic/b", "--outbox-base-s", "0.2", "--outbox-timeout-s", "30",
             "--outbox-max-attempts", "50")
    up: Receiver | None = None
    first = ServerProcess(data_dir, "granian", *flags)
    try:
        record_id = _submit(first, "鼎信石化")
        deadline = time.monotonic() + 10
        while True:  # polling another process's database: nothing to await
            a, b = _jobs(data_dir, record_id)
            if a.attempts >= 1 and a.state is JobState.FAILED and b.state is JobState.SENDING and stalling.hits:
                break
            assert time.monotonic() < deadline, f"jobs never reached failed/sending: {a} {b}\n{first.output()}"
            time.sleep(0.02)
        assert a.last_error == "ConnectError: All connection attempts failed"
    finally:
        first.kill()
    assert first.proc.returncode == -9
    try:
        up = Receiver(port=down_port)  # A comes up; B answers from now on
        stalling.release.set()
        second = ServerProcess(data_dir, "granian", *flags)
        try:
            deadline = time.monotonic() + 15
            while {j.state for j in _jobs(data_dir, record_id)} != {JobState.DELIVERED}:
                assert time.monotonic() < deadline, f"not delivered after restart:\n{second.output()}"
                time.sleep(0.05)
        finally:
            assert second.stop() == 0
        third = ServerProcess(data_dir, "granian", *flags)  # a delivered job is never sent again
        try:
            later = _submit(third, "后来者")
            deadline = time.monotonic() + 10
            while {j.state for j in _jobs(data_dir, later)} != {JobState.DELIVERED}:
                assert time.monotonic() < deadline, third.output()
                time.sleep(0.05)
        finally:
            assert third.stop() == 0
        assert "recovered=1" in second.log_path.read_text()  # the job cut off in `sending` was put back
    finally:
        if up is not None:
            up.close()
        stalling.close()

    def ids(r: Receiver, record: str) -> list[str]:
        return [h.headers["Idempotency-Key"] for h in r.of("generic") if h.json["id"] == record]

    assert len(ids(up, record_id)) == 1 and len(ids(up, later)) == 1  # none lost, none re-sent
    # B: the request cut off by the kill was sent again after the restart, with the same idempotency key,
    # which is the documented at-least-once window; a receiver that dedupes on the key sees it once
    assert len(ids(stalling, record_id)) == 2 and len(set(ids(stalling, record_id))) == 1
    assert len(ids(stalling, later)) == 1


# --- through the public HTTP API, on each runtime ----------------------------------------------------

@pytest.mark.parametrize("runtime", RUNTIMES)
def test_public_api_records_are_notified_on_every_channel(
        runtime: str, tmp_path: Path, receiver: Receiver, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    srv = ServerProcess(
        tmp_path / "data", runtime, "--public-rate", "100000",
        "--smtp-url", f"smtp://127.0.0.1:{port}", "--notify-email", "ops@example.com",
        "--mail-from", "noreply@market.example",
        "--webhook", f"wecom={receiver.base}/wecom/send?key=WECOMKEY42",
        "--webhook", f"generic={receiver.base}/generic/in",
    )
    try:
        with srv.client() as client:
            coop = client.post("/api/cooperation", json={"company": "华东贸易", "contactName": "陈先生",
                                                          "phone": "+86 21 6666 0000", "message": "数据合作"})
            assert coop.status_code == 201, coop.text
            assert client.post("/api/auth/register", json={"email": "buyer@example.com",
                                                            "password": "long-enough-1"}).status_code == 201
            login = client.post("/api/auth/login", json={"email": "buyer@example.com", "password": "long-enough-1"})
            token = login.json()["token"]
            inquiry = client.post("/api/submit-inquiry", headers={"Authorization": f"Bearer {token}"},
                                  json={"product": "聚丙烯 PP", "quantity": 120, "unit": "吨"})
            assert inquiry.status_code == 201, inquiry.text
            ids = {coop.json()["id"], inquiry.json()["id"]}
            deadline = time.monotonic() + 10
            counted = [f'market_outbox_deliveries_total{{channel="{ch}"}} 2' for ch in ("email", "wecom", "generic")]
            # another process delivers: poll; the hub counts a delivery just after recording it, a moment after
            # the far side got it, so the counters are awaited too
            while len(inbox.messages) < 2 or len(receiver.hits) < 4 or not all(
                    c in (metrics := client.get("/metrics").text) for c in counted):
                assert time.monotonic() < deadline, srv.output()
                time.sleep(0.05)
        subjects = {m[2]["Subject"] for m in inbox.messages}
        assert subjects == {f"[Cooperation 合作意向] {coop.json()['id']}", f"[Inquiry 询价] {inquiry.json()['id']}"}
        assert {h.json["id"] for h in receiver.of("generic")} == ids
        assert all(any(i in h.json["markdown"]["content"] for i in ids) for h in receiver.of("wecom"))
        for channel in ("email", "wecom", "generic"):
            assert f'market_outbox_deliveries_total{{channel="{channel}"}} 2' in metrics
        listed = run_cli(srv.data_dir, "outbox", "list", "--status", "delivered", "--json")
        rows = json.loads(listed.stdout)
        assert len(rows) == 6 and {r["recordId"] for r in rows} == ids
        assert "WECOMKEY42" not in listed.stdout and "WECOMKEY42" not in srv.output()
    finally:
        assert srv.stop() == 0


def test_a_locked_account_s_owner_is_mailed(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    """Issue 45: the failed login that locks an account (server/core/login_throttle.py) e-mails its owner through
    the outbox, once; the address does not matter (one address here: its login bucket allows ten a minute)."""
    from server.core.login_throttle import LOCK_AFTER

    inbox, port = smtp
    srv = ServerProcess(tmp_path / "data", "granian", "--smtp-url", f"smtp://127.0.0.1:{port}",
                        "--notify-email", "ops@example.com", "--mail-from", "noreply@market.example")
    try:
        with srv.client() as client:
            assert client.post("/api/auth/register", json={"email": "owner@example.com",
                                                            "password": "long-enough-1"}).status_code == 201
            wrong = {"email": "owner@example.com", "password": "guessed wrong"}
            statuses = [client.post("/api/auth/login", json=wrong).status_code for _ in range(LOCK_AFTER)]
            assert statuses[-1] in (401, 429) and 429 in statuses, statuses
        deadline = time.monotonic() + 10
        while not inbox.messages:  # the outbox worker is another task of the hub: poll with a deadline
            assert time.monotonic() < deadline, srv.output()[-3000:]
            time.sleep(0.05)
        (mail_from, rcpts, msg, _peer), = inbox.messages
        assert rcpts == ["owner@example.com"] and mail_from == "noreply@market.example"
        assert msg["Subject"].startswith("[Sign-in locked 登录已锁定] usr_")
        assert "locked for 15 minutes" in msg.get_body(("plain",)).get_content()
    finally:
        assert srv.stop() == 0, srv.output()[-3000:]
