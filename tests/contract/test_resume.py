"""Resume after reconnect (SPEC 7) and the handshake key header, against the real server on both runtimes.

The feed is a jsonl file this module writes, so every tick is known: 10,000 ticks over five
instruments, read by a client that drops its connection several times (mid-stream and mid-replay)
and resumes with since/epoch, must come out contiguous from seq 1 with no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from tests.conftest import RUNTIMES, ServerProcess, run_cli

T = TypeVar("T")
RESUME_IDS = ["brent", "wti", "sc", "dubai", "oman"]
PER_ID = 2000  # 5 x 2,000 = 10,000 ticks
OLD_ID = "fu"  # ticks stamped over the last ~22 minutes: the history keeps only part of them
OLD_TICKS = 1300


class Feed:
    """The server's jsonl feed file: lines appended here reach the server (it follows the file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def append(self, lines: list[dict[str, Any]]) -> None:
        with self.path.open("a") as fh:
            fh.write("".join(json.dumps(line) + "\n" for line in lines))
            fh.flush()


@pytest.fixture(scope="module", params=RUNTIMES)
def feed_server(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Feed]]:
    """--log-level debug: the test that the key is never logged sees everything the server can say."""
    root = tmp_path_factory.mktemp(f"resume-{request.param}")
    feed = Feed(root / "ticks.jsonl")
    srv = ServerProcess(root / "data", request.param, "--public-rate", "100000", "--feed", f"jsonl:{feed.path}",
                        "--log-level", "debug")
    yield srv, feed
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


