// The parts without I/O: resume bookkeeping, backoff, header parsing.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Backoff, RateLimitedError, ResumeState, parseRateLimit, parseRetryAfter, problemErrorFor } from "./core-imports.mjs";

const snap = (epoch, seqs) => ({ type: "snapshot", updated: null, quotes: Object.keys(seqs).map((id) => ({ id })),
  epoch, seqs });
/** @returns {import("../dist/index.js").TickMessage} */
const tick = (id, seq) => ({ type: "tick", id, price: 1, change: 0, ts: "", seq });

test("resume: duplicates dropped, jumps reported with their range, a refused resume once", () => {
  const r = new ResumeState();
  r.onSnapshot(/** @type {any} */ (snap("E1", { brent: 10, wti: 4 })));
  assert.deepEqual(r.onTick(tick("brent", 11)), { duplicate: false, gap: null });
  assert.deepEqual(r.onTick(tick("brent", 11)), { duplicate: true, gap: null });
  assert.deepEqual(r.onTick(tick("brent", 14)).gap?.missed, { brent: [12, 13] });
  assert.deepEqual(r.resumeFields(["brent", "wti", "sc"]), { since: { brent: 14, wti: 4, sc: 0 }, epoch: "E1" });
  const gap = r.onAck({ type: "subscribed", ids: ["brent", "wti", "sc"], recovered: false });
  assert.deepEqual(gap?.missed, { brent: [15, null], wti: [5, null], sc: [1, null] });
  assert.equal(r.onTick(tick("brent", 20)).gap, null, "reported with the refusal");
  assert.deepEqual(r.resumes, { recovered: 0, refused: 1 });
});

test("resume: a new epoch forgets every seq; a heartbeat ahead of the last tick is a gap", () => {
  const r = new ResumeState();
  r.onSnapshot(/** @type {any} */ (snap("E1", { brent: 10 })));
  assert.deepEqual(r.onHeartbeat({ type: "heartbeat", ts: "", seqs: { brent: 10 } }), null);
  assert.deepEqual(r.onHeartbeat({ type: "heartbeat", ts: "", seqs: { brent: 12 } })?.missed, { brent: [11, 12] });
  r.onSnapshot(/** @type {any} */ (snap("E2", { brent: 1 })));
  assert.equal(r.last.get("brent"), 1);
  assert.deepEqual(r.resumeFields(["brent"]), { since: { brent: 1 }, epoch: "E2" });
  assert.equal(r.onAck({ type: "subscribed", ids: ["brent"], recovered: true }), null);
});

test("backoff: equal jitter between half and all of the capped ceiling, reset to the bottom", () => {
  const low = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0 });
  const high = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0.999999 });
  assert.deepEqual([1, 2, 3, 4, 5].map(() => low.next()), [50, 100, 200, 400, 500]);
  assert.deepEqual([1, 2, 3, 4, 5].map(() => high.next()), [100, 200, 400, 800, 1000]);
  low.reset();
  assert.equal(low.next(), 50);
});

test("rate-limit and Retry-After headers", () => {
  const h = new Headers({ "x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "7",
    "ratelimit-policy": '"free";q=60;w=60', ratelimit: '"free";r=0;t=7' });
  assert.deepEqual(parseRateLimit(h), { limit: 60, remaining: 0, reset: 7, policy: "free",
    policyField: '"free";q=60;w=60', field: '"free";r=0;t=7' });
  assert.equal(parseRateLimit(new Headers()), null);
  assert.equal(parseRetryAfter("3"), 3);
  assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), undefined, 4_000), 6);
  assert.equal(parseRetryAfter(null, 2), 2);
  const e = problemErrorFor(429, { type: "t", title: "Too Many", status: 429, detail: "slow", code: "rate_limited",
    retryAfter: 5 });
  assert.ok(e instanceof RateLimitedError);
  assert.equal(e.retryAfter, 5);
  assert.equal(problemErrorFor(502, "<html>").code, "http_502");
});
