"""SPEC 20's incidents and maintenance (issue 42 item 5) on real servers: the CLI's open/update/resolve and
maintenance shown by /api/v1/status and /api/v1/status/incidents; the console's operator routes (a customer: 403);
a JSONL feed silent in session past --feed-outage-s opening one incident by itself and resolving it when ticks
return; and exactly one e-mail per update to an enterprise account and to an account that opted in (aiosmtpd)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.conftest import ServerProcess, free_port, run_cli
from tests.contract.test_notify import Inbox
from tests.redis_service import redis_prefix, require_redis

PASSWORD = "correct horse"
MONDAY = "2026-11-23T10:00:00+08:00"  # ICE Futures Europe (brent) is in session


def _until(check: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    """Poll another process's effect (the board's refresh, the watch, the outbox) with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"not seen within {timeout}s: {what}"
        time.sleep(0.05)


def _status(srv: ServerProcess) -> dict[str, Any]:
    resp = httpx.get(srv.base + "/api/v1/status")
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def _listed(srv: ServerProcess) -> dict[str, Any]:
    resp = httpx.get(srv.base + "/api/v1/status/incidents")
    assert resp.status_code == 200 and resp.headers["cache-control"] == "no-store", resp.text
    return resp.json()  # type: ignore[no-any-return]


def _cli(srv: ServerProcess, *args: str) -> str:
    out = run_cli(srv.data_dir, *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _login(srv: ServerProcess, email: str, *create: str) -> httpx.Client:
    if create:
        _cli(srv, "users", "create", "--email", email, "--password", PASSWORD, *create[1:])
    c = srv.client()
    resp = c.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert resp.status_code == 200, resp.text
    c.headers["Authorization"] = "Bearer " + resp.json()["token"]
    return c


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path_factory.mktemp("incidents") / "data", "granian")
    yield server
    assert server.stop() == 0, server.output()


def test_cli_incident_and_maintenance_show_on_the_status_routes(srv: ServerProcess) -> None:
    out = _cli(srv, "incidents", "open", "--title", "Delayed quotes", "--impact", "critical", "--component",
               "feed:ice-eu")
    inc_id = out.split()[1]
    assert inc_id.startswith("inc_")

    def shown() -> dict[str, Any] | None:
        return next((i for i in _status(srv)["incidents"] if i["id"] == inc_id), None)

    inc = _until(shown, "the incident on /api/v1/status")
    assert (inc["name"], inc["status"], inc["impact"], inc["components"]) == (
        "Delayed quotes", "investigating", "critical", ["feed:ice-eu"])
    assert _status(srv)["status"]["indicator"] == "critical"  # an open critical incident is the page's indicator
    _cli(srv, "incidents", "update", inc_id, "--status", "identified", "--message", "A gateway is down.")
    _until(lambda: (shown() or {}).get("status") == "identified", "the update")
    start = datetime.now().astimezone().replace(microsecond=0)
    _cli(srv, "maintenance", "add", "--title", "Database upgrade", "--from", start.isoformat(), "--to",
         start.replace(year=start.year + 1).isoformat())
    maint = _until(lambda: _status(srv)["scheduledMaintenances"], "the maintenance")
    assert [(m["name"], m["status"]) for m in maint] == [("Database upgrade", "in_progress")]
    _cli(srv, "incidents", "resolve", inc_id)
    _until(lambda: shown() is None, "the resolved incident leaving /api/v1/status")
    listed = next(i for i in _listed(srv)["incidents"] if i["id"] == inc_id)
    assert listed["status"] == "resolved" and listed["resolvedAt"] is not None
    assert [u["status"] for u in listed["updates"]] == ["resolved", "identified", "investigating"]
    assert listed["updates"][1]["body"] == "A gateway is down."
    assert _listed(srv)["asOf"] is not None
    # bad input: one line, exit 2
    for args in (("incidents", "open", "--title", "x", "--impact", "huge"),
                 ("incidents", "open", "--title", "x", "--impact", "minor", "--component", "feed:nowhere"),
                 ("incidents", "update", inc_id, "--status", "monitoring", "--message", "again"),
                 ("incidents", "resolve", "inc_000000000000"),
                 ("maintenance", "add", "--title", "x", "--from", "2026-12-01T03:00", "--to", "2026-12-01T02:00")):
        bad = run_cli(srv.data_dir, *args)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, (args, bad.stderr)


