"""The tick log of the Redis engine with two real hubs: one feed leader, the same ticks on both,
and a `kill -9` of the leader taken over within 5 s with contiguous per-instrument seq.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from websockets.asyncio.client import ClientConnection, connect

from server.engine import EngineUnavailable, redis_ticks
from server.engine.redis_ticks import SEQ_JUMP, RedisTicks
from server.market.tick import Tick
from tests.conftest import ServerProcess, free_port, free_ports
from tests.redis_service import OwnRedis, redis_prefix, require_redis

TAKEOVER_S = 5.0


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        data_dir = tmp_path / "data"
        flags = ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--public-rate", "100000")
        started = [ServerProcess(data_dir, "granian", *flags)]
        started.append(ServerProcess(data_dir, "robyn", *flags))
        try:
            yield started
        finally:
            for hub in started:
                hub.stop()


def _metric(hub: ServerProcess, name: str) -> float:
    for line in httpx.get(hub.base + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in {hub.base}/metrics")


def _leader(hubs: list[ServerProcess]) -> ServerProcess:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        leaders = [h for h in hubs if _metric(h, "market_feed_leader") == 1]
        if len(leaders) == 1:
            return leaders[0]
        time.sleep(0.05)  # polling other processes: nothing to await
    raise AssertionError("no single feed leader within 10 s")


async def _open(hub: ServerProcess) -> tuple[ClientConnection, dict[str, Any]]:
    ws = await connect(f"{hub.ws_base}/ws/quotes?key={hub.demo_key}", max_queue=None)
    snapshot = json.loads(await asyncio.wait_for(ws.recv(), 5))
    assert snapshot["type"] == "snapshot"
    return ws, snapshot


async def _ticks(ws: ClientConnection, until: Any, timeout: float) -> list[dict[str, Any]]:
    """Ticks until `until(ticks)` holds (bounded by `timeout`)."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not until(out):
        left = deadline - time.monotonic()
        assert left > 0, f"condition not met within {timeout} s ({len(out)} ticks)"
        msg = json.loads(await asyncio.wait_for(ws.recv(), left))
        if msg["type"] == "tick":
            out.append(msg)
    return out


