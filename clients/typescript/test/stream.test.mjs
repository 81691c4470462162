// The stream client against a real server: resume without gap or duplicate, a gap when the history is
// gone, resume across a hub restart on the Redis engine, a silent (paused) server detected as dead.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createConnection } from "node:net";
import { after, before, describe, test } from "node:test";

import { QuoteStream } from "../dist/index.js";
import { PYTHON, REDIS_URL, ROOT, Server, havePython, next } from "./server.mjs";

const FAST = ["--tick-interval-ms", "50"];
const SERVER_HELP = havePython()
  ? spawnSync(PYTHON, ["-m", "server", "serve", "--help"], { cwd: ROOT, encoding: "utf8" }).stdout ?? "" : "";
const HAS_HEARTBEATS = SERVER_HELP.includes("--heartbeat-s");

/** Ticks per id, checked on arrival: strictly consecutive seqs within an epoch, unless a gap was reported. */
function recorder(stream) {
  const rec = { ticks: 0, gaps: /** @type {any[]} */ ([]), bad: /** @type {string[]} */ ([]), last: new Map() };
  stream.on("snapshot", (s) => {
    for (const [id, seq] of Object.entries(s.seqs ?? {})) rec.last.set(id, seq);
  });
  stream.on("gap", (g) => {
    rec.gaps.push(g);
    for (const [id, [, to]] of Object.entries(g.missed)) if (to !== null) rec.last.set(id, to);
  });
  stream.on("tick", (t) => {
    const last = rec.last.get(t.id);
    if (last !== undefined && t.seq !== last + 1) rec.bad.push(`${t.id}: ${last} -> ${t.seq}`);
    rec.last.set(t.id, t.seq);
    rec.ticks += 1;
  });
  return rec;
}

function ticksAfter(stream, n) {
  let seen = 0;
  return next(stream, "tick", () => ++seen >= n, 15_000);
}

function redisReachable() {
  return new Promise((resolve) => {
    const url = new URL(REDIS_URL);
    const sock = createConnection({ host: url.hostname, port: Number(url.port || 6379) });
    sock.once("connect", () => { sock.destroy(); resolve(true); });
    sock.once("error", () => resolve(false));
  });
}

