"""Latency and loss soak on the simulated network (issue 21 item 6; docs/scaling.md, "Many machines").

    .venv/bin/python -m bench.netsim_soak                 # 5 minutes: 2 hubs, 200 clients, ~200 ticks/s
    .venv/bin/python -m bench.netsim_soak --quick         # 30 s, 40 clients
    .venv/bin/python -m bench.netsim_soak --minutes 2 --failover --clients-per-hub 500 \
        --delay-ms 0 --jitter-ms 0 --loss 0   # 1,000 clients, plain links, the Redis master killed half way

Needs root (network namespaces; tests/netsim/net.py). Builds hubs, Redis, PostgreSQL and a clients host
as namespaces, puts 2 ms +/- 1 ms delay and 0.5% loss on every link (a userspace netem: this kernel has no
sch_netem), runs WebSocket clients on every hub and a writer (an inquiry every 0.5 s, round robin) for the
duration, with the checker on (tests/netsim/checker.py). Prints delivered ticks/s per hub, tick latency
p50/p99 per hub (a tick's `ts`, stamped by the leader, to its arrival at a client: the feed-to-client
latency, through Redis and a hub), what the shaper did, with --failover (Redis master, replica and three
Sentinels; the master killed half way) when Sentinel promoted the replica and when each hub's clients got
ticks again (the first tick numbered on the promoted replica), the clients' CPU and the age of the newest
tick each client process handled (a backlog of the load generator shows there), and everything the checker
found; exit status 1 if it found anything. The clients are raw-protocol ones (tests/netsim/clients.py), light
enough for 1,000 at ~200 ticks/s. `--delay-ms 0 --jitter-ms 0 --loss 0`: plain links, no shaper. Bounded:
everything is removed at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.netsim.services import wait_until  # noqa: E402
from tests.netsim.topology import Load, deployment, fed_again, promoted, switched_at  # noqa: E402


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
    parser.add_argument("--client-procs", type=int, default=4,
                        help="processes the clients run in (their CPU must not become the latency measured)")
    args = parser.parse_args()
    seconds = 30.0 if args.quick else args.minutes * 60
    per_hub = 20 if args.quick else args.clients_per_hub
    shape = (args.delay_ms, args.jitter_ms, args.loss)
    shaped = any(shape)  # 0 0 0: plain links, no shaper (a userspace one: its CPU is the machine's too)
    started = time.monotonic()
    # every client uses one enterprise key, whose plan allows 50 WebSocket connections per hub by default: a
    # hub must admit all of them (after a failover or a partition every client may be on one hub)
    # and all of them come from the clients host's one address, whose handshakes a hub limits (120 a minute by
    # default): each client may open a connection a second
    extra = ("--ws-max-conn", f"enterprise={max(50, per_hub * args.hubs)}",
             "--ws-handshake-rate", str(max(120, 60 * per_hub * args.hubs)))
    with deployment(hubs=args.hubs, sentinel=args.failover, tick_interval_ms=args.tick_interval_ms,
                    shape=shape if shaped else None, extra=extra) as topo, \
            Load(topo, clients_per_hub=per_hub, write_every_s=0.5, procs=args.client_procs) as load:
        print(f"deployment up in {time.monotonic() - started:.0f} s: {args.hubs} hubs, {per_hub} clients each, "
              f"links {args.delay_ms} +/- {args.jitter_ms} ms, loss {args.loss:.1%}; running {seconds:.0f} s; "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        wait_until(lambda: load.connected() == load.total, "every client subscribed", 120)
        def delivered() -> dict[str, int]:
            return {h.host.name: load.ticks_on(h) for h in topo.hubs}

        def client_cpu() -> float:  # CPU seconds of every client process so far
            return sum(st.get("cpu_s", 0.0) for st in load.statuses())

        t0, ticks0, cpu0 = time.monotonic(), delivered(), client_cpu()
        began = time.time() - (t0 - started)  # Unix time the deployment started
        loads = [os.getloadavg()[0]]
        killed_at: float | None = None
        failover: dict[str, object] = {}
        end = seconds
        while (elapsed := time.monotonic() - t0) < end:
            time.sleep(min(10.0, end - elapsed))  # a timed soak: the duration is the point
            early = switched_at(topo.sentinels, began + 1) if args.failover and killed_at is None else None
            if early is not None:  # the master to kill is no longer the master: nothing to measure
                failover = {"not measured": f"Sentinel promoted the replica {early - began:.0f} s after the deployment "
                                            "started, before the kill (the master looked down: links too slow)"}
                print(f"{elapsed:5.0f} s  {failover['not measured']}", flush=True)
                killed_at = early
            if args.failover and killed_at is None and elapsed >= seconds / 2:
                topo.master.kill()
                killed_at = time.time()
                print(f"{elapsed:5.0f} s  killed the Redis master {topo.master.host.ip}", flush=True)
                at = promoted(topo, killed_at)
                fed = {h: round(t - at, 2) for h, t in fed_again(load, topo.hubs).items()}

                def jumped() -> dict[str, float]:  # per hub: its clients' first tick numbered on the new master
                    first: dict[str, float] = {}
                    for st in load.statuses():
                        for hub, t in st.get("jumped", {}).items():
                            first[hub] = min(t, first.get(hub, t))
                    return first

                wait_until(lambda: len(jumped()) == len(topo.hubs), "a tick past the failover's jump on every hub", 30)
                failover = {"promoted s after the kill": round(at - killed_at, 2),
                            "hubs' clients got a tick from the new master s after the promotion":
                                {h: round(t - at, 2) for h, t in sorted(jumped().items())},
                            "hubs' clients got 20 ticks s after the promotion (0.5 s steps)": fed}
                print(f"         {failover}", flush=True)
                end = max(end, time.monotonic() - t0 + 15)  # at least 15 s of ticks after the failover
            rates = {h: round((n - ticks0[h]) / max(1e-9, time.monotonic() - t0)) for h, n in delivered().items()}
            loads.append(os.getloadavg()[0])
            print(f"{time.monotonic() - t0:5.0f} s  delivered ticks/s per hub {rates}  "
                  f"writes accepted {len(load.checker.accepted)}  clients' CPU "
                  f"{(client_cpu() - cpu0) / (time.monotonic() - t0):.0%} of a core, their newest tick's latency ms "
                  f"{[st.get('recent_ms') for st in load.statuses()]}  load average {loads[-1]:.1f}", flush=True)
        span = time.monotonic() - t0
        ticks = {h: n - ticks0[h] for h, n in delivered().items()}
        cpu = client_cpu() - cpu0
        load.stop()
        accepted = {rid for _, rid in load.checker.accepted}
        try:
            wait_until(lambda: accepted <= topo.receiver.record_ids(), "every accepted record notified", 60)
        except AssertionError as exc:
            print(exc)
        stored = {row[0] for row in topo.pg.query(topo.database_url, "SELECT id FROM inquiries")}
        summary = load.checker.summary()
        report = {
            "seconds": round(span), "clients": load.total, "client processes": args.client_procs,
            "clients' CPU (share of one core, all processes)": round(cpu / span, 2),
            "load average (1 min) min/max": [min(loads), max(loads)],
            "delivered ticks/s per hub": {h: round(n / span) for h, n in ticks.items()},
            "distinct ticks/s (the feed)": round(summary["distinct (id, seq)"] / (time.monotonic() - started)),
            "tick latency ms p50/p99 per hub": summary["latency ms p50/p99"],
            "shaper": topo.net.shaper_stats() if shaped else "off (--delay-ms 0 --jitter-ms 0 --loss 0)",
            **({"failover": failover} if failover else {}),
            "checker": {k: v for k, v in summary.items() if k not in ("latency ms p50/p99", "ticks")},
        }
        print(json.dumps(report, indent=2))
        try:
            load.checker.assert_holds(stored=stored, delivered=topo.receiver, every_record_notified=True)
        except AssertionError as exc:
            print(exc)
            return 1
        print("checker: nothing found")
        return 1 if "not measured" in failover else 0


if __name__ == "__main__":
    sys.exit(main())
