"""SPEC 20 with SPEC 18: a hub killed with SIGKILL while an account publishes to its own instrument (POST
/api/v1/ingest into a live feed's durable history) keeps, after the restart, exactly a prefix of what it accepted:
every tick it reported committed, in order, no gap, no duplicate; its owner's read key sees the replayed quote."""

from __future__ import annotations

import json
import signal
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from server.market.timefmt import TZ
from server.store.history.archive_sqlite import SqliteTickArchive
from tests.conftest import ServerProcess, run_cli, sqlite_only
from tests.contract.test_archive_kill import _committed

NOW = "2026-11-18T14:20:00+08:00"  # a Wednesday: ICE in session
START = datetime(2026, 11, 18, 9, 0, tzinfo=TZ).timestamp()
INSTRUMENT = {"id": "acme.blend", "name": {"zh": "定制", "en": "Blend"}, "unit": {"zh": "美元/桶", "en": "USD/bbl"},
              "currency": "USD", "decimals": 2, "venue": "ice-eu"}
BATCH = 50


def _tick(k: int) -> dict[str, Any]:
    return {"id": "acme.blend", "price": round(80 + (k % 23) * 0.05, 2), "ts": round(START + k * 0.1, 3),
            "volume": 1 + k % 7}


class Publisher:
    """Posts batches of BATCH ticks on a thread until stopped; `accepted` counts what the hub answered 200 for."""

    def __init__(self, srv: ServerProcess, secret: str) -> None:
        self.srv, self.secret, self.accepted = srv, secret, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(base_url=self.srv.base, timeout=5.0) as c:
            while not self._stop.is_set():
                body = "\n".join(json.dumps(_tick(self.accepted + j)) for j in range(BATCH))
                try:
                    resp = c.post("/api/v1/ingest", content=body, headers={
                        "X-SERVICE-Key": self.secret, "content-type": "application/x-ndjson"})
                except httpx.TransportError:
                    return  # killed
                assert resp.status_code == 200 and resp.json()["accepted"] == BATCH, resp.text
                self.accepted += BATCH

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        return self.accepted


def _console(srv: ServerProcess) -> httpx.Client:
    email, password = "acme@example.com", "correct horse"
    c = srv.client()
    assert c.post("/api/auth/register", json={"email": email, "password": password}).status_code == 201
    for args in (("plan", email, "enterprise", "--rate", "1000000"), ("namespace", email, "acme")):
        out = run_cli(srv.data_dir, "users", *args)
        assert out.returncode == 0, out.stderr
    c.headers["Authorization"] = "Bearer " + c.post("/api/auth/login", json={"email": email, "password": password}
                                                    ).json()["token"]
    return c


@sqlite_only
def test_a_kill_mid_ingest_keeps_exactly_a_committed_prefix(tmp_path: Path) -> None:
    feed_path, data = tmp_path / "ticks.jsonl", tmp_path / "data"
    feed_path.write_text("")
    args = ("--feed", f"jsonl:{feed_path}", "--clock-start", NOW, "--engine", "memory", "--ingest-rate", "1000000")
    srv = ServerProcess(data, "granian", *args)
    console = _console(srv)
    assert console.post("/api/console/instruments", json=INSTRUMENT).status_code == 201
    secrets = [console.post("/api/console/keys", json={"scope": scope}).json()["key"] for scope in ("ingest", "read")]
    publisher = Publisher(srv, secrets[0])
    try:
        deadline, seen = time.monotonic() + 30, 0
        while (seen := _committed(srv)) < 1000:  # a few group commits behind us
            assert time.monotonic() < deadline, srv.output()
            time.sleep(0.02)  # another process commits: nothing to await
        srv.proc.send_signal(signal.SIGKILL)  # still publishing: ticks accepted and not committed yet
        srv.proc.wait(10)
    finally:
        accepted = publisher.stop()
        if srv.proc.poll() is None:
            srv.stop()
    archive = SqliteTickArchive(data, readonly=True)
    try:
        rows = [tuple(r) for r in archive.read("acme.blend", 0, 2**62)]
    finally:
        archive.close()
    n = len(rows)
    assert seen <= n <= accepted + BATCH, (seen, n, accepted)  # a batch in flight may be applied, unanswered
    assert rows == [("acme.blend", round(t["ts"] * 1000), k + 1, t["price"], t["volume"])  # in order, whole
                    for k, t in enumerate(map(_tick, range(n)))]
    again = ServerProcess(data, "granian", *args)
    try:
        quote = httpx.get(f"{again.base}/api/v1/quotes/acme.blend", headers={"X-SERVICE-Key": secrets[1]}).json()
        mine = [_tick(k) for k in range(n)]
        assert (quote["seq"], quote["volume"], quote["price"]) == (n, sum(t["volume"] for t in mine),
                                                                  mine[-1]["price"]), quote
    finally:
        assert again.stop() == 0, again.output()