def test_console_operator_routes_and_a_customer_s_403(srv: ServerProcess) -> None:
    with closing(_login(srv, "ops@example.com", "create", "--operator")) as ops, \
            closing(_login(srv, "someone@example.com", "create")) as customer:
        for method, path in (("GET", "/api/console/incidents"), ("POST", "/api/console/incidents"),
                             ("POST", "/api/console/incidents/inc_x/updates"),
                             ("POST", "/api/console/incidents/inc_x/resolve"), ("GET", "/api/console/maintenances"),
                             ("POST", "/api/console/maintenances")):
            resp = customer.request(method, path, json={})
            assert resp.status_code == 403 and resp.json()["code"] == "forbidden", (path, resp.text)
        bad = ops.post("/api/console/incidents", json={"title": "", "impact": "huge", "components": ["nope"]})
        assert bad.status_code == 400 and {e["field"] for e in bad.json()["errors"]} == {"title", "impact",
                                                                                          "components"}
        made = ops.post("/api/console/incidents", json={"title": "Slow stream", "impact": "minor",
                                                         "components": ["stream"]})
        assert made.status_code == 201, made.text
        inc = made.json()
        assert inc["id"] in {i["id"] for i in _status(srv)["incidents"]}  # this hub's board is poked at once
        upd = ops.post(f"/api/console/incidents/{inc['id']}/updates", json={"status": "monitoring",
                                                                             "message": "A fix is out."})
        assert upd.status_code == 200 and upd.json()["status"] == "monitoring", upd.text
        assert ops.post(f"/api/console/incidents/{inc['id']}/resolve").json()["status"] == "resolved"
        gone = ops.post(f"/api/console/incidents/{inc['id']}/resolve")
        assert gone.status_code == 409, gone.text
        assert ops.post("/api/console/incidents/inc_nope/resolve").status_code == 404
        assert inc["id"] in {i["id"] for i in ops.get("/api/console/incidents").json()["items"]}
        window = ops.post("/api/console/maintenances", json={"title": "Upgrade", "from": "2030-01-01T02:00:00+08:00",
                                                             "to": "2030-01-01T01:00:00+08:00"})
        assert window.status_code == 400 and window.json()["errors"][0]["field"] == "to"
        made_m = ops.post("/api/console/maintenances", json={"title": "Upgrade", "from": "2030-01-01T02:00:00+08:00",
                                                             "to": "2030-01-01T03:00:00+08:00"})
        assert made_m.status_code == 201 and made_m.json()["status"] == "scheduled", made_m.text
        # every account chooses whether it is mailed; a customer (not enterprise) is not by default
        assert customer.get("/api/console/notifications").json() == {"incidents": False, "default": False,
                                                                      "chosen": False}
        assert customer.post("/api/console/notifications", json={"incidents": True}).json()["incidents"] is True
        assert customer.post("/api/console/notifications", json={"incidents": "yes"}).status_code == 400


