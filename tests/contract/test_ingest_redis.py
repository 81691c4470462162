"""A dedicated data source on the Redis engine (SPEC 20, docs/ingest.md): two hubs (Granian, Robyn) on one Redis prefix
and one store. An instrument declared through hub A is bound on hub B within its refresh; every hub takes ingest over
both routes (the hub that does not hold the feed lease forwards the batch through the Redis inbox to the holder),
both hubs apply every tick once, in order, with gap-free seqs, and serve them to the owner's read key only; the
ticks-a-second bucket is one for all hubs; and a lease change with batches waiting in the inbox publishes each of
them exactly once.

Waiting for another process (its refresh, the lease) polls with a deadline: nothing in this process to await."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from websockets.asyncio.client import ClientConnection, connect

from tests import poll
from tests.conftest import ServerProcess, run_cli
from tests.redis_service import redis_prefix, require_redis

PASSWORD = "correct horse"
IDS = ["acme.blend", "acme.basis"]
INSTRUMENT = {"name": {"zh": "定制", "en": "Blend"}, "unit": {"zh": "美元/桶", "en": "USD/bbl"}, "currency": "USD",
              "decimals": 2, "venue": "ice-eu"}
NDJSON = "application/x-ndjson"


class Pair:
    """Two hubs on one Redis prefix; `killed`: those the test killed (their exit code is not 0)."""

    def __init__(self, tmp_path: Path, url: str, prefix: str) -> None:
        self.tmp_path, self.url, self.prefix = tmp_path, url, prefix
        self.hubs: list[ServerProcess] = []
        self.killed: set[int] = set()

    def start(self, *extra: str) -> tuple[ServerProcess, ServerProcess]:
        flags = ("--engine", "redis", "--redis-url", self.url, "--redis-prefix", self.prefix, "--public-rate",
                 "100000", *extra)
        self.hubs = [ServerProcess(self.tmp_path / "data", runtime, *flags) for runtime in ("granian", "robyn")]
        return self.hubs[0], self.hubs[1]

    def leader(self) -> tuple[ServerProcess, ServerProcess]:
        """(the feed lease holder, the other hub)."""
        leaders = until(lambda: [h for h in self.hubs if _metric(h, "market_feed_leader") == 1] or None)
        assert leaders is not None and len(leaders) == 1, leaders
        return leaders[0], next(h for h in self.hubs if h is not leaders[0])


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        hubs = Pair(tmp_path, url, prefix)
        try:
            yield hubs
        finally:
            for hub in hubs.hubs:
                if hub.proc.pid in hubs.killed:
                    hub.kill()  # SIGKILL ends a stopped process too
                else:
                    assert hub.stop() == 0, hub.output()[-3000:]


until = partial(poll.until, timeout=15.0)  # this module's wait and polling interval


def _metric(hub: ServerProcess, name: str) -> float:
    for line in httpx.get(hub.base + "/metrics", timeout=10.0).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in {hub.base}/metrics")


def _account(hub: ServerProcess, email: str, namespace: str) -> httpx.Client:
    c = hub.client()
    assert c.post("/api/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
    for args in (("plan", email, "enterprise", "--rate", "100000"), ("namespace", email, namespace)):
        assert run_cli(hub.data_dir, "users", *args).returncode == 0
    token = c.post("/api/auth/login", json={"email": email, "password": PASSWORD}).json()["token"]
    c.headers["Authorization"] = f"Bearer {token}"
    return c


def _source(a: ServerProcess, b: ServerProcess) -> tuple[str, str]:
    """acme's instruments IDS declared through hub A and bound on both hubs: (its ingest key, its read key)."""
    acme = _account(a, "acme@example.com", "acme")
    for inst in IDS:
        assert acme.post("/api/console/instruments", json={"id": inst, **INSTRUMENT}).status_code == 201
    publisher, reader = (acme.post("/api/console/keys", json={"scope": s}).json()["key"] for s in ("ingest", "read"))
    for hub in (a, b):  # hub B bound them within its refresh
        assert until(lambda hub=hub: all(_get(hub, reader, f"/api/v1/quotes/{i}").status_code == 200 for i in IDS))
    return publisher, reader