describe("stream client", { skip: !havePython() && "no Python server (.venv) to test against" }, () => {
  /** @type {Server} */
  let server;
  before(async () => {
    server = await new Server({ args: [...FAST, ...(HAS_HEARTBEATS ? ["--heartbeat-s", "1"] : [])] }).start();
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.log);
  });

  test("snapshot, then ticks; a cut connection resumes with exactly the missed ticks", async () => {
    const stream = new QuoteStream({ url: server.wsUrl, key: server.key, ids: ["brent", "wti", "usdcny"] });
    const rec = recorder(stream);
    const snap = next(stream, "snapshot");
    stream.start();
    assert.deepEqual((await snap).quotes.map((q) => q.id), ["brent", "wti", "usdcny"]);
    await ticksAfter(stream, 5);
    const acked = next(stream, "subscribed", (a) => a.recovered !== undefined);
    stream.dropConnection();
    assert.equal((await acked).recovered, true);
    await ticksAfter(stream, 5);
    stream.stop();
    assert.equal(stream.reconnects, 1);
    assert.deepEqual(rec.gaps, []);
    assert.deepEqual(rec.bad, []);
    assert.equal(stream.state, "closed");
  });

  test("a refused handshake (bad key) is retried with backoff and never opens", async () => {
    const stream = new QuoteStream({ url: server.wsUrl, key: "mk_not_a_key", backoff: { baseMs: 20, capMs: 40 } });
    const states = [];
    stream.on("state", (s) => states.push(s));
    stream.start();
    await next(stream, "state", (s) => s.state === "waiting" && s.failuresBeforeOpen >= 2);
    stream.stop();
    assert.ok(states.every((s) => s.state !== "open"));
  });

  test("a paused server is dead after two heartbeat intervals; the stream comes back and resumes", async () => {
    const heartbeatMs = 600;
    const stream = new QuoteStream({ url: server.wsUrl, key: server.key, heartbeatMs, connectTimeoutMs: 800,
      backoff: { baseMs: 100, capMs: 200 } });
    const rec = recorder(stream);
    stream.start();
    await ticksAfter(stream, 3);
    const dead = next(stream, "dead");
    const pausedAt = Date.now();
    server.pause();
    let silentMs;
    try {
      ({ silentMs } = await dead);
    } finally {
      server.resume();
    }
    const detectedIn = Date.now() - pausedAt;
    assert.ok(silentMs >= 2 * heartbeatMs, `dead after ${silentMs} ms of silence`);
    assert.ok(detectedIn <= 2 * heartbeatMs + 400, `detected ${detectedIn} ms after the pause`);
    const acked = await next(stream, "subscribed", (a) => a.recovered !== undefined, 15_000);
    assert.equal(acked.recovered, true);
    await ticksAfter(stream, 3);
    stream.stop();
    assert.deepEqual(rec.gaps, []);
    assert.deepEqual(rec.bad, []);
  });

  test("heartbeats carry the last seq of each subscribed id", { skip: !HAS_HEARTBEATS && "server has no --heartbeat-s" },
    async () => {
      const stream = new QuoteStream({ url: server.wsUrl, key: server.key, ids: ["brent", "wti"], heartbeatMs: 1000 });
      const rec = recorder(stream);
      stream.start();
      const hb = await next(stream, "heartbeat", () => true, 5000);
      stream.stop();
      assert.deepEqual(Object.keys(hb.seqs).sort(), ["brent", "wti"]);
      for (const [id, seq] of Object.entries(hb.seqs)) assert.ok(seq <= (rec.last.get(id) ?? 0), id);
    });

  test("candle frames for the subscribed intervals; a final frame equals /kline", { skip: !HAS_HEARTBEATS &&
    "server has no live candles (SPEC 14)" }, async () => {
    const stream = new QuoteStream({ url: server.wsUrl, key: server.key, ids: ["brent"], candles: ["1m"] });
    stream.start();
    const candle = await next(stream, "candle", (c) => c.id === "brent" && c.interval === "1m", 5000);
    stream.stop();
    assert.equal(typeof candle.final, "boolean");
    assert.ok(candle.h >= candle.l && candle.seq > 0);
  });

  test("on the Redis engine a hub restart keeps the epoch: the resume recovers every tick", async (t) => {
    if (!(await redisReachable())) {
      assert.notEqual(process.env.MARKET_REQUIRE_SERVICES, "1", `no Redis at ${REDIS_URL}`);
      return t.skip(`no Redis at ${REDIS_URL}`);
    }
    // the pytest wrapper hands out a prefix that it deletes afterwards (tests/redis_service.py)
    const prefix = process.env.MARKET_TEST_REDIS_PREFIX ?? `test-ts-${process.pid}-${Date.now()}:`;
    const own = await new Server({ args: [...FAST, "--engine", "redis", "--redis-url", REDIS_URL,
      "--redis-prefix", prefix] }).start();
    const stream = new QuoteStream({ url: own.wsUrl, key: own.key, ids: ["brent", "wti", "methanol"],
      backoff: { baseMs: 100, capMs: 300 } });
    const rec = recorder(stream);
    stream.start();
    const first = await next(stream, "snapshot");
    await ticksAfter(stream, 5);
    const acked = next(stream, "subscribed", (a) => a.recovered !== undefined, 30_000);
    assert.equal(await own.stop(), 0);
    await own.start();
    assert.equal((await acked).recovered, true);
    await ticksAfter(stream, 5);
    stream.stop();
    assert.equal(stream.epoch, first.epoch);
    assert.deepEqual(rec.gaps, []);
    assert.deepEqual(rec.bad, []);
    assert.equal(await own.stop(), 0);
  });

  test("a restarted memory-engine server has a new epoch: the resume is refused and reported as a gap", async () => {
    // the last test of the file: it restarts the shared server
    const stream = new QuoteStream({ url: server.wsUrl, key: server.key, ids: ["brent", "wti"],
      backoff: { baseMs: 100, capMs: 300 } });
    stream.start();
    const first = await next(stream, "snapshot");
    await ticksAfter(stream, 3);
    const gap = next(stream, "gap", () => true, 30_000);
    const snap = next(stream, "snapshot", (s) => s.epoch !== first.epoch, 30_000);
    assert.equal(await server.stop(), 0);
    await server.start();
    const g = await gap;
    assert.equal(g.reason, "not_recovered");
    assert.deepEqual(Object.keys(g.missed).sort(), ["brent", "wti"]);
    assert.notEqual((await snap).epoch, first.epoch);
    stream.stop();
  });
});
