"""Latency and loss soak on the simulated network (issue 21 item 6; docs/scaling.md, "Many machines").

    .venv/bin/python -m bench.netsim_soak                 # 5 minutes: 2 hubs, 200 clients, ~200 ticks/s
    .venv/bin/python -m bench.netsim_soak --quick         # 30 s, 40 clients
    .venv/bin/python -m bench.netsim_soak --failover      # and kill the Redis master half way (Sentinel)

Needs root (network namespaces; tests/netsim/net.py). Builds hubs, Redis, PostgreSQL and a clients host
as namespaces, puts 2 ms +/- 1 ms delay and 0.5% loss on every link (a userspace netem: this kernel has no
sch_netem), runs WebSocket clients on every hub and a writer (an inquiry every 0.5 s, round robin) for the
duration, with the checker on (tests/netsim/checker.py). Prints delivered ticks/s per hub, tick latency
p50/p99 per hub (a tick's `ts`, stamped by the leader, to its arrival at a client: the feed-to-client
latency, through Redis and a hub), what the shaper did, and everything the checker found; exit status 1
if it found anything. Bounded: everything is removed at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.netsim.services import wait_until  # noqa: E402
from tests.netsim.topology import Load, deployment  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true", help="30 s and 20 clients per hub")
    parser.add_argument("--hubs", type=int, default=2)
    parser.add_argument("--clients-per-hub", type=int, default=100)
    parser.add_argument("--tick-interval-ms", type=int, default=60, help="60: ~200 ticks/s over 49 instruments")
    parser.add_argument("--delay-ms", type=float, default=2.0)
    parser.add_argument("--jitter-ms", type=float, default=1.0)
    parser.add_argument("--loss", type=float, default=0.005)
    parser.add_argument("--failover", action="store_true", help="kill the Redis master half way (Sentinel)")
    args = parser.parse_args()
    seconds = 30.0 if args.quick else args.minutes * 60
    per_hub = 20 if args.quick else args.clients_per_hub
    shape = (args.delay_ms, args.jitter_ms, args.loss)
    started = time.monotonic()
    with deployment(hubs=args.hubs, sentinel=args.failover, tick_interval_ms=args.tick_interval_ms,
                    shape=shape) as topo, Load(topo, clients_per_hub=per_hub, write_every_s=0.5) as load:
        print(f"deployment up in {time.monotonic() - started:.0f} s: {args.hubs} hubs, {per_hub} clients each, "
              f"links {args.delay_ms} +/- {args.jitter_ms} ms, loss {args.loss:.1%}; running {seconds:.0f} s",
              flush=True)
        wait_until(lambda: load.connected() == len(load.clients), "every client subscribed", 60)
        t0, ticks0 = time.monotonic(), dict(load.checker.ticks)
        killed_at = None
        while (elapsed := time.monotonic() - t0) < seconds:
            time.sleep(min(10.0, seconds - elapsed))  # a timed soak: the duration is the point
            if args.failover and killed_at is None and elapsed >= seconds / 2:
                topo.master.kill()
                killed_at = time.monotonic()
                print(f"{elapsed:5.0f} s  killed the Redis master {topo.master.host.ip}", flush=True)
            rates = {h: round((n - ticks0.get(h, 0)) / max(1e-9, time.monotonic() - t0))
                     for h, n in load.checker.ticks.items()}
            print(f"{time.monotonic() - t0:5.0f} s  delivered ticks/s per hub {rates}  "
                  f"gaps {len(load.checker.gaps)}  writes {len(load.checker.accepted)}", flush=True)
        span = time.monotonic() - t0
        ticks = {h: n - ticks0.get(h, 0) for h, n in load.checker.ticks.items()}
        load.stop()
        accepted = {rid for _, rid in load.checker.accepted}
        try:
            wait_until(lambda: accepted <= topo.receiver.record_ids(), "every accepted record notified", 60)
        except AssertionError as exc:
            print(exc)
        stored = {row[0] for row in topo.pg.query(topo.database_url, "SELECT id FROM inquiries")}
        summary = load.checker.summary()
        report = {
            "seconds": round(span), "clients": len(load.clients),
            "delivered ticks/s per hub": {h: round(n / span) for h, n in ticks.items()},
            "distinct ticks/s (the feed)": round(summary["distinct (id, seq)"] / (time.monotonic() - started)),
            "tick latency ms p50/p99 per hub": summary["latency ms p50/p99"],
            "shaper": topo.net.shaper_stats(),
            "checker": {k: v for k, v in summary.items() if k not in ("latency ms p50/p99", "ticks")},
        }
        print(json.dumps(report, indent=2))
        try:
            load.checker.assert_holds(stored=stored, delivered=topo.receiver, every_record_notified=True)
        except AssertionError as exc:
            print(exc)
            return 1
        print("checker: nothing found")
        return 0


if __name__ == "__main__":
    sys.exit(main())
