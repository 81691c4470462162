// The stream's bookkeeping without I/O: what was seen, what to ask for on a reconnect, what to hand on.
// (The Python client's market_client/resume.py, the same rules.)
//
// Invariants:
// - per instrument, ticks are handed on in strictly increasing `seq` within one `epoch`: a tick at or
//   below the last seq seen is a duplicate (a replay overlapping what arrived before the cut) and dropped;
// - every seq the client skipped is reported once, as a Gap: a jump inside a live stream with its exact
//   range, a refused resume with the first missed seq, a heartbeat naming a seq never seen;
// - `last` holds, per instrument, the last seq handed on, in the history named `epoch`.

import type { HeartbeatMessage, SnapshotMessage, SubscribedMessage, TickMessage } from "./types.js";

/** Ticks the client knows it did not get. */
export interface Gap {
  /**
   * - `not_recovered`: a resume was refused (history no longer held, or a new epoch after a server restart);
   *   a fresh snapshot with current prices follows. Missed candles: fill them with a range query.
   * - `seq_jump`: a live tick skipped seqs (a slow reader's ticks were conflated to the latest).
   * - `heartbeat`: a heartbeat named a seq above the last tick seen; the client asks to resume at once.
   */
  reason: "not_recovered" | "seq_jump" | "heartbeat";
  /** Per instrument: [first missed seq, last missed seq or null when unknown]. */
  missed: Record<string, [number, number | null]>;
  epoch: string | null;
}

export class ResumeState {
  epoch: string | null = null;
  readonly last = new Map<string, number>();
  /** What the last snapshot held (the subscription when the client named no ids). */
  knownIds: string[] = [];
  ticks = 0;
  readonly resumes = { recovered: 0, refused: 0 };
  private askedSince: Record<string, number> = {};
  private readonly resetBaseline = new Set<string>();

  /**
   * The `since`/`epoch` to add to the subscribe for `ids` on a new connection (empty when there is nothing
   * to resume). An id with no seq seen asks from 0.
   */
  resumeFields(ids: string[]): { since?: Record<string, number>; epoch?: string } {
    const seen = ids.filter((i) => this.last.has(i));
    if (!seen.length || this.epoch === null) {
      this.askedSince = {};
      return {};
    }
    this.askedSince = Object.fromEntries(ids.map((i) => [i, this.last.get(i) ?? 0]));
    return { since: { ...this.askedSince }, epoch: this.epoch };
  }

  /** No resume pending (a plain subscribe was sent). */
  clearAsk(): void {
    this.askedSince = {};
  }

  /** The ack of a subscribe: a refused resume is a gap. */
  onAck(ack: SubscribedMessage): Gap | null {
    const asked = this.askedSince;
    this.askedSince = {};
    if (!Object.keys(asked).length || ack.recovered === undefined) return null;
    this.resumes[ack.recovered ? "recovered" : "refused"] += 1;
    if (ack.recovered) return null;
    const missed: Gap["missed"] = {};
    for (const [id, seq] of Object.entries(asked)) {
      missed[id] = [seq + 1, null];
      this.resetBaseline.add(id);
    }
    return { reason: "not_recovered", missed, epoch: this.epoch };
  }

  onSnapshot(snap: SnapshotMessage): void {
    const epoch = snap.epoch ?? null;
    if (epoch !== this.epoch) { // a new history: seqs start again
      this.epoch = epoch;
      this.last.clear();
      this.resetBaseline.clear();
    }
    this.knownIds = snap.quotes.map((q) => q.id);
    for (const [id, seq] of Object.entries(snap.seqs ?? {})) { // the prices include every tick up to these
      if (seq >= (this.last.get(id) ?? 0)) {
        this.last.set(id, seq);
        this.resetBaseline.delete(id);
      }
    }
  }

  /** A tick: null when it is a duplicate; else the gap it reveals (or null) and the tick is to be handed on. */
  onTick(tick: TickMessage): { duplicate: boolean; gap: Gap | null } {
    const last = this.last.get(tick.id);
    if (last !== undefined && tick.seq <= last) return { duplicate: true, gap: null };
    this.last.set(tick.id, tick.seq);
    this.ticks += 1;
    if (this.resetBaseline.delete(tick.id)) return { duplicate: false, gap: null }; // reported with the refusal
    if (last === undefined || tick.seq === last + 1) return { duplicate: false, gap: null };
    return {
      duplicate: false,
      gap: { reason: "seq_jump", missed: { [tick.id]: [last + 1, tick.seq - 1] }, epoch: this.epoch },
    };
  }

  /** A heartbeat naming seqs above the last seen: those ticks are missing (resume for them). */
  onHeartbeat(hb: HeartbeatMessage): Gap | null {
    const missed: Gap["missed"] = {};
    for (const [id, seq] of Object.entries(hb.seqs ?? {})) {
      const last = this.last.get(id);
      if (last !== undefined && seq > last) missed[id] = [last + 1, seq];
    }
    return Object.keys(missed).length ? { reason: "heartbeat", missed, epoch: this.epoch } : null;
  }
}
