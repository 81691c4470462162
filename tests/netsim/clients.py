"""WebSocket clients of the checker in a process of their own (bench/netsim_soak.py spreads many clients over
several, so the clients' CPU does not become the latency it measures). Runs until SIGTERM, writes its
status every 0.5 s to OUT.status and, at the end, everything the checker needs to OUT:

    python -m tests.netsim.clients --hubs '[["hub1", "ws://10.77.5.2:8001"]]' --key KEY --clients 250 --out F
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
from pathlib import Path
from typing import Any

from tests.netsim.checker import STALL_S, Checker, Client, Gap

LATENCY_SAMPLE = 50_000  # latencies kept per hub (evenly thinned)
DRAIN_S = 30.0  # at SIGTERM, how long clients may finish the resumes they started


def dump(checker: Checker, clients: list[Client]) -> dict[str, Any]:
    def thin(values: list[float]) -> list[float]:
        step = max(1, len(values) // LATENCY_SAMPLE)
        return [round(v, 2) for v in values[::step]]

    return {
        "prices": [[inst, seq, price] for (inst, seq), price in checker.prices.items()],
        "conflicts": checker.conflicts, "violations": checker.violations,
        "gaps": [g.__dict__ for g in checker.gaps], "ticks": dict(checker.ticks),
        "latencies": {hub: thin(v) for hub, v in checker.latencies.items()},
        "connected": sum(c.connected.is_set() for c in clients),
    }


def merge(into: Checker, part: dict[str, Any]) -> None:
    """One process's record into the bench's checker: prices are checked across processes too."""
    for inst, seq, price in part["prices"]:
        seen = into.prices.setdefault((inst, seq), price)
        if seen != price:
            into.conflicts.append(f"{inst} seq {seq}: {seen} and {price} (across client processes)")
    into.conflicts += part["conflicts"]
    into.violations += part["violations"]
    into.gaps += [Gap(**g) for g in part["gaps"]]
    for hub, n in part["ticks"].items():
        into.ticks[hub] += n
    for hub, values in part["latencies"].items():
        into.latencies[hub] += values


async def run(args: argparse.Namespace) -> None:
    hubs = [tuple(h) for h in json.loads(args.hubs)]
    checker = Checker()
    clients = [Client(checker, f"p{args.first}-{i}", hubs, args.key, json.loads(args.ids), first=args.first + i,
                      stall_s=STALL_S) for i in range(args.clients)]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    tasks = [asyncio.create_task(c.run()) for c in clients]
    status = Path(args.out + ".status")
    while not stop.is_set():
        tmp = status.with_suffix(".tmp")
        tmp.write_text(json.dumps({"connected": sum(c.connected.is_set() for c in clients),
                                   "ticks": dict(checker.ticks)}))
        tmp.replace(status)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)
    drain = asyncio.get_running_loop().time() + DRAIN_S  # resumes in flight get their answer
    while any(c.open_gaps for c in clients) and asyncio.get_running_loop().time() < drain:
        await asyncio.sleep(0.1)
    for c in clients:
        c.stop()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    Path(args.out).write_text(json.dumps(dump(checker, clients)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hubs", required=True)
    parser.add_argument("--ids", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--out", required=True)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