def _epoch_s(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def _contiguous(ticks: list[dict[str, Any]]) -> None:
    last: dict[str, int] = {}
    for t in ticks:
        if t["id"] in last:
            assert t["seq"] == last[t["id"]] + 1, f"{t['id']}: seq {last[t['id']]} then {t['seq']}"
        last[t["id"]] = t["seq"]


def test_both_hubs_deliver_the_same_ticks_with_the_same_seq(hubs: list[ServerProcess]) -> None:
    a, b = hubs
    _leader(hubs)

    async def scenario() -> None:
        (wa, sa), (wb, sb) = await _open(a), await _open(b)
        assert sa["epoch"] == sb["epoch"]  # one history
        got_a, got_b = await asyncio.gather(_ticks(wa, lambda t: len(t) >= 60, 20),
                                            _ticks(wb, lambda t: len(t) >= 60, 20))
        await wa.close()
        await wb.close()
        seen_a = {(t["id"], t["seq"]): (t["price"], t["ts"]) for t in got_a}
        seen_b = {(t["id"], t["seq"]): (t["price"], t["ts"]) for t in got_b}
        common = seen_a.keys() & seen_b.keys()
        assert len(common) >= 30, (len(common), len(seen_a), len(seen_b))
        assert all(seen_a[k] == seen_b[k] for k in common)  # same tick, same numbers, on both hubs
        _contiguous(got_a)
        _contiguous(got_b)

    asyncio.run(scenario())


def test_the_other_hub_takes_the_feed_within_5_s_of_a_kill_9_and_seq_continues(
        hubs: list[ServerProcess]) -> None:
    leader = _leader(hubs)
    follower = next(h for h in hubs if h is not leader)

    async def scenario() -> None:
        ws, _ = await _open(follower)
        before = await _ticks(ws, lambda t: len(t) >= 10, 10)
        leader.kill()  # SIGKILL: no lease hand-over
        killed_at = time.time()
        after = await _ticks(ws, lambda t: bool(t) and _epoch_s(t[-1]["ts"]) > killed_at + 0.5, TAKEOVER_S + 3)
        resumed_in = time.time() - killed_at
        await ws.close()
        assert resumed_in < TAKEOVER_S + 1.0, resumed_in  # lease expiry (3 s) + one renewal period, then a tick
        _contiguous(before + after)  # no gap, no duplicate across the take-over
        assert _metric(follower, "market_feed_leader") == 1

    asyncio.run(scenario())
    assert httpx.get(follower.base + "/readyz").status_code == 200


def test_after_a_redis_restart_ticks_go_on_with_the_same_epoch_and_contiguous_seq(tmp_path: Path) -> None:
    """Redis killed and started again empty: the hubs carry on by themselves; clients see no reset."""
    own = OwnRedis(free_port(), tmp_path)
    own.start()
    flags = ("--engine", "redis", "--redis-url", own.url, "--redis-prefix", "restart:")
    hubs = [ServerProcess(tmp_path / "data", "granian", *flags)]
    try:
        hubs.append(ServerProcess(tmp_path / "data", "robyn", *flags))
        follower = next(h for h in hubs if h is not _leader(hubs))

        async def scenario() -> None:
            ws, first = await _open(follower)
            before = await _ticks(ws, lambda t: len(t) >= 10, 10)
            own.stop()
            own.start()
            restarted_at = time.time()
            after = await _ticks(ws, lambda t: bool(t) and _epoch_s(t[-1]["ts"]) > restarted_at + 0.5, 10)
            _contiguous(before + after)
            await ws.close()
            ws, again = await _open(follower)
            await ws.close()
            assert again["epoch"] == first["epoch"]

        asyncio.run(scenario())
        for hub in hubs:
            _poll_ready(hub)
    finally:
        codes = [hub.stop() for hub in hubs]
        own.stop()
    assert codes == [0] * len(hubs)


def _poll_ready(hub: ServerProcess) -> None:
    deadline = time.monotonic() + 10
    while httpx.get(hub.base + "/readyz").status_code != 200:
        assert time.monotonic() < deadline, f"{hub.base} not ready again"
        time.sleep(0.05)  # polling another process: nothing to await


def test_a_jsonl_leader_that_loses_the_lease_to_a_redis_restart_follows_its_file_again(tmp_path: Path) -> None:
    """One hub on a jsonl feed: Redis restarted (the lease is lost and taken back); lines appended
    afterwards still reach clients, and lines published before are not published again."""
    own = OwnRedis(free_port(), tmp_path)
    own.start()
    ticks = tmp_path / "ticks.jsonl"
    ticks.write_text(json.dumps({"id": "brent", "price": 70.0, "volume": 1}) + "\n")
    hub = ServerProcess(tmp_path / "data", "granian", "--engine", "redis", "--redis-url", own.url,
                        "--redis-prefix", "jl:", "--feed", f"jsonl:{ticks}")
    try:
        headers = {"X-SERVICE-Key": hub.demo_key}
        deadline = time.monotonic() + 10
        while (quote := httpx.get(hub.base + "/api/v1/quotes/brent", headers=headers).json())["seq"] != 1:
            assert time.monotonic() < deadline, quote
            time.sleep(0.05)  # polling another process: nothing to await
        assert quote["price"] == 70.0

        async def scenario() -> None:
            ws, _ = await _open(hub)
            own.stop()
            own.start()
            client = redis.Redis.from_url(own.url)
            deadline = time.monotonic() + 10
            while client.get("jl:feed:lease") is None:  # the lease, lost with Redis, taken again
                assert time.monotonic() < deadline, "the hub did not take the feed lease again"
                await asyncio.sleep(0.05)
            client.close()
            with ticks.open("a") as fh:
                fh.write(json.dumps({"id": "brent", "price": 71.0, "volume": 1}) + "\n")
            after = await _ticks(ws, lambda t: bool(t), 10)
            assert [(t["id"], t["seq"], t["price"]) for t in after] == [("brent", 2, 71.0)]
            await ws.close()

        asyncio.run(scenario())
    finally:
        code = hub.stop()
        own.stop()
    assert code == 0


def test_a_replica_promoted_before_its_first_sync_moves_every_seq_on_by_the_jump(tmp_path: Path) -> None:
    """The master dies before its replica's first sync finished (Redis 7 waits `repl-diskless-sync-delay`, 5 s,
    before it): the promoted replica has none of the tick log's keys, no replication id recorded either. It is
    still a failover (it has a secondary replication id; a Redis restarted empty, the test above, has none): the
    hubs had delivered seqs it never saw, so the next seq of every instrument is above the highest the leader
    knows plus SEQ_JUMP, never the leader's floor + 1 (which a leader behind its clients would reuse)."""
    port, nobody = free_ports(2)
    own = OwnRedis(port, tmp_path)
    own.start()
    ids = ["brent", "wti"]

    async def scenario() -> None:
        ticks = RedisTicks(own.url, "promoted:", "node-a", ids)
        ticks.epoch = "e1"
        got: list[tuple[str, int]] = []
        changed = asyncio.Event()

        def on_batch(batch: list[tuple[Tick, int]]) -> None:
            got.extend((ids[tick.row], seq) for tick, seq in batch)
            changed.set()

        leads: list[bool] = []

        def on_lead(leading: bool) -> None:
            leads.append(leading)
            changed.set()

        async def until(condition: Any, what: str) -> None:
            try:
                async with asyncio.timeout(10):
                    while not condition():
                        changed.clear()
                        await changed.wait()
            except TimeoutError:
                raise AssertionError(f"not within 10 s: {what} (leads {leads}, got {got})") from None

        def feed(row: int, price: float) -> None:
            floor = max((seq for inst, seq in got if inst == ids[row]), default=0)
            ticks.append([Tick(row, price, time.time(), 1.0)], [floor])

        await ticks.load_seqs()
        ticks.start(on_batch, on_lead)
        try:
            await until(lambda: leads == [True], "the lease")
            for i in range(5):
                feed(0, 80.0 + i)
            feed(1, 75.0)
            await until(lambda: len(got) == 6, "6 ticks read back")
            assert got == [("brent", 1), ("brent", 2), ("brent", 3), ("brent", 4), ("brent", 5), ("wti", 1)]
            own.stop()  # the master dies; its replica had not synced yet: promoted with nothing
            own.start("--replicaof", "127.0.0.1", str(nobody))
            client = redis.Redis.from_url(own.url)
            client.execute_command("REPLICAOF", "NO", "ONE")
            client.close()
            await until(lambda: leads == [True, False, True], "the lease lost with the master, then taken again")
            feed(1, 76.0)
            feed(0, 85.0)
            await until(lambda: len(got) == 8, "2 ticks after the promotion")
            assert got[6:] == [("wti", 5 + SEQ_JUMP + 1), ("brent", 5 + SEQ_JUMP + 1)]
        finally:
            await ticks.stop()

    try:
        asyncio.run(scenario())
    finally:
        own.stop()


def test_a_joining_hub_asks_again_while_redis_does_not_answer_then_gives_up_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub's first reads of the tick log (where it joins) meet no Redis (a failover in progress, a slow link):
    it asks again, with one warning line, and joins once Redis answers; after JOIN_RETRY_S without an answer it
    gives up with EngineUnavailable, which the CLI prints as one line (exit 1), never a traceback."""
    own = OwnRedis(free_port(), tmp_path)
    warned: list[logging.LogRecord] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        first_warning = asyncio.Event()

        class Seen(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                warned.append(record)
                loop.call_soon_threadsafe(first_warning.set)

        handler = Seen(logging.WARNING)
        logging.getLogger("market.ticks").addHandler(handler)
        try:
            ticks = RedisTicks(own.url, "joining:", "node-a", ["brent"])
            joining = asyncio.create_task(ticks.load_seqs())
            await asyncio.wait_for(first_warning.wait(), 5)  # the first read failed: nobody on that port
            assert not joining.done()
            await asyncio.to_thread(own.start)
            assert await asyncio.wait_for(joining, 5) == {}  # joined an empty log once Redis answered
            await ticks.stop()
            own.stop()
            monkeypatch.setattr(redis_ticks, "JOIN_RETRY_S", 0.5)
            gone = RedisTicks(own.url, "joining:", "node-b", ["brent"])
            with pytest.raises(EngineUnavailable, match=r"could not read the tick log .* for 0.5 s"):
                await asyncio.wait_for(gone.load_seqs(), 5)
            await gone.stop()
        finally:
            logging.getLogger("market.ticks").removeHandler(handler)

    try:
        asyncio.run(scenario())
    finally:
        own.stop()
    joining_lines = [r for r in warned if "joining the tick log" in r.getMessage()]
    assert len(joining_lines) == 2  # one per hub that waited, not one per attempt


def test_a_joining_hub_reads_its_seqs_and_newest_ticks_at_one_point_of_the_log() -> None:
    """Where a hub joins (issue 44's follow-up): the seqs and the newest ticks it starts from are those of the
    log's entries up to the one it then reads after, even when the leader appends in between. Read apart, a batch
    appended between the joining reads was both restored and read again from the stream: applied twice, its volume
    counted twice and its seq sent twice."""
    url = require_redis()
    ids = ["brent", "wti"]

    async def scenario(prefix: str) -> None:
        leader = RedisTicks(url, prefix, "node-a", ids)
        leader.epoch = "e1"
        got: list[tuple[str, int]] = []
        changed = asyncio.Event()

        def on_batch(batch: list[tuple[Tick, int]]) -> None:
            got.extend((ids[tick.row], seq) for tick, seq in batch)
            changed.set()

        async def until(n: int) -> None:
            async with asyncio.timeout(10):
                while len(got) < n:
                    changed.clear()
                    await changed.wait()

        await leader.load_seqs()
        leads: list[bool] = []
        leader.start(on_batch, lambda leading: (leads.append(leading), changed.set()))
        try:
            async with asyncio.timeout(10):
                while not leads:
                    changed.clear()
                    await changed.wait()
            leader.append([Tick(0, 80.0, time.time(), 1.0), Tick(1, 70.0, time.time(), 1.0)], [0, 0])
            await until(2)
            joiner = RedisTicks(url, prefix, "node-b", ids)
            seqs = await joiner.load_seqs()
            leader.append([Tick(0, 81.0, time.time(), 1.0)], [1])  # after the join point
            await until(3)
            newest = await joiner.last_ticks()
            assert seqs == {"brent": 1, "wti": 1}
            assert sorted((ids[t.row], t.price, seq) for t, seq in newest) == [("brent", 80.0, 1), ("wti", 70.0, 1)]
            late: list[tuple[str, int]] = []
            joined = asyncio.Event()

            def joiner_batch(batch: list[tuple[Tick, int]]) -> None:
                late.extend((ids[tick.row], seq) for tick, seq in batch)
                joined.set()

            joiner.start(joiner_batch, lambda leading: None)
            try:
                await asyncio.wait_for(joined.wait(), 10)
                assert late == [("brent", 2)]  # the batch after the join point, read once, from the stream
            finally:
                await joiner.stop()
        finally:
            await leader.stop()

    with redis_prefix(url) as prefix:
        asyncio.run(scenario(prefix))