def run(coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def recv_json(ws: ClientConnection, timeout: float = 10.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def open_ws(srv: ServerProcess, **kw: Any) -> tuple[ClientConnection, dict[str, Any]]:
    ws = await connect(f"{srv.ws_base}/ws/quotes?key={srv.demo_key}", max_queue=None, **kw)
    first = await recv_json(ws)
    assert first["type"] == "snapshot"
    return ws, first


async def request(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    """Send a message with a reqId; the answer to it (ticks and snapshots before it are skipped)."""
    await ws.send(json.dumps(message))
    while True:
        msg = await recv_json(ws)
        if msg["type"] in ("subscribed", "error", "pong") and msg.get("reqId") == message.get("reqId"):
            return msg


async def wait_seq(srv: ServerProcess, inst: str, seq: int, timeout: float = 20.0) -> tuple[str, int]:
    """(epoch, seq) once the server has applied `inst` up to `seq` (its snapshots say so)."""
    ws, _ = await open_ws(srv)
    try:
        await request(ws, {"op": "subscribe", "ids": [inst], "reqId": "w"})
        snap = await recv_json(ws)
        epoch, last = snap["epoch"], snap["seqs"][inst]
        while last < seq:
            msg = await recv_json(ws, timeout)
            last = msg["seq"] if msg["type"] == "tick" else last
        return epoch, last
    finally:
        await ws.close()


def metric(srv: ServerProcess, name: str) -> float:
    for line in httpx.get(srv.base + "/metrics", timeout=5).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def conflated(srv: ServerProcess) -> float:
    """Ticks conflated in slow clients' buffers so far (0 before the first: the counter appears with it)."""
    name = "market_ws_ticks_conflated_total"
    lines = httpx.get(srv.base + "/metrics", timeout=5).text.splitlines()
    return sum(float(line.split()[-1]) for line in lines if line.startswith((name + " ", name + "{")))


def ticks_for(inst: str, n: int, price: float = 100.0) -> list[dict[str, Any]]:
    return [{"id": inst, "price": round(price + (i % 97) * 0.01, 2)} for i in range(n)]


# --- the 10,000-tick resume -------------------------------------------------------------------------


def test_resume_across_forced_disconnects_has_no_gap_and_no_duplicate_over_10000_ticks(
        feed_server: tuple[ServerProcess, Feed]) -> None:
    srv, feed = feed_server
    total = PER_ID * len(RESUME_IDS)
    lines = [line for i in range(PER_ID) for line in (ticks_for(inst, 1, 50.0 + i % 50)[0] for inst in RESUME_IDS)]
    drops = [700, 1500, 2600, 3800, 5200, 6100, 7700]  # ticks received (in all) at which the client drops
    stats = {"reconnects": 0, "replayed_at_least": 0, "ticks": 0, "jumps": 0,
             "conflated": conflated(srv)}

    async def writer() -> None:
        for start in range(0, total, 100):  # ~5,000 ticks/s: the feed is live while the client reconnects
            feed.append(lines[start:start + 100])
            await asyncio.sleep(0.02)

    async def reader() -> dict[str, int]:
        ws, _ = await open_ws(srv)
        ack = await request(ws, {"op": "subscribe", "ids": RESUME_IDS, "reqId": "first"})
        assert "recovered" not in ack
        snap = await recv_json(ws)
        assert snap["type"] == "snapshot" and set(snap["seqs"]) == set(RESUME_IDS)
        assert all(v == 0 for v in snap["seqs"].values()), snap["seqs"]  # nothing of these ids yet
        last, epoch = dict(snap["seqs"]), snap["epoch"]
        write = asyncio.get_running_loop().create_task(writer())
        received = 0
        try:
            while received < total:
                msg = await recv_json(ws)
                if msg["type"] != "tick" or msg["id"] not in last:
                    continue
                assert msg["seq"] > last[msg["id"]], f"{msg['id']}: seq {last[msg['id']]} then {msg['seq']} again"
                if msg["seq"] != last[msg["id"]] + 1:
                    # a client that fell behind (a loaded machine) had its ticks conflated, which the server counts
                    # and which shows as a seq jump (docs/stream.md, slow consumers): it resumes from what it holds,
                    # as a real client does, and must then get every tick after that exactly once
                    assert conflated(srv) > stats["conflated"], (
                        f"{msg['id']}: seq {last[msg['id']]} then {msg['seq']} with no conflation counted")
                    stats["conflated"] = conflated(srv)
                    stats["jumps"] += 1
                    ws.transport.abort()
                    ws = await resume(last, epoch, False)
                    continue
                last[msg["id"]] = msg["seq"]
                received += 1
                if drops and received >= drops[0]:
                    drops.pop(0)
                    ws.transport.abort()  # a forced disconnect: no close handshake, unread ticks lost
                    ws = await resume(last, epoch, replay_only=len(drops) == 3)
        finally:
            await write
            await ws.close()
        stats["ticks"] = received
        return last

    async def resume(last: dict[str, int], epoch: str, replay_only: bool) -> ClientConnection:
        """Reconnect and resume: everything before the ack (the open snapshot, live ticks) is ignored."""
        stats["reconnects"] += 1
        ws, _ = await open_ws(srv)
        ack = await request(ws, {"op": "subscribe", "ids": RESUME_IDS, "since": last, "epoch": epoch,
                                 "reqId": f"resume-{stats['reconnects']}"})
        assert ack["recovered"] is True, ack
        if replay_only:  # drop again at once: mid-replay, before reading anything
            ws.transport.abort()
            return await resume(last, epoch, False)
        return ws

    last = run(reader())
    assert last == {inst: PER_ID for inst in RESUME_IDS}
    assert stats["ticks"] == total and stats["reconnects"] == 8 + stats["jumps"]
    assert metric(srv, "market_ws_ticks_replayed_total") > 0  # the resumes did replay (not only live ticks)

    async def everything_again() -> list[dict[str, Any]]:
        """All 10,000 from seq 1 in one replay (~1.1 MB), to a client with a small receive buffer: most of
        it waits in the server's transport buffer, past the 256 KiB hard cap of control replies."""
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        sock.connect(("127.0.0.1", srv.ws_port))
        ws, snap = await open_ws(srv, sock=sock)
        ack = await request(ws, {"op": "subscribe", "ids": RESUME_IDS, "since": dict.fromkeys(RESUME_IDS, 0),
                                 "epoch": snap["epoch"], "reqId": "all"})
        assert ack["recovered"] is True, ack
        replayed = [await recv_json(ws) for _ in range(total)]
        assert (await request(ws, {"op": "ping", "reqId": "after"}))["type"] == "pong"  # not closed 4008
        await ws.close()
        return replayed

    replayed = run(everything_again())
    assert [(m["id"], m["seq"]) for m in replayed] == [(i, s) for i in RESUME_IDS for s in range(1, PER_ID + 1)]


# --- recovered: false ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def old_history(feed_server: tuple[ServerProcess, Feed]) -> str:
    """OLD_TICKS ticks of OLD_ID, one a second ending now: the history keeps the newest >= 1,000 (and
    every tick of the newest 10 minutes) but not the first ones. Returns the epoch."""
    srv, feed = feed_server
    now = time.time()
    feed.append([{**tick, "ts": now - OLD_TICKS + i} for i, tick in enumerate(ticks_for(OLD_ID, OLD_TICKS, 300.0))])
    epoch, seq = run(wait_seq(srv, OLD_ID, OLD_TICKS))
    assert seq == OLD_TICKS
    return epoch


def subscribe_since(srv: ServerProcess, ids: list[str], since: dict[str, int], epoch: str
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ack of a resume, and what follows it up to the pong of a ping sent right after."""
    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        ws, _ = await open_ws(srv)
        ack = await request(ws, {"op": "subscribe", "ids": ids, "since": since, "epoch": epoch, "reqId": "r"})
        await ws.send(json.dumps({"op": "ping", "reqId": "end"}))
        after = []
        while (msg := await recv_json(ws))["type"] != "pong":
            after.append(msg)
        await ws.close()
        return ack, after

    return run(go())


def test_resume_replays_exactly_the_missed_ticks_when_held(feed_server: tuple[ServerProcess, Feed],
                                                          old_history: str) -> None:
    srv, _ = feed_server
    ack, after = subscribe_since(srv, [OLD_ID], {OLD_ID: OLD_TICKS - 500}, old_history)
    assert ack == {"type": "subscribed", "ids": [OLD_ID], "reqId": "r", "recovered": True}
    assert [m["type"] for m in after] == ["tick"] * 500  # no snapshot
    assert [m["seq"] for m in after] == list(range(OLD_TICKS - 499, OLD_TICKS + 1))


def test_nothing_missed_is_recovered_with_no_tick(feed_server: tuple[ServerProcess, Feed], old_history: str) -> None:
    ack, after = subscribe_since(feed_server[0], [OLD_ID], {OLD_ID: OLD_TICKS}, old_history)
    assert ack["recovered"] is True and after == []


@pytest.mark.parametrize(("case", "since", "ids"), [
    ("wrong epoch", {OLD_ID: OLD_TICKS - 5}, [OLD_ID]),
    ("older than the history holds", {OLD_ID: 10}, [OLD_ID]),
    ("from the first seq, long evicted", {OLD_ID: 0}, [OLD_ID]),
    ("ahead of the server", {OLD_ID: OLD_TICKS + 1}, [OLD_ID]),
    ("an id without since", {OLD_ID: OLD_TICKS}, [OLD_ID, "lu"]),
])
def test_resume_that_cannot_recover_gets_recovered_false_and_a_snapshot(
        feed_server: tuple[ServerProcess, Feed], old_history: str, case: str, since: dict[str, int],
        ids: list[str]) -> None:
    epoch = "not-" + old_history if case == "wrong epoch" else old_history
    ack, after = subscribe_since(feed_server[0], ids, since, epoch)
    assert ack["recovered"] is False, case
    assert after[0]["type"] == "snapshot" and after[0]["epoch"] == old_history
    assert [q["id"] for q in after[0]["quotes"]] == ids  # (in catalogue order)
    assert after[0]["seqs"][OLD_ID] == OLD_TICKS


def test_history_keeps_at_least_1000_ticks_and_the_last_10_minutes(feed_server: tuple[ServerProcess, Feed],
                                                                  old_history: str) -> None:
    """Ticks one a second: the newest 1,000 (> 10 minutes of them) are held, so since = last - 1000 recovers."""
    ack, after = subscribe_since(feed_server[0], [OLD_ID], {OLD_ID: OLD_TICKS - 1000}, old_history)
    assert ack["recovered"] is True and len(after) == 1000


# --- bad since / epoch ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("message", "code", "words"), [
    ({"since": [1], "epoch": "e"}, "invalid_message", "'since' must be an object"),
    ({"since": {"fu": -1}, "epoch": "e"}, "invalid_message", "integer >= 0"),
    ({"since": {"fu": 1.5}, "epoch": "e"}, "invalid_message", "integer >= 0"),
    ({"since": {"fu": True}, "epoch": "e"}, "invalid_message", "integer >= 0"),
    ({"since": {"fu": "3"}, "epoch": "e"}, "invalid_message", "integer >= 0"),
    ({"since": {"fu": 3}}, "invalid_message", "go together"),
    ({"epoch": "e"}, "invalid_message", "go together"),
    ({"since": {"fu": 3}, "epoch": 7}, "invalid_message", "'epoch' must be a non-empty string"),
    ({"since": {"fu": 3}, "epoch": ""}, "invalid_message", "'epoch' must be a non-empty string"),
    ({"since": {"fu": 3}, "epoch": "e" * 129}, "invalid_message", "'epoch' must be a non-empty string"),
    ({"since": {"nope": 3}, "epoch": "e"}, "unknown_ids", "nope"),
    ({"since": {"fu": 3, "lu": 1}, "epoch": "e"}, "invalid_message", "not in 'ids': lu"),
    ({"op": "unsubscribe", "since": {"fu": 3}, "epoch": "e"}, "invalid_message", "subscribe only"),
])
def test_bad_since_or_epoch_is_an_error_and_the_session_stays_open(
        feed_server: tuple[ServerProcess, Feed], message: dict[str, Any], code: str, words: str) -> None:
    srv, _ = feed_server

    async def go() -> None:
        ws, _ = await open_ws(srv)
        err = await request(ws, {"op": "subscribe", "ids": ["fu"], "reqId": "bad", **message})
        assert err["type"] == "error" and err["code"] == code and words in err["detail"], err
        assert (await request(ws, {"op": "ping", "reqId": "p"}))["type"] == "pong"  # still open
        ack = await request(ws, {"op": "subscribe", "ids": ["fu"], "reqId": "s"})
        assert ack["ids"] == ["fu"]  # and usable
        await ws.close()

    run(go())


# --- the key in the X-SERVICE-Key header -----------------------------------------------------------------


def test_key_in_the_x_service_key_header_is_accepted(feed_server: tuple[ServerProcess, Feed]) -> None:
    srv, _ = feed_server

    async def go() -> None:
        async with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key}) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
        # the header is the key when both are sent
        async with connect(f"{srv.ws_base}/ws/quotes?key=wrong",
                           additional_headers={"x-service-key": srv.demo_key}) as ws:
            assert (await recv_json(ws))["type"] == "snapshot"

    run(go())


async def handshake(srv: ServerProcess, target: str, headers: Any) -> tuple[int, dict[str, Any]]:
    """The status of the handshake (101 when accepted) and the refusal's problem."""
    try:
        async with connect(srv.ws_base + target, additional_headers=headers):
            return 101, {}
    except InvalidStatus as exc:
        return exc.response.status_code, json.loads(exc.response.body or b"null")


@pytest.mark.parametrize(("case", "headers"), [
    ("unknown key", [("X-SERVICE-Key", "mk_not_a_key")]),
    ("empty header", [("X-SERVICE-Key", "")]),
    ("two headers", [("X-SERVICE-Key", "a"), ("X-SERVICE-Key", "b")]),
])
def test_bad_header_key_is_401(feed_server: tuple[ServerProcess, Feed], case: str, headers: Any) -> None:
    status, problem = run(handshake(feed_server[0], "/ws/quotes", headers))
    assert status == 401 and problem["code"] == "unauthorized", case
    assert "mk_not_a_key" not in problem["detail"]


def test_header_key_of_free_plan_or_revoked_key_is_refused_as_with_the_query(
        feed_server: tuple[ServerProcess, Feed]) -> None:
    srv, _ = feed_server
    _, free = srv.create_key("free")
    assert run(handshake(srv, "/ws/quotes", {"X-SERVICE-Key": free}))[0] == 403
    key_id, pro = srv.create_key("professional")
    assert run(handshake(srv, "/ws/quotes", {"X-SERVICE-Key": pro}))[0] == 101
    assert run_cli(srv.data_dir, "keys", "revoke", key_id).returncode == 0
    deadline = time.monotonic() + 5
    while (status := run(handshake(srv, "/ws/quotes", {"X-SERVICE-Key": pro}))[0]) == 101:
        assert time.monotonic() < deadline, "a revoked key still opens sessions after 5 s"
        time.sleep(0.1)  # the server re-reads keys every second; nothing to await from here
    assert status == 401


def test_the_query_string_is_never_logged(feed_server: tuple[ServerProcess, Feed]) -> None:
    """At --log-level debug, on both runtimes: a key in the WebSocket URL (accepted, refused) or in an
    HTTP query string does not reach the server's output."""
    srv, _ = feed_server
    _, secret = srv.create_key("professional")

    async def go() -> None:
        async with connect(f"{srv.ws_base}/ws/quotes?key={secret}") as ws:
            assert (await recv_json(ws))["type"] == "snapshot"
        assert (await handshake(srv, "/ws/quotes?key=mk_refused_query_secret", None))[0] == 401
        assert (await handshake(srv, "/ws/nowhere?key=mk_refused_query_secret", None))[0] == 404

    run(go())
    with srv.client() as http:
        for target in (f"/api/v1/quotes?key={secret}", "/api/v1/quotes?key=mk_refused_query_secret",
                       "/healthz?key=mk_refused_query_secret", "/nowhere?key=mk_refused_query_secret"):
            assert http.get(target).status_code in (200, 400, 401, 404)  # answered, whatever the answer
    # a barrier before the absence check: the key watch logs a revocation made after the requests; once that
    # line is out, whatever the requests logged is out before it (one process, one log stream)
    # (the watch logs only keys the hub held: the marker is used once first, so the hub holds it whether or not a
    # refresh fell between its creation and its revocation)
    marker, marker_secret = srv.create_key("free")
    with srv.client() as http:
        assert http.get("/api/v1/quotes", headers={"X-SERVICE-Key": marker_secret}).status_code == 200
    assert run_cli(srv.data_dir, "keys", "revoke", marker).returncode == 0
    deadline, out = time.monotonic() + 10, ""
    while not any("keys revoked" in line and marker in line for line in out.splitlines()):
        assert time.monotonic() < deadline, "the revocation marker never reached the log"
        time.sleep(0.05)  # another process's log: nothing to await
        out = srv.output()
    assert secret not in out and "mk_refused_query_secret" not in out
