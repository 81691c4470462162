"""Redis master failures under load, Sentinel promoting a replica that lacks the newest stream entries (SPEC 15,
issue 21 item 3), on the simulated network: two hubs on `redis+sentinel://` (three Sentinels, quorum 2),
PostgreSQL, WebSocket clients on both hubs and a writer. Both times the replica's link to the master is cut
first, so the master takes tick batches the replica never gets; then:

A. the master is killed (-9): Sentinel promotes the replica and both hubs follow it within 5 s;
B. (the old master back, as the new one's replica) the new master and the feed leader are killed together,
   as when the machine they share dies, while the other hub had been cut off from the master: it never read
   the lost batches, which the leader's clients had received. It takes the feed on the promoted replica.

The checker holds throughout: the entries the replica never got become a gap every client resumes over
(`recovered: false` and a snapshot), never a seq naming two prices (in B the new leader's own floors are
behind what the leader's clients saw: without the jump of the append script, it numbered new prices with
those seqs).
"""

from __future__ import annotations

import time

from server.engine.redis_ticks import SEQ_JUMP
from tests.netsim.services import Hub, RedisNode, wait_until
from tests.netsim.topology import Load, Topology, deployment, fed_again, promoted

FOLLOW_S = 5.0


def _seq(node: RedisNode, inst: str = "brent") -> int:
    return int(node.cli("HGET", "market:ticks:seq", inst).strip() or 0)


def _diverge(topo: Topology, load: Load, master: RedisNode, replica: RedisNode) -> int:
    """Cut the replica off its master until clients have received batches the replica lacks; the replica's
    last brent seq."""
    topo.net.cut(master.host, replica.host)
    kept = _seq(replica)
    wait_until(lambda: _seen(load) > kept + 2, "clients got batches only the master has")
    return kept


def _past(load: Load, kept: int) -> None:
    """Wait until every client has resumed past the failover's jump for every instrument (each instrument's
    first tick after the jump is a gap of its own: a resume, `recovered: false`, a snapshot)."""
    wait_until(lambda: all(c.connected.is_set() and not c.open_gaps and len(c.last) == len(c.ids)
                           and min(c.last.values()) > kept + SEQ_JUMP // 2 for c in load.clients),
               "every client resumed past the failover", 30)


def _leader(hubs: list[Hub]) -> Hub:
    leaders = [h for h in hubs if h.metric("market_feed_leader") == 1]
    assert len(leaders) == 1
    return leaders[0]


def _seen(load: Load, inst: str = "brent", below: int = 1 << 62) -> int:
    """The highest seq of `inst` any client received (under `below`)."""
    return max((seq for (i, seq) in list(load.checker.prices) if i == inst and seq < below), default=0)


def test_hubs_follow_sentinel_failovers_and_lost_entries_become_gaps_not_reused_seqs() -> None:
    with deployment(hubs=2, sentinel=True) as topo, Load(topo, clients_per_hub=8, write_every_s=0.3) as load:
        first, second = topo.master, topo.replica
        assert second is not None
        wait_until(lambda: load.connected() == len(load.clients), "every client subscribed")
        wait_until(lambda: min(load.ticks_on(h) for h in topo.hubs) > 100, "ticks on both hubs")

        # A: the master dies; both hubs follow the promotion
        kept_a = _diverge(topo, load, first, second)
        first.kill()
        killed_a = time.time()
        promoted_a = promoted(topo, killed_a)
        topo.net.heal(first.host, second.host)
        fed_a = {name: round(t - promoted_a, 2) for name, t in fed_again(load, topo.hubs).items()}
        wait_until(lambda: all(h.readyz()[0] == 200 for h in topo.hubs), "both hubs ready after the failover", 15)
        assert max(fed_a.values()) < FOLLOW_S, fed_a
        _past(load, kept_a)
        seen_a = _seen(load, below=SEQ_JUMP)  # clients had seen batches the promoted replica lacks
        load.checker.assert_holds()
        gaps_a = len(load.checker.gaps)
        assert gaps_a > 0, "the lost batches are no gap"

        # B: the old master comes back as a replica; then the new master and the leader die together
        first.start()
        wait_until(lambda: "master_link_status:up" in first.cli("INFO", "replication"),
                   "Sentinel makes the old master a replica of the new one", 30)
        leader = _leader(topo.hubs)
        other = next(h for h in topo.hubs if h is not leader)
        topo.net.cut(other.host, second.host)  # the other hub stops reading the stream
        kept_b = _diverge(topo, load, second, first)
        second.kill()
        leader.kill()
        killed_b = time.time()
        topo.net.heal(other.host, second.host)
        topo.net.heal(second.host, first.host)
        promoted_b = promoted(topo, killed_b)
        fed_b = round(fed_again(load, [other])[other.host.name] - promoted_b, 2)
        _past(load, kept_b)
        seen_b = _seen(load, below=2 * SEQ_JUMP)
        load.stop()
        stored = {row[0] for row in topo.pg.query(topo.database_url, "SELECT id FROM inquiries")}
        load.checker.assert_holds(stored=stored)
        after = sorted(seq for (inst, seq) in load.checker.prices if inst == "brent" and seq > seen_b)
        assert after and after[0] > seen_b + 1, after[:3]  # a gap, never a reused number
        assert seen_a > kept_a + 2 and seen_b > kept_b + 2, (seen_a, kept_a, seen_b, kept_b)
        assert fed_b < FOLLOW_S, fed_b
        print(f"\nredis failover A: promoted {promoted_a - killed_a:.1f} s after the kill, hubs fed again {fed_a} s "
              f"after the promotion (brent: clients had {seen_a}, the replica {kept_a}); B: promoted "
              f"{promoted_b - killed_b:.1f} s after the kill, {other.host.name} leads and feeds {fed_b} s after it "
              f"(brent: clients had {seen_b}, the replica {kept_b}, next {after[0]}); {load.checker.summary()}")