def _get(hub: ServerProcess, secret: str, path: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{hub.base}{path}", params=params, headers={"X-SERVICE-Key": secret}, timeout=10.0)


T0 = time.time() - 30.0  # every tick in the past: none is refused as ahead of the server's clock


def _batch(k: int, per_instrument: int = 10) -> str:
    """Batch k: `per_instrument` ticks of each instrument, prices that name the batch and the place in it."""
    lines = []
    for j in range(per_instrument):
        for inst in IDS:
            lines.append(json.dumps({"id": inst, "price": _price(k, j), "volume": 1,
                                     "ts": round(T0 + k * 0.1 + j * 0.001, 3)}))
    return "\n".join(lines)


def _price(k: int, j: int) -> float:
    return round(80 + k + j / 100, 2)


class Watch:
    """A /ws/quotes subscriber of IDS on one hub, reading every tick frame as it comes."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ticks: list[dict[str, Any]] = []
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, hub: ServerProcess, reader: str) -> Watch:
        ws = await connect(f"{hub.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": reader}, max_queue=None)
        await ws.send(json.dumps({"op": "subscribe", "ids": IDS, "reqId": 1}))
        async with asyncio.timeout(10):
            while json.loads(await ws.recv()).get("type") != "subscribed":
                pass
        return cls(ws)

    async def _read(self) -> None:
        while True:
            frame = json.loads(await self.ws.recv())
            if frame.get("type") == "tick":
                self.ticks.append(frame)

    async def wait(self, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.ticks) < count and time.monotonic() < deadline and not self._task.done():
            await asyncio.sleep(0.05)  # the reader task fills `ticks`
        return self.ticks

    async def close(self) -> None:
        self._task.cancel()
        await self.ws.close()


def _check_stream(ticks: list[dict[str, Any]], batches: list[int], per_instrument: int = 10) -> None:
    """Each instrument's ticks: exactly those of `batches`, in order, once, with consecutive seqs."""
    for inst in IDS:
        mine = [t for t in ticks if t["id"] == inst]
        assert [t["price"] for t in mine] == [_price(k, j) for k in batches for j in range(per_instrument)], inst
        seqs = [t["seq"] for t in mine]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs


async def _publish(hub: ServerProcess, publisher: str, http: list[int], ws: list[int]) -> list[Any]:
    """Batches `http` over POST /api/v1/ingest, then `ws` over /ws/ingest, all to `hub`: the answers."""
    answers: list[Any] = []
    async with httpx.AsyncClient(base_url=hub.base, timeout=10.0) as client:
        for k in http:
            resp = await client.post("/api/v1/ingest", content=_batch(k),
                                     headers={"X-SERVICE-Key": publisher, "content-type": NDJSON})
            answers.append((resp.status_code, resp.json()))
    if ws:
        async with connect(hub.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": publisher}) as socket:
            for k in ws:
                await socket.send(_batch(k))
                answers.append((200, json.loads(await socket.recv())))
    return answers


ACCEPTED = (200, {"accepted": 20, "rejected": [], "rejectedCount": 0})


def test_every_hub_takes_ingest_and_serves_it_to_the_owner_alone(pair: Pair) -> None:
    """Published only through the hub that does not hold the lease, over both routes: both hubs stream every tick
    once, in publishing order, with consecutive seqs, and their quotes and candles count each tick once."""
    a, b = pair.start()
    publisher, reader = _source(a, b)
    stranger = _account(a, "other@example.com", "other").post("/api/console/keys", json={}).json()["key"]
    _, other = pair.leader()

    async def run() -> tuple[list[Any], list[list[dict[str, Any]]]]:
        watches = [await Watch.open(hub, reader) for hub in (a, b)]
        answers = await _publish(other, publisher, [0, 1, 2, 3, 4], [5, 6, 7, 8, 9])
        streams = [list(await w.wait(200)) for w in watches]
        for w in watches:
            await w.close()
        return answers, streams

    answers, streams = asyncio.run(run())
    assert answers == [ACCEPTED] * 10
    for ticks in streams:
        assert len(ticks) == 200
        _check_stream(ticks, list(range(10)))
    for hub in (a, b):
        for inst in IDS:
            quote = _get(hub, reader, f"/api/v1/quotes/{inst}").json()
            assert (quote["price"], quote["volume"]) == (_price(9, 9), 100), (hub.runtime, quote)  # applied once
            bars = _get(hub, reader, f"/api/v1/kline/{inst}", interval="1m", limit=10).json()["series"]
            assert sum(bar["v"] for bar in bars) == 100, (hub.runtime, bars)
            assert _get(hub, stranger, f"/api/v1/quotes/{inst}").status_code == 404


def test_the_ticks_a_second_bucket_is_shared_by_every_hub(pair: Pair) -> None:
    """At 5 ticks a second, one batch of 20 through one hub puts the account in debt for about 3 s: the next
    batch through the other hub is refused over both routes (429 with Retry-After), nothing of it kept."""
    a, b = pair.start("--ingest-rate", "5")
    publisher, reader = _source(a, b)
    first, second = asyncio.run(_publish(a, publisher, [0], [])), asyncio.run(_publish(b, publisher, [], [1]))
    assert first == [ACCEPTED]
    answer = second[0][1]
    assert answer["error"]["status"] == 429 and answer["error"]["retryAfter"] >= 1, answer
    resp = httpx.post(f"{b.base}/api/v1/ingest", content=_batch(2), timeout=10.0,
                      headers={"X-SERVICE-Key": publisher, "content-type": NDJSON})
    assert resp.status_code == 429 and resp.json()["code"] == "rate_limited", resp.text
    assert 1 <= int(resp.headers["retry-after"]) <= 4
    for hub in (a, b):  # the accepted batch applied on both, once; the refused ones nowhere
        assert until(lambda hub=hub: _get(hub, reader, f"/api/v1/quotes/{IDS[0]}").json().get("volume") == 10)
        assert _get(hub, reader, f"/api/v1/quotes/{IDS[0]}").json()["price"] == _price(0, 9)


@pytest.mark.parametrize("end", ["kill", "resume"])
def test_a_lease_change_publishes_the_waiting_batches_once(pair: Pair, end: str) -> None:
    """Batches 0-3 go through the leader's inbox at once; then the leader is frozen (SIGSTOP) and batches 4-9 are
    taken by the other hub and wait in the inbox; the leader is killed with SIGKILL ("kill"), or left frozen until
    the other hub has taken the lease and is then let go on ("resume": a deposed leader that may still try to
    append). The new leader appends every waiting batch once, after the ones appended before: its stream has all
    ten batches once each, in order, with consecutive seqs, and the inbox is empty."""
    a, b = pair.start()
    publisher, reader = _source(a, b)
    leader, other = pair.leader()
    client = redis.Redis.from_url(pair.url)
    inbox, lease = pair.prefix + "ingest:inbox", pair.prefix + "feed:lease"

    async def run() -> tuple[list[Any], list[dict[str, Any]], int]:
        watch = await Watch.open(other, reader)
        answers = await _publish(other, publisher, [0, 1], [2, 3])
        await watch.wait(80)
        freeze(pair, leader, client)
        answers += await _publish(other, publisher, [4, 5, 6], [7, 8, 9])
        waiting = int(client.xlen(inbox))  # nobody consumes them: the lease is still the frozen hub's
        if end == "kill":
            os.kill(leader.proc.pid, signal.SIGKILL)
        assert client.pexpire(lease, 1)  # the frozen hub's lease lapses: the other hub takes it
        ticks = list(await watch.wait(200, timeout=30.0))
        if end == "resume":
            os.kill(leader.proc.pid, signal.SIGCONT)
            assert until(lambda: _metric(leader, "market_feed_leader") == 0)  # it found its lease gone
        await watch.close()
        return answers, ticks, waiting

    answers, ticks, waiting = asyncio.run(run())
    assert answers == [ACCEPTED] * 10
    assert waiting == 6
    assert _metric(other, "market_feed_leader") == 1
    _check_stream(ticks, list(range(10)))
    assert until(lambda: client.xlen(inbox) == 0)
    assert _get(other, reader, f"/api/v1/quotes/{IDS[1]}").json()["volume"] == 100
    if end == "resume":  # the deposed leader applied the same log: each tick once there too
        pair.killed.discard(leader.proc.pid)
        assert until(lambda: _get(leader, reader, f"/api/v1/quotes/{IDS[1]}").json().get("volume") == 100)
    client.close()


def freeze(pair: Pair, leader: ServerProcess, client: redis.Redis) -> None:
    """The lease holder frozen (SIGSTOP) with its lease kept for two minutes, whatever the steps after take on a
    loaded machine: no hub consumes the inbox until the test lets the lease lapse (PEXPIRE 1 ms)."""
    os.kill(leader.proc.pid, signal.SIGSTOP)
    pair.killed.add(leader.proc.pid)
    assert client.pexpire(pair.prefix + "feed:lease", 120_000)  # its last renewal had 3 s: it still holds it


def test_a_full_inbox_refuses_a_batch_until_a_holder_takes_the_waiting_ones(pair: Pair) -> None:
    """--ingest-inbox-max 3: the holder frozen with its lease kept, three batches wait in the inbox; a fourth is 503
    not_ready with Retry-After over HTTP and an error frame over /ws/ingest, nothing of it kept; once the lease
    passes, the new holder publishes the three once, the inbox empties, and the fourth sent again is taken."""
    a, b = pair.start("--ingest-inbox-max", "3")
    publisher, reader = _source(a, b)
    leader, other = pair.leader()
    client = redis.Redis.from_url(pair.url)
    inbox = pair.prefix + "ingest:inbox"
    freeze(pair, leader, client)
    assert asyncio.run(_publish(other, publisher, [0, 1, 2], [])) == [ACCEPTED] * 3
    assert client.xlen(inbox) == 3
    full = httpx.post(other.base + "/api/v1/ingest", content=_batch(3), timeout=10.0,
                      headers={"X-SERVICE-Key": publisher, "content-type": NDJSON})
    assert full.status_code == 503 and full.headers["retry-after"] == "1", full.text
    assert full.json()["code"] == "not_ready" and "inbox" in full.json()["detail"]

    async def over_ws() -> dict[str, Any]:
        async with connect(other.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": publisher}) as ws:
            await ws.send(_batch(3))
            return dict(json.loads(await ws.recv()))

    assert asyncio.run(over_ws())["error"]["status"] == 503
    assert client.xlen(inbox) == 3  # nothing of the refused batch kept
    os.kill(leader.proc.pid, signal.SIGKILL)
    assert client.pexpire(pair.prefix + "feed:lease", 1)
    assert until(lambda: client.xlen(inbox) == 0)
    assert asyncio.run(_publish(other, publisher, [3], [])) == [ACCEPTED]
    assert until(lambda: _get(other, reader, f"/api/v1/quotes/{IDS[1]}").json().get("volume") == 40)
    client.close()


def test_a_batch_sent_again_to_another_hub_with_its_idempotency_key_is_kept_once(pair: Pair) -> None:
    """The key is kept in Redis with the batch, in one script call: a batch sent to hub A and again to hub B with the
    same Idempotency-Key is answered from the first (`Idempotent-Replayed: true`) and published once."""
    a, b = pair.start()
    publisher, reader = _source(a, b)
    headers = {"X-SERVICE-Key": publisher, "content-type": NDJSON, "Idempotency-Key": "0b1d"}
    answers = [httpx.post(hub.base + "/api/v1/ingest", content=_batch(0), headers=headers, timeout=10.0)
               for hub in (a, b, a)]
    assert [(r.status_code, r.json()) for r in answers] == [ACCEPTED] * 3
    assert [r.headers.get("idempotent-replayed") for r in answers] == [None, "true", "true"]
    for hub in (a, b):
        assert until(lambda hub=hub: _get(hub, reader, f"/api/v1/quotes/{IDS[1]}").json().get("volume") == 10)
    assert asyncio.run(_publish(b, publisher, [1], [])) == [ACCEPTED]  # no key: a new batch
    assert until(lambda: _get(a, reader, f"/api/v1/quotes/{IDS[1]}").json().get("volume") == 20)
