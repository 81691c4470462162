// Client-side CPU per tick: the package's QuoteStream against a raw WebSocket on the same frames
// (issue 23 item 5; the Node twin of bench/client_overhead.py, the Python client's row).
//
// A replay server (a child process: the `ws` package's server) sends the greeting snapshot and then N tick
// frames of 49 instruments in the hub's format (seq increasing per instrument, ts ISO 8601 +08:00), 12 per
// TCP write as the hub batches them. The client, in this process, is measured from the first tick to the
// N-th in CPU time (process.cpuUsage: it never waits on the sender, which is faster than any client):
//
//   raw        `ws` WebSocket, onmessage counting frames (receive only: the floor)
//   raw+json   the same plus JSON.parse and a Map lookup per frame (the least a hand-written client does)
//   stream     QuoteStream over the same `ws` class: typed events, seq bookkeeping, duplicate/gap checks,
//              the heartbeat watchdog
//
//   npm run build && node bench/tick-overhead.mjs                    # 50,000 ticks x 5 rounds per mode
//   node bench/tick-overhead.mjs --ticks 20000 --rounds 3 --json
//   taskset -c 1 node bench/tick-overhead.mjs                        # on a quiet machine, pinned
//
// Target: stream under 2x raw per tick.

import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

import WebSocket, { WebSocketServer } from "ws";

const IDS = Array.from({ length: 49 }, (_, i) => `inst${i}`);
const BATCH = 12;

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

// --- the replay server (child process) -------------------------------------------------------------

function serve(ticks) {
  const frames = [];
  const seqs = new Map(IDS.map((id) => [id, 0]));
  for (let i = 0; i < ticks; i++) {
    const id = IDS[i % IDS.length];
    const seq = seqs.get(id) + 1;
    seqs.set(id, seq);
    const price = (100 + (i % 97) / 10).toFixed(2);
    frames.push(`{"type":"tick","id":"${id}","price":${price},"change":0.12,` +
      `"ts":"2026-11-26T10:00:00.${String(i % 1000).padStart(3, "0")}+08:00","seq":${seq}}`);
  }
  const snapshot = JSON.stringify({ type: "snapshot", updated: "2026-11-26T10:00:00.000+08:00", epoch: "bench",
    quotes: IDS.map((id) => ({ id, price: 100 })), seqs: Object.fromEntries(IDS.map((id) => [id, 0])) });
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false }, () => {
    process.send?.({ port: /** @type {import("node:net").AddressInfo} */ (wss.address()).port });
  });
  wss.on("connection", (ws) => {
    ws.send(snapshot);
    const socket = /** @type {any} */ (ws)._socket;
    let i = 0;
    const pump = () => {
      for (let b = 0; b < 50 && i < frames.length; b++) {
        socket.cork();
        for (let k = 0; k < BATCH && i < frames.length; k++) ws.send(frames[i++]);
        socket.uncork();
      }
      if (i < frames.length) setImmediate(pump);
    };
    pump();
  });
}

// --- the clients -------------------------------------------------------------------------------------

function cpuMicros(since) {
  const u = process.cpuUsage(since);
  return u.user + u.system;
}

/** Resolves with CPU microseconds from the first tick to the n-th. */
function runRaw(url, n, parse) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const last = new Map();
    let count = 0;
    let start = null;
    ws.onmessage = (ev) => {
      if (parse) {
        const msg = JSON.parse(/** @type {string} */ (ev.data));
        if (msg.type !== "tick") return;
        last.set(msg.id, msg.seq);
      } else if (/** @type {string} */ (ev.data).startsWith('{"type":"snapshot"')) return;
      if (start === null) start = process.cpuUsage();
      if (++count === n) {
        const used = cpuMicros(start);
        ws.close();
        resolve(used);
      }
    };
  });
}

async function runStream(url, n) {
  const { QuoteStream } = await import("../dist/index.js");
  return new Promise((resolve) => {
    const stream = new QuoteStream({ url, WebSocket: /** @type {any} */ (WebSocket), heartbeatMs: 5000 });
    let count = 0;
    let start = null;
    stream.on("tick", () => {
      if (start === null) start = process.cpuUsage();
      if (++count === n) {
        const used = cpuMicros(start);
        stream.stop();
        resolve(used);
      }
    });
    stream.start();
  });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main() {
  const ticks = arg("ticks", 50_000);
  const rounds = arg("rounds", 5);
  const modes = { raw: (u) => runRaw(u, ticks, false), "raw+json": (u) => runRaw(u, ticks, true),
    stream: (u) => runStream(u, ticks) };
  /** @type {Record<string, number[]>} */
  const results = { raw: [], "raw+json": [], stream: [] };
  for (let r = 0; r < rounds; r++) {
    for (const [mode, run] of Object.entries(modes)) { // interleaved: a noisy spell hits every mode alike
      const child = fork(fileURLToPath(import.meta.url), ["--serve", String(ticks)], { stdio: "inherit" });
      const port = await new Promise((resolve) => child.once("message", (m) => resolve(/** @type {any} */ (m).port)));
      const used = await run(`ws://127.0.0.1:${port}/ws/quotes`);
      child.kill();
      results[mode].push(used / (ticks - 1));
    }
  }
  const us = Object.fromEntries(Object.entries(results).map(([m, xs]) => [m, median(xs)]));
  const out = { ticks, rounds, node: process.version, usPerTick: us,
    streamVsRaw: us.stream / us.raw, streamVsRawJson: us.stream / us["raw+json"], target: "< 2x raw" };
  if (process.argv.includes("--json")) {
    console.log(JSON.stringify(out));
    return;
  }
  for (const [m, v] of Object.entries(us)) console.log(`${m.padEnd(9)} ${v.toFixed(2)} us/tick`);
  console.log(`stream / raw      ${out.streamVsRaw.toFixed(2)}x (target < 2x)`);
  console.log(`stream / raw+json ${out.streamVsRawJson.toFixed(2)}x`);
}

if (process.argv.includes("--serve")) serve(arg("serve", 50_000));
else await main();
