"""Client-side cost per tick: market_client's stream() vs a raw `websockets` client on the same frames.

A replay server (a child process: `websockets` for the handshake, then raw frame bytes written in
batches of 12 ticks per `transport.write`, as the hub writes them) answers the subscribe with the
ack and a snapshot and then sends N tick frames of the 49 demo instruments in the hub's exact format
(seq increasing per instrument, `ts` ISO 8601 with +08:00). The client, in this process, is measured
from the ack to the N-th tick in CPU time (`time.process_time`; it never waits on the sender, which
is faster than either client):

- raw:        `async for frame in ws` counting tick frames (receive only: the floor);
- raw+json:   the same plus `json.loads` and a dict lookup per frame (the least a hand-written client does);
- stream:     `async for event in market_client.stream(ids)`: typed msgspec events, seq bookkeeping, dedupe.

    .venv/bin/python bench/client_overhead.py                 # 20,000 ticks x 5 rounds per mode (~20 s)
    .venv/bin/python bench/client_overhead.py --ticks 5000 --rounds 3 --json

Target (issue 12): stream() under 2x the raw client per tick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "client"))
sys.path.insert(0, str(ROOT))

BATCH = 12  # ticks per write, as a demo-feed batch of the hub
EPOCH = "bench-epoch"


def tick_frames(ids: list[str], n: int) -> list[bytes]:
    from server.stream.protocol.wire import text_frame

    seqs = dict.fromkeys(ids, 0)
    frames = []
    for k in range(n):
        i = ids[(k * 7) % len(ids)]
        seqs[i] += 1
        ms = 10_000 + k * 5
        ts = f"2026-11-23T10:{(ms // 60000) % 60:02d}:{(ms // 1000) % 60:02d}.{ms % 1000:03d}+08:00"
        payload = orjson.dumps({"type": "tick", "id": i, "price": 1000.0 + k % 97 * 0.25, "change": -1.25,
                                "ts": ts, "seq": seqs[i]})
        frames.append(text_frame(payload))
    return frames


def snapshot_payload(ids: list[str]) -> bytes:
    quote = {"kind": "oil", "name": {"zh": "x", "en": "x"}, "price": 1.0, "priceText": "1.00 USD/bbl", "change": 0.0,
             "changePct": 0.0, "source": {"zh": "s", "en": "s"}, "unit": {"zh": "u", "en": "u"}, "currency": "USD",
             "updated": "2026-11-23T10:00:00.000+08:00"}
    return orjson.dumps({"type": "snapshot", "updated": "2026-11-23T10:00:00.000+08:00", "epoch": EPOCH,
                         "seqs": dict.fromkeys(ids, 0), "quotes": [{"id": i, **quote} for i in ids]})


async def serve(n: int) -> None:
    """The replay server: prints its port, then serves every connection the same N ticks."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve as ws_serve

    from server.market.catalogue import default_catalogue
    from server.stream.protocol.wire import text_frame

    ids = [i.id for i in default_catalogue().instruments]
    frames = tick_frames(ids, n)
    batches = [b"".join(frames[k:k + BATCH]) for k in range(0, n, BATCH)]
    snapshot = snapshot_payload(ids)

    async def handler(ws: ServerConnection) -> None:
        await ws.send(snapshot.decode())
        sub = json.loads(await ws.recv())
        ack = {"type": "subscribed", "ids": sub["ids"], "reqId": sub.get("reqId")}
        transport = ws.transport
        transport.write(text_frame(orjson.dumps(ack)) + text_frame(snapshot))
        for batch in batches:
            transport.write(batch)
            if transport.get_write_buffer_size() > 1 << 20:
                await asyncio.sleep(0.001)
        await ws.wait_closed()

    async with ws_serve(handler, "127.0.0.1", 0, compression=None, max_size=2**22) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


async def run_raw(url: str, ids: list[str], n: int, parse: bool) -> float:
    from websockets.asyncio.client import connect

    async with connect(url, compression=None, max_size=2**22) as ws:
        await ws.recv()  # the connection's first snapshot
        await ws.send(json.dumps({"op": "subscribe", "ids": ids, "reqId": "r1"}))
        await ws.recv()  # ack
        await ws.recv()  # snapshot
        seen = 0
        started = time.process_time()
        async for frame in ws:
            if parse:
                msg = json.loads(frame)
                if msg["type"] == "tick":
                    seen += 1
            else:
                seen += 1
            if seen == n:
                break
        return time.process_time() - started


async def run_stream(url: str, ids: list[str], n: int) -> float:
    from market_client import Tick, stream

    seen = 0
    started = 0.0
    async with stream(ids, key="bench", ws_url=url) as events:
        async for event in events:
            if isinstance(event, Tick):
                seen += 1
                if seen == n:
                    return time.process_time() - started
            else:
                started = time.process_time()  # the snapshot after the ack
    raise AssertionError("stream ended")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ticks", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve(args.ticks))
        return 0
    from server.market.catalogue import default_catalogue

    ids = [i.id for i in default_catalogue().instruments]
    child = subprocess.Popen([sys.executable, __file__, "--serve", "--ticks", str(args.ticks)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        url = f"ws://127.0.0.1:{int(child.stdout.readline())}/ws/quotes"
        modes: dict[str, Any] = {
            "raw": lambda: run_raw(url, ids, args.ticks, parse=False),
            "raw+json": lambda: run_raw(url, ids, args.ticks, parse=True),
            "stream": lambda: run_stream(url, ids, args.ticks),
        }
        samples: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.rounds):
            for mode, run in modes.items():
                samples[mode].append(asyncio.run(run()) / args.ticks * 1e6)
    finally:
        child.terminate()
        child.wait(10)
    us = {m: statistics.median(v) for m, v in samples.items()}
    result = {"ticks": args.ticks, "rounds": args.rounds, "us_per_tick": us,
              "stream_vs_raw": us["stream"] / us["raw"], "stream_vs_raw_json": us["stream"] / us["raw+json"]}
    if args.json:
        print(json.dumps(result))
    else:
        for m, v in us.items():
            rounds = ", ".join(f"{x:.2f}" for x in samples[m])
            print(f"{m:9} {v:6.2f} us/tick (median of {args.rounds}; rounds {rounds})")
        print(f"stream / raw = {result['stream_vs_raw']:.2f}x, stream / raw+json = {result['stream_vs_raw_json']:.2f}x "
              "(target < 2x raw)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
