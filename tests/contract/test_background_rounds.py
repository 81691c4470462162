"""Every background round of a hub (outbox, key refresh, evidence anchoring) that fails because PostgreSQL is
away logs one warning line naming the round and the cause, without a traceback, and carries on (issue 21: the
evidence anchoring logged an ERROR with a full traceback per round during an outage). PostgreSQL is cut off by
a TCP relay between the hub and it (tests/contract/test_storage_postgres.py's)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import ServerProcess, free_port
from tests.contract.test_storage_postgres import _Relay
from tests.pg_service import PG_URL, pg_schema

ROUNDS = ("outbox round", "key refresh", "anchoring pending evidence")


@pytest.fixture
def database_url() -> Iterator[str]:
    with pg_schema() as url:
        yield url


def _log_lines(srv: ServerProcess) -> list[dict[str, object]]:
    return [json.loads(line) for line in srv.output().splitlines() if line.startswith("{")]


def _failures(srv: ServerProcess) -> dict[str, list[dict[str, object]]]:
    lines = _log_lines(srv)
    return {what: [e for e in lines if str(e["msg"]).startswith(f"{what} failed")] for what in ROUNDS}


def test_every_background_round_logs_one_warning_line_while_postgresql_is_away(
        tmp_path: Path, database_url: str) -> None:
    target = urlsplit(PG_URL)
    relay = _Relay((target.hostname or "127.0.0.1", target.port or 5432))
    via_relay = database_url.replace(f"{target.hostname}:{target.port or 5432}", f"127.0.0.1:{relay.port}", 1)
    assert via_relay != database_url
    # a webhook whose receiver is down: the outbox has a job to claim and fail, round after round
    srv = ServerProcess(tmp_path / "data", "granian", "--database-url", via_relay,
                        "--webhook", f"generic=http://127.0.0.1:{free_port()}/hook")
    try:
        with httpx.Client(base_url=srv.base, timeout=30.0) as c:
            coop = {"company": "Acme", "contactName": "Li", "email": "li@example.cn", "type": "data"}
            assert c.post("/api/cooperation", json=coop).status_code == 201
            relay.set_up(False)
            deadline = time.monotonic() + 30  # the anchoring round runs every 5 s; a pool wait is 3 s
            while not all(_failures(srv).values()):
                assert time.monotonic() < deadline, {k: len(v) for k, v in _failures(srv).items()}
                time.sleep(0.2)  # the rounds run on the server's own schedule
            assert c.get("/api/v1/quotes", headers={"X-SERVICE-Key": srv.demo_key}).status_code == 200
            relay.set_up(True)
            deadline = time.monotonic() + 20
            while c.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "the hub did not see PostgreSQL back within 20 s"
                time.sleep(0.2)
        assert srv.stop() == 0
    finally:
        srv.kill()
        relay.close()
    for what, entries in _failures(srv).items():
        for entry in entries:
            assert entry["level"] == "WARNING" and "traceback" not in entry, entry
            assert str(entry["msg"]).startswith(f"{what} failed: storage unavailable (")
    bad = [e for e in _log_lines(srv) if e["level"] in ("ERROR", "CRITICAL") or "traceback" in e]
    assert bad == [], bad