def _append(path: Path, *ticks: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write("".join(json.dumps(t) + "\n" for t in ticks))


def test_a_silent_feed_opens_one_incident_by_itself_and_resolves_it(tmp_path: Path) -> None:
    feed = tmp_path / "ticks.jsonl"
    feed.write_text("")
    srv = ServerProcess(tmp_path / "data", "granian", "--feed", f"jsonl:{feed}", "--no-demo-key", "--clock-start",
                        MONDAY, "--stale-after", "1", "--feed-outage-s", "3", "--engine", "memory")
    now = datetime.fromisoformat(MONDAY).timestamp()
    try:
        _append(feed, {"id": "brent", "price": 80.0, "ts": now + 1})

        def feed_incidents() -> list[dict[str, Any]]:
            return [i for i in _listed(srv)["incidents"] if i["components"] == ["feed:ice-eu"]]

        opened = _until(lambda: [i for i in _status(srv)["incidents"] if i["components"] == ["feed:ice-eu"]],
                        "the automatic incident", timeout=20)
        assert len(opened) == 1 and opened[0]["automatic"] and opened[0]["impact"] == "major"
        assert next(c for c in _status(srv)["components"] if c["id"] == "feed:ice-eu")["status"] == "major_outage"
        _until(lambda: _listed(srv)["asOf"], "a board read")
        _append(feed, {"id": "brent", "price": 80.5, "ts": now + 2})
        resolved = _until(lambda: [i for i in feed_incidents() if i["status"] == "resolved"], "the resolution",
                          timeout=20)
        assert len(feed_incidents()) == 1 and len(resolved) == 1, feed_incidents()
        assert [u["status"] for u in resolved[0]["updates"]] == ["resolved", "investigating"]
        assert not [i for i in _status(srv)["incidents"] if i["components"] == ["feed:ice-eu"]]
    finally:
        assert srv.stop() == 0, srv.output()[-3000:]


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


def test_each_update_mails_each_account_told_once(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    srv = ServerProcess(tmp_path / "data", "granian", "--smtp-url", f"smtp://127.0.0.1:{port}", "--mail-from",
                        "status@market.example", "--notify-email", "ops@example.com")
    try:
        _cli(srv, "users", "create", "--email", "big@example.com", "--password", PASSWORD)
        _cli(srv, "users", "plan", "big@example.com", "enterprise", "--rate", "1200")
        _cli(srv, "users", "create", "--email", "small@example.com", "--password", PASSWORD)
        _cli(srv, "users", "create", "--email", "quiet@example.com", "--password", PASSWORD)  # told nothing
        with closing(_login(srv, "small@example.com")) as small:
            assert small.post("/api/console/notifications", json={"incidents": True}).status_code == 200
        inc_id = _cli(srv, "incidents", "open", "--title", "Delayed quotes", "--impact", "major").split()[1]
        _cli(srv, "incidents", "update", inc_id, "--status", "monitoring", "--message", "A fix is out.")
        _cli(srv, "incidents", "resolve", inc_id)
        _until(lambda: len(inbox.messages) >= 6, "six mails", timeout=20)
        listed = _until(lambda: [i for i in _listed(srv)["incidents"] if i["id"] == inc_id and i["resolvedAt"]],
                        "the resolution on the board")
        # a few more board refreshes (every 2 s) must write nothing more: wait for two, then count
        read = _listed(srv)["asOf"]
        _until(lambda: _listed(srv)["asOf"] != read, "a board refresh")
        read = _listed(srv)["asOf"]
        _until(lambda: _listed(srv)["asOf"] != read, "another board refresh")
        rcpts = sorted(tuple(r) for _, r, _, _ in inbox.messages)
        assert rcpts == [("big@example.com",)] * 3 + [("small@example.com",)] * 3, rcpts
        bodies = [m.get_body(("plain",)).get_content() for _, _, m, _ in inbox.messages]
        assert all(inc_id in b for b in bodies) and sum("A fix is out." in b for b in bodies) == 2
        assert all(m["Subject"] == f"[Incident update 故障通报] {inc_id}" for _, _, m, _ in inbox.messages)
        assert len(listed[0]["updates"]) == 3
    finally:
        assert srv.stop() == 0, srv.output()[-3000:]


def test_two_hubs_on_redis_open_one_incident_per_silent_feed(tmp_path: Path) -> None:
    """Two hubs on one Redis prefix and one data dir, both following the JSONL file (the lease holder reads it,
    both apply it): each silent feed gets one incident, not one per hub, and one resolution."""
    url = require_redis()
    feed = tmp_path / "ticks.jsonl"
    feed.write_text("")
    now = datetime.fromisoformat(MONDAY).timestamp()
    with redis_prefix(url) as prefix:
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--feed", f"jsonl:{feed}",
                 "--no-demo-key", "--clock-start", MONDAY, "--stale-after", "1", "--feed-outage-s", "3")
        a = ServerProcess(tmp_path / "data", "granian", *flags)
        b = ServerProcess(tmp_path / "data", "granian", *flags)
        try:
            _append(feed, {"id": "brent", "price": 80.0, "ts": now + 1})

            def ice(srv: ServerProcess) -> list[dict[str, Any]]:
                return [i for i in _listed(srv)["incidents"] if i["components"] == ["feed:ice-eu"]]

            _until(lambda: ice(a) and ice(b), "the incident on both hubs", timeout=20)
            _append(feed, {"id": "brent", "price": 80.5, "ts": now + 2})
            _until(lambda: [i for i in ice(a) if i["resolvedAt"]] and [i for i in ice(b) if i["resolvedAt"]],
                   "the resolution on both hubs", timeout=20)
            # another venue still silent shows its incident was not opened twice either (checked each second)
            listed = _listed(a)["incidents"]
            keys = [tuple(i["components"]) for i in listed if i["automatic"]]
            assert len(keys) == len(set(keys)) and ("feed:ice-eu",) in keys, keys
            brent, = ice(a)
            assert [u["status"] for u in brent["updates"]] == ["resolved", "investigating"]
        finally:
            codes = [hub.stop() for hub in (a, b)]
            assert codes == [0, 0], f"{codes}\n{a.output()[-3000:]}\n{b.output()[-3000:]}"
