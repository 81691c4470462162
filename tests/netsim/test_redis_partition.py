"""The feed leader cut off from Redis (SPEC 15, issue 21 item 4), on the simulated network with 2 ms +/- 1 ms
delay and 0.5% loss on every link (the CI version of bench/netsim_soak.py: issue 21 item 6): two hubs on one
Redis and PostgreSQL, WebSocket clients on both. First a few seconds of plain traffic (every client gets
ticks, no gap). Then the leader's links to Redis are cut (its clients and PostgreSQL stay reachable):

- it stops feeding before its lease can pass (its "lease lost" comes before the other's "lease taken"),
- the other hub takes the feed over within 5 s of the cut, and ticks flow to its clients,
- the cut-off hub answers /readyz 503 while cut off, and keeps its WebSocket clients,
- when the link heals, its clients get the ticks they missed, and the checker holds: no (id, seq) with two
  prices, every gap resumed over. Half the clients wait on their hub through the cut; the other half give
  up on a silent connection after 3 s and resume on the other hub.
"""

from __future__ import annotations

import time
from datetime import datetime

from tests.netsim.services import Hub, wait_until
from tests.netsim.topology import Load, deployment

TAKEOVER_S = 5.0
SHAPE = (2.0, 1.0, 0.005)  # delay ms, jitter ms, loss: every link
SOAK_S = 8.0


def _lease_events(hub: Hub) -> list[tuple[float, str]]:
    """(time, "taken" | "lost") of the hub's feed lease log lines."""
    out = []
    for line in hub.log_lines():
        if line.get("msg", "").startswith("feed lease "):
            out.append((datetime.fromisoformat(line["ts"]).timestamp(),
                        "taken" if line["msg"].startswith("feed lease taken") else "lost"))
    return out


def _leader(hubs: list[Hub]) -> Hub:
    leaders = [h for h in hubs if h.metric("market_feed_leader") == 1]
    assert len(leaders) == 1, [h.host.name for h in leaders]
    return leaders[0]


def test_a_leader_cut_off_from_redis_stops_feeding_before_another_hub_takes_over() -> None:
    with deployment(hubs=2, shape=SHAPE) as topo, Load(topo, clients_per_hub=6, write_every_s=0,
                                                       patient=True) as load:
        wait_until(lambda: load.connected() == len(load.clients), "every client subscribed")
        old = _leader(topo.hubs)
        new = next(h for h in topo.hubs if h is not old)
        time.sleep(SOAK_S)  # plain traffic on a lossy network for a while: nothing to await
        soak = load.checker.summary()
        assert soak["gaps"] == 0 and soak["conflicts"] == 0 and soak["violations"] == 0, soak
        assert min(soak["ticks"].values()) > 10 * len(load.clients), soak  # ticks reached both hubs' clients
        shaped = topo.net.shaper_stats()
        assert shaped["passed"] > 1000 and 1.0 <= shaped["delay_ms_p50"] <= 3.0, shaped

        redis = [topo.master.host]
        sessions = sum(c.sessions for c in load.clients)
        topo.net.cut(old.host, *redis)
        cut_at = time.time()
        wait_until(lambda: new.metric("market_feed_leader") == 1, "the other hub takes the feed", 2 * TAKEOVER_S)
        taken_at = next(t for t, what in _lease_events(new) if what == "taken")
        lost = [t for t, what in _lease_events(old) if what == "lost"]
        assert lost, f"the cut-off leader never gave up its lease:\n{old.output()[-2000:]}"
        assert lost[0] < taken_at, (lost[0] - cut_at, taken_at - cut_at)  # stopped before the lease passed
        assert taken_at - cut_at < TAKEOVER_S, taken_at - cut_at
        ticks_new = load.ticks_on(new)
        wait_until(lambda: load.ticks_on(new) > ticks_new + 20, "ticks from the new leader")
        wait_until(lambda: old.readyz()[0] == 503, "/readyz 503 on the cut-off hub", 10)

        topo.net.heal(old.host, *redis)
        healed_at = time.monotonic()
        wait_until(lambda: old.readyz()[0] == 200, "the healed hub ready again", 15)
        ready_s = time.monotonic() - healed_at
        ticks_old = load.ticks_on(old)
        wait_until(lambda: load.ticks_on(old) > ticks_old + 20, "ticks on the healed hub's clients")
        assert old.metric("market_feed_leader") == 0 and new.metric("market_feed_leader") == 1
        load.stop()
        load.checker.assert_holds()
        summary = load.checker.summary()
        print(f"\nsoak {SOAK_S:.0f} s: {soak}\nshaper: {shaped}")
        print(f"redis partition: lease lost {lost[0] - cut_at:.1f} s after the cut, taken over "
              f"{taken_at - cut_at:.1f} s after it, ready {ready_s:.1f} s after the heal; "
              f"{sum(c.sessions for c in load.clients) - sessions} reconnects; {summary}")
