"""WebSocket checks for scripts/image-check and scripts/compose-check. It runs inside the image under
test (`podman run --network host ... python /check/container_ws.py`), which has `websockets`, so the host
needs no Python packages. Prints one JSON line with the result; exits non-zero on a failed check.

  snapshot URL KEY            the first message is a snapshot with quotes, an epoch and seqs
  failover URL KEY N DIR      N clients through the entry point; prints READY, waits for DIR/killed
                              (the kill time, written by the caller), then for every client to have
                              either stayed connected or resumed (subscribe with since/epoch) and to
                              receive live ticks again; checks seqs are contiguous across the resume
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from websockets.asyncio.client import connect

SILENCE_S = 10.5  # two heartbeat periods (--heartbeat-s 5) and a margin


def fail(msg: str, **extra: object) -> None:
    print(json.dumps({"ok": False, "error": msg, **extra}), flush=True)
    sys.exit(1)


async def snapshot(url: str, key: str) -> None:
    async with connect(url, additional_headers={"X-SERVICE-Key": key}, open_timeout=10) as ws:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if msg.get("type") != "snapshot" or not msg.get("quotes"):
            fail("first message is not a snapshot with quotes", got=str(msg)[:200])
        tick = None
        while tick is None:
            m = json.loads(await asyncio.wait_for(ws.recv(), 10))
            tick = m if m.get("type") == "tick" else None
        print(
            json.dumps(
                {
                    "ok": True,
                    "quotes": len(msg["quotes"]),
                    "epoch": msg.get("epoch"),
                    "first_tick": {k: tick[k] for k in ("id", "seq")},
                }
            ),
            flush=True,
        )


class Client:
    def __init__(self, n: int, url: str, key: str) -> None:
        self.n, self.url, self.key = n, url, key
        self.epoch = ""
        self.seqs: dict[str, int] = {}
        self.ids: list[str] = []
        self.ready = asyncio.Event()
        self.last_tick_at = 0.0
        self.ticks_after_kill = 0
        self.first_tick_after_kill: float | None = None
        self.max_gap = 0.0
        self.dropped_at: float | None = None
        self.drop = ""
        self.resumed_at: float | None = None
        self.recovered: bool | None = None
        self.reconnect_attempts = 0
        self.refusals: list[str] = []
        self.gaps: list[str] = []

    def on_tick(self, m: dict, kill_at: float | None) -> None:
        now = time.time()
        prev = self.seqs.get(m["id"], 0)
        if m["seq"] != prev + 1:
            self.gaps.append(f"{m['id']}: {prev} -> {m['seq']}")
        self.seqs[m["id"]] = m["seq"]
        if self.last_tick_at:
            self.max_gap = max(self.max_gap, now - self.last_tick_at)
        self.last_tick_at = now
        if kill_at is not None and now > kill_at:
            self.ticks_after_kill += 1
            if self.first_tick_after_kill is None:
                self.first_tick_after_kill = now

    async def run(self, killed: asyncio.Future) -> None:
        headers = {"X-SERVICE-Key": self.key}
        async with connect(self.url, additional_headers=headers, open_timeout=10) as ws:
            first = json.loads(await ws.recv())
            self.epoch = first["epoch"]
            self.seqs = {k: int(v) for k, v in first["seqs"].items()}
            self.ids = [q["id"] for q in first["quotes"]]
            self.ready.set()
            try:
                while True:
                    # SPEC 14: two missed heartbeats (5 s apart) mean a dead stream. A hub whose container
                    # is killed sends no FIN or RST: without this its clients would wait on silence.
                    m = json.loads(await asyncio.wait_for(ws.recv(), SILENCE_S))
                    if m.get("type") == "tick":
                        self.on_tick(m, killed.result() if killed.done() else None)
            except TimeoutError:
                self.drop = "silence"
            except Exception as exc:  # the hub behind this connection died
                self.drop = type(exc).__name__
        self.dropped_at = time.time()
        kill_at = await killed
        deadline = time.time() + 30
        while True:  # reconnect through the entry point and resume
            self.reconnect_attempts += 1
            try:
                ws = await connect(self.url, additional_headers=headers, open_timeout=5)
                break
            except Exception as exc:  # refused or timed out: the entry point may still try the dead hub
                self.refusals.append(type(exc).__name__ + ": " + str(exc)[:120])
                if time.time() > deadline:
                    raise
                await asyncio.sleep(0.2)
        async with ws:
            await ws.send(
                json.dumps({"op": "subscribe", "ids": self.ids, "since": self.seqs, "epoch": self.epoch, "reqId": 1})
            )
            async for raw in ws:  # drop what precedes the ack (opening snapshot, live ticks)
                m = json.loads(raw)
                if m.get("type") == "subscribed" and m.get("reqId") == 1:
                    self.recovered = bool(m.get("recovered"))
                    self.resumed_at = time.time()
                    break
            if not self.recovered:
                return
            async for raw in ws:
                m = json.loads(raw)
                if m.get("type") == "tick":
                    self.on_tick(m, kill_at)
                    if self.ticks_after_kill >= 20:
                        return


async def failover(url: str, key: str, n: int, sync_dir: str) -> None:
    loop = asyncio.get_running_loop()
    killed: asyncio.Future = loop.create_future()
    clients = [Client(i, url, key) for i in range(n)]
    tasks = [asyncio.create_task(c.run(killed)) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.ready.wait() for c in clients)), 15)
    await asyncio.sleep(2)  # live ticks on every connection before the kill
    print("READY", flush=True)
    marker = os.path.join(sync_dir, "killed")
    give_up = time.time() + 60
    while not os.path.exists(marker):
        if time.time() > give_up:
            fail(f"{marker} never appeared")
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.05)
    killed.set_result(float(Path(marker).read_text().strip()))
    kill_at = killed.result()
    deadline = time.time() + 40
    while time.time() < deadline:
        if all(c.ticks_after_kill >= 20 and c.last_tick_at > kill_at for c in clients) or any(
            t.done() and t.exception() for t in tasks
        ):
            break
        await asyncio.sleep(0.1)
    for t in tasks:
        if not t.done():
            t.cancel()
    errors = [repr(t.exception()) for t in tasks if t.done() and not t.cancelled() and t.exception()]
    report = [
        {
            "client": c.n,
            "dropped": c.dropped_at is not None and c.dropped_at > kill_at - 1,
            "drop": c.drop,
            "dropped_after_s": round(c.dropped_at - kill_at, 2) if c.dropped_at else None,
            "recovered": c.recovered,
            "reconnect_attempts": c.reconnect_attempts,
            "resumed_after_s": round(c.resumed_at - kill_at, 2) if c.resumed_at else None,
            "ticks_after_kill": c.ticks_after_kill,
            "tick_pause_s": round(c.max_gap, 2),
            "seq_gaps": c.gaps[:5],
            "refusals": c.refusals[:3],
        }
        for c in clients
    ]
    dropped = [c for c in clients if c.dropped_at is not None and c.dropped_at > kill_at - 1]
    ok = (
        not errors
        and bool(dropped)
        and all(c.recovered is True for c in dropped)
        and all(c.ticks_after_kill >= 20 and not c.gaps for c in clients)
    )
    print(
        json.dumps(
            {
                "ok": ok,
                "errors": errors,
                "clients": report,
                "max_tick_pause_s": round(max(c.max_gap for c in clients), 2),
            }
        ),
        flush=True,
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "snapshot":
        asyncio.run(snapshot(args[0], args[1]))
    elif mode == "failover":
        asyncio.run(failover(args[0], args[1], int(args[2]), args[3]))
    else:
        fail(f"unknown mode {mode}")
