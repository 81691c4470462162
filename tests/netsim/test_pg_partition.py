"""A hub cut off from PostgreSQL (SPEC 15, issue 21 item 5), on the simulated network: two hubs (granian,
robyn) on Redis and PostgreSQL, WebSocket clients on both, a writer posting inquiries round robin, a
webhook receiver. hub1's link to PostgreSQL is cut for a while (its clients, Redis and the receiver stay
reachable), then healed.

While cut, hub1 keeps serving market data (its clients' ticks keep coming, a keyed GET answers 200),
answers writes with 503 `storage_unavailable` and `/readyz` 503; hub2 accepts writes throughout. After
the heal hub1 accepts writes again; nothing accepted is lost and no notification is sent twice.
"""

from __future__ import annotations

import time

import httpx

from tests.netsim.services import call_in, wait_until
from tests.netsim.topology import Load, deployment

CUT_S = 8.0


def test_a_hub_cut_off_from_postgresql_serves_market_data_refuses_writes_and_loses_nothing() -> None:
    with deployment(hubs=2) as topo, Load(topo, clients_per_hub=5, write_every_s=0.2) as load:
        hub1, hub2 = topo.hubs
        net = topo.net
        wait_until(lambda: load.connected() == len(load.clients), "every client subscribed")
        wait_until(lambda: len([w for w in load.writes if w[1] == 201]) >= 4, "writes accepted on both hubs")

        net.cut(hub1.host, topo.pg.host)
        cut_at = time.monotonic()
        took = wait_until(lambda: hub1.readyz()[0] == 503, "hub1 /readyz 503 while cut off", 10)
        status, body = hub1.readyz()
        assert status == 503 and "storage" in body.get("detail", ""), body
        assert hub2.readyz()[0] == 200
        ticks_then = load.ticks_on(hub1)
        writes_then = len(load.writes)
        keyed = call_in(net, topo.clients, lambda: httpx.get(hub1.base + "/api/v1/quotes",
                                                              headers={"X-SERVICE-Key": topo.key}, timeout=10))
        assert keyed.status_code == 200, keyed.text  # a known key, market data in memory
        # the partition lasts until hub1 has answered two writes (each waits out the pool: ~3 s) and CUT_S passed
        wait_until(lambda: len([w for w in load.writes[writes_then:] if w[0] == "hub1"]) >= 2, "hub1 answers", 30)
        time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))  # the rest of CUT_S: nothing to await
        during = list(load.writes[writes_then:])
        assert load.ticks_on(hub1) > ticks_then + 10, "hub1's clients got no ticks while it was cut off"
        on_hub1 = [w for w in during if w[0] == "hub1"]
        assert all(w[1] == 503 and w[2] == "/problems/storage_unavailable" for w in on_hub1), on_hub1
        assert [w for w in during if w[0] == "hub2" and w[1] != 201] == [], during

        net.heal(hub1.host, topo.pg.host)
        healed_at = time.monotonic()
        wait_until(lambda: hub1.readyz()[0] == 200, "hub1 ready again after the heal", 20)
        back_s = time.monotonic() - healed_at
        mark = len(load.writes)
        wait_until(lambda: any(w[0] == "hub1" and w[1] == 201 for w in load.writes[mark:]), "hub1 accepts writes")
        accepted = {rid for _, rid in load.checker.accepted}
        wait_until(lambda: accepted <= topo.receiver.record_ids(), "every accepted record notified", 30)
        # an absence needs a barrier: a record written on each hub after this point notified (each worker has
        # run a later round), then nothing sent twice
        mark = len(load.writes)
        wait_until(lambda: {w[0] for w in load.writes[mark:] if w[1] == 201 and w[2] in topo.receiver.record_ids()}
                   == {h.host.name for h in topo.hubs}, "a later record of each hub notified", 30)
        load.stop()
        accepted = {rid for _, rid in load.checker.accepted}
        wait_until(lambda: accepted <= topo.receiver.record_ids(), "the last records notified", 30)
        stored = {row[0] for row in topo.pg.query(topo.database_url, "SELECT id FROM inquiries")}
        load.checker.assert_holds(stored=stored, delivered=topo.receiver, every_record_notified=True)
        assert load.checker.conflicts == [] and load.checker.ticks[hub1.host.name] > 0
        print(f"\npg partition: /readyz 503 after {took:.1f} s, ready {back_s:.1f} s after the heal; "
              f"{load.checker.summary()}")
