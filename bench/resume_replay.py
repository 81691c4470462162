"""Resume after reconnect (SPEC 7): server time to replay 1,000 missed ticks, and the history's memory.

    .venv/bin/python -m bench.resume_replay            # in process + one real server (~15 s)
    .venv/bin/python -m bench.resume_replay --json

Rows (printed as `name: value`):

- `resume replay 1000 (core)`: the real `core.messages.on_text` for `{"op":"subscribe","ids":["brent"],
  "since":{"brent":N-1000},"epoch":E}` against a `TickHistory` holding N ticks of every one of the
  49 instruments: parse, validate, build the ack and the replay, write it (into a bytearray, as a
  transport buffers what the kernel does not take at once). Median and p99 of R runs, in us.
- `resume replay 1000 (server metric)`: a real server (`serve --feed jsonl:FILE`, 1,200 brent ticks
  written into the file), a real client resuming 1,000 ticks back: the server's own timer,
  `market_ws_resume_seconds` (from the subscribe's handling to the replay handed to the transport),
  sum/count over R resumes; and the client's wall time from sending the subscribe to the last
  replayed tick received (loopback, websockets client parsing every frame).
- `alternative: numpy columns, serialise at replay (1000)`: the same 1,000 ticks kept as numpy
  float64 columns (ts, price, change; seq implied) and turned into frames at replay time, which is
  the design not taken; in us.
- `history bytes per instrument, ticks S s apart (H held)`: tracemalloc of a TickHistory fed ticks of
  one instrument S seconds apart: 1 s (the 1,000-tick floor holds), 0.25 s (10 minutes = 2,400 ticks
  hold), 0.01 s (the 16,384-tick bound holds); frames ~110 bytes plus 4 bytes of offset, objects
  included; and the numpy alternative's `nbytes` (24 bytes a tick).

Target (issue 12): under 10 ms server time for 1,000 missed ticks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server.core.keys import ApiKey  # noqa: E402
from server.core.limits import Gcra  # noqa: E402
from server.core.metrics import Registry  # noqa: E402
from server.market.catalogue import default_catalogue  # noqa: E402
from server.market.state import AppliedTick  # noqa: E402
from server.market.timefmt import iso  # noqa: E402
from server.stream.core import StreamCore  # noqa: E402
from server.stream.delivery.resume_history import TickHistory  # noqa: E402
from server.stream.limits import StreamLimits  # noqa: E402
from server.stream.metrics import StreamMetrics  # noqa: E402
from server.stream.protocol.messages import tick_frame, tick_payload  # noqa: E402
from server.stream.protocol.wire import text_frame  # noqa: E402

CAT = default_catalogue()
IDS = [i.id for i in CAT.instruments]
T0 = 1_790_000_000.0
KEY = ApiKey("key_bench", "professional", None, None, 0.0, None)


class State:
    version = 1
    updated = T0

    def __init__(self, n: int) -> None:
        self.seq = [n] * len(IDS)

    def quotes(self, rows: list[int]) -> list[dict[str, Any]]:
        return [{"id": IDS[r]} for r in rows]


def applied(row: int, seq: int, spacing_s: float = 0.25) -> AppliedTick:
    return AppliedTick(row, IDS[row], round(80.0 + (seq % 200) * 0.01, 2), round((seq % 50) * 0.01 - 0.25, 2),
                       T0 + seq * spacing_s, seq)


def core_replay(held: int, missed: int, runs: int) -> list[float]:
    history = TickHistory(len(IDS), tick_frame)
    for seq in range(1, held + 1):
        history.add([applied(row, seq) for row in range(len(IDS))])
    core = StreamCore(State(held), CAT, "E", StreamLimits(max_conn={"professional": 10**6}),
                      StreamMetrics(Registry(), lambda: 0.0), lambda s: KEY, Gcra(), history, None)
    out = bytearray()
    session = core.sessions.connect(out.extend, 0.0)
    assert core.sessions.admit(session, "/ws/quotes?key=k") is None
    core.sessions.open(session)
    message = orjson.dumps({"op": "subscribe", "ids": ["brent"], "since": {"brent": held - missed}, "epoch": "E"})
    times = []
    for i in range(runs):
        out.clear()
        session.rate.tat = 0.0  # not the client message limit under test
        started = time.perf_counter()
        core.messages.on_text(session, message, float(i))
        times.append(time.perf_counter() - started)
    assert out.count(b'"type":"tick"') == missed, "the replay holds every missed tick"
    return times


def numpy_replay(missed: int, runs: int) -> list[float]:
    ts = np.array([T0 + s * 0.25 for s in range(missed)])
    price = np.array([applied(0, s).price for s in range(missed)])
    change = np.array([applied(0, s).change for s in range(missed)])
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        b"".join([text_frame(tick_payload("brent", p, c, iso(t), s))
                  for s, (t, p, c) in enumerate(zip(ts.tolist(), price.tolist(), change.tolist(), strict=True), 1)])
        times.append(time.perf_counter() - started)
    return times


def history_bytes(ticks: int, spacing_s: float) -> tuple[int, int]:
    """(bytes traced, ticks held) for one instrument fed `ticks` ticks `spacing_s` apart. The frames are built
    before tracing starts and copied in, so only what the history keeps is counted (not iso()'s cache)."""
    frames = [tick_frame(applied(0, seq, spacing_s)) for seq in range(ticks + 1)]
    ticks_in = [applied(0, seq, spacing_s) for seq in range(1, ticks + 1)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    history = TickHistory(1, lambda t: bytes(bytearray(frames[t.seq])))
    for t in ticks_in:
        history.add([t])
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return size, history.ticks(0)


def server_replay(runs: int) -> dict[str, float]:
    from websockets.asyncio.client import connect

    from tests.conftest import ServerProcess

    tmp = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    feed = tmp / "ticks.jsonl"
    feed.write_text("")
    srv = ServerProcess(tmp / "data", "granian", "--feed", f"jsonl:{feed}")
    try:
        n = 1200
        with feed.open("a") as fh:
            fh.write("".join(json.dumps({"id": "brent", "price": 80 + i % 100 / 100}) + "\n" for i in range(n)))

        async def go() -> list[float]:
            walls = []
            async with connect(f"{srv.ws_base}/ws/quotes", additional_headers={"X-SERVICE-Key": srv.demo_key},
                               max_queue=None) as ws:
                await ws.send(json.dumps({"op": "subscribe", "ids": ["brent"], "reqId": 0}))
                epoch, last = "", 0
                while last < n:  # until the server has applied all n
                    msg = json.loads(await ws.recv())
                    if msg["type"] == "snapshot":
                        epoch, last = msg["epoch"], max(last, msg["seqs"]["brent"])
                    elif msg["type"] == "tick" and msg["id"] == "brent":
                        last = msg["seq"]
                for i in range(runs):
                    started = time.perf_counter()
                    await ws.send(json.dumps({"op": "subscribe", "ids": ["brent"], "since": {"brent": n - 1000},
                                              "epoch": epoch, "reqId": i + 1}))
                    got = 0
                    while got < 1000:
                        msg = json.loads(await ws.recv())
                        got += msg["type"] == "tick"
                    walls.append(time.perf_counter() - started)
                    await asyncio.sleep(0.06)  # the client message limit (20/s)
            return walls

        walls = asyncio.run(go())
        metric: dict[str, float] = {}
        import httpx

        for line in httpx.get(srv.base + "/metrics").text.splitlines():
            if line.startswith("market_ws_resume_seconds"):
                name, value = line.rsplit(" ", 1)
                metric[name.removeprefix("market_ws_resume_seconds")] = float(value)
        count = metric["_count"]
        return {"server_mean_us": metric["_sum"] / count * 1e6, "resumes": count,
                "server_le_1ms": metric['_bucket{le="0.001"}'] / count,
                "server_le_10ms": metric['_bucket{le="0.01"}'] / count,
                "client_wall_median_us": statistics.median(walls) * 1e6}
    finally:
        srv.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    core = core_replay(1200, 1000, args.runs)
    alt = numpy_replay(1000, max(20, args.runs // 10))
    rows: dict[str, Any] = {
        "resume replay 1000 (core) median us": statistics.median(core) * 1e6,
        "resume replay 1000 (core) p99 us": sorted(core)[int(len(core) * 0.99) - 1] * 1e6,
        "alternative: numpy columns, serialise at replay (1000) median us": statistics.median(alt) * 1e6,
    }
    for ticks, spacing in ((5000, 1.0), (5000, 0.25), (50_000, 0.01)):
        size, held = history_bytes(ticks, spacing)
        rows[f"history bytes per instrument, ticks {spacing} s apart ({held} held)"] = size
    rows["alternative numpy bytes per instrument @1000"] = 1000 * 3 * 8
    server = server_replay(20)
    rows["resume replay 1000 (server metric) mean us"] = server["server_mean_us"]
    rows["resume replay 1000 (server metric) share <= 1 ms %"] = 100 * server["server_le_1ms"]
    rows["resume replay 1000 (server metric) share <= 10 ms %"] = 100 * server["server_le_10ms"]
    rows["resume replay 1000 (client wall, loopback) median us"] = server["client_wall_median_us"]
    if args.json:
        print(json.dumps(rows))
    else:
        for name, value in rows.items():
            print(f"{name}: {value:,.0f}")


if __name__ == "__main__":
    main()
