"""Resume across hubs on the Redis engine (SPEC 7 + 12): the tick stream holds the resume history.

A client drops its connection to hub A and resumes on hub B with the same epoch: recovered, the
missed ticks, then live ones, contiguous. A hub started after those ticks were published loads the
stream's tail, so it recovers them too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.conftest import ServerProcess
from tests.redis_service import redis_prefix, require_redis

IDS = ["brent", "wti", "sc", "dubai", "oman", "fu", "lu", "rbob"]


@pytest.fixture
def hub_flags(tmp_path: Path) -> Iterator[tuple[str, ...]]:
    url = require_redis()
    with redis_prefix(url) as prefix:
        yield ("--engine", "redis", "--redis-url", url, "--redis-prefix", prefix, "--public-rate", "100000",
               "--tick-interval-ms", "50")


async def recv_json(ws: ClientConnection, timeout: float = 10.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def subscribe(hub: ServerProcess, body: dict[str, Any]) -> tuple[ClientConnection, dict[str, Any]]:
    """Open a session on `hub` and send a subscribe; returns it at its ack (what came before is skipped)."""
    ws = await connect(f"{hub.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": hub.demo_key},
                       max_queue=None)
    await ws.send(json.dumps({"op": "subscribe", "ids": IDS, "reqId": "s", **body}))
    while (msg := await recv_json(ws))["type"] != "subscribed":
        pass
    return ws, msg


async def follow(ws: ClientConnection, last: dict[str, int], n: int) -> None:
    """Read `n` ticks, each the next seq of its instrument."""
    for _ in range(n):
        while (msg := await recv_json(ws))["type"] in ("heartbeat", "roll"):  # every 5 s (SPEC 14); SPEC 19
            pass
        assert msg["type"] == "tick", msg
        assert msg["seq"] == last[msg["id"]] + 1, f"{msg['id']}: {last[msg['id']]} then {msg['seq']}"
        last[msg["id"]] = msg["seq"]


async def caught_up(hub: ServerProcess, last: dict[str, int], timeout: float = 10.0) -> None:
    """Wait until `hub` has applied every seq in `last` (a hub may lag the stream by a few ms)."""
    ws, _ = await subscribe(hub, {})
    snap = await recv_json(ws)
    seqs = dict(snap["seqs"])
    deadline = time.monotonic() + timeout
    while any(seqs[i] < s for i, s in last.items()):
        msg = await recv_json(ws, max(0.01, deadline - time.monotonic()))
        if msg["type"] == "tick":
            seqs[msg["id"]] = msg["seq"]
    await ws.close()


async def first_ticks(hub: ServerProcess, n: int) -> tuple[str, dict[str, int]]:
    """Subscribe on `hub`, follow n ticks from the snapshot's seqs, then drop the connection."""
    ws, _ = await subscribe(hub, {})
    snap = await recv_json(ws)
    last = dict(snap["seqs"])
    await follow(ws, last, n)
    ws.transport.abort()
    return snap["epoch"], last


def test_disconnect_from_hub_a_resume_on_hub_b_and_on_a_hub_started_later(
        hub_flags: tuple[str, ...], tmp_path: Path) -> None:
    hubs = [ServerProcess(tmp_path / "data", "granian", *hub_flags)]
    try:
        hubs.append(ServerProcess(tmp_path / "data", "robyn", *hub_flags))
        a, b = hubs

        async def on_b() -> tuple[str, dict[str, int]]:
            epoch, last = await first_ticks(a, 40)
            await asyncio.sleep(0.5)  # ticks go on while the client is away
            await caught_up(b, last)
            ws, ack = await subscribe(b, {"since": last, "epoch": epoch})
            assert ack["recovered"] is True, ack
            await follow(ws, last, 60)  # the missed ticks, then live ones: one contiguous run
            await ws.close()
            return epoch, last

        epoch, last = asyncio.run(asyncio.wait_for(on_b(), 40))
        # a hub that starts now never applied those ticks live: it serves them from the stream's tail
        hubs.append(ServerProcess(tmp_path / "data", "granian", *hub_flags))
        late = hubs[2]

        async def on_late() -> None:
            await caught_up(late, last)
            ws, ack = await subscribe(late, {"since": last, "epoch": epoch})
            assert ack["recovered"] is True, ack
            await follow(ws, last, 60)
            await ws.close()
            ws, ack = await subscribe(late, {"since": last, "epoch": "another-" + epoch})
            assert ack["recovered"] is False and (await recv_json(ws))["type"] == "snapshot"
            await ws.close()

        asyncio.run(asyncio.wait_for(on_late(), 40))
    finally:
        for hub in hubs:
            hub.stop()
