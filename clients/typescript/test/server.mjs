// Starts the real market server (`python -m server serve`) on free ports for the package's tests.
//
// The Python comes from MARKET_PYTHON (tests/client_ts/test_typescript_client.py passes its own), else the
// project's .venv. Every server gets its own data dir; `stop()` sends SIGTERM and waits. Its demo instruments
// move at any hour (MARKET_DEMO_HOURS=always unless set): no test may depend on the day it runs (SPEC 16).

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
export const PYTHON = process.env.MARKET_PYTHON ?? join(ROOT, ".venv", "bin", "python");
export const REDIS_URL = process.env.MARKET_TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";

/** Two ports free a moment ago (held together while picked). */
export async function freePorts(n) {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => resolve(s));
  })));
  const ports = servers.map((s) => /** @type {import("node:net").AddressInfo} */ (s.address()).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export function havePython() {
  return existsSync(PYTHON);
}

/** `market-server <args> --data-dir DIR` (the CLI), returning stdout. */
export function cli(dataDir, ...args) {
  const out = spawnSync(PYTHON, ["-m", "server", ...args, "--data-dir", dataDir], { cwd: ROOT, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`market-server ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

export class Server {
  /** @param {{args?: string[], dataDir?: string, port?: number, wsPort?: number}} [options] */
  constructor(options = {}) {
    this.args = options.args ?? [];
    this.dataDir = options.dataDir ?? join(mkdtempSync(join(tmpdir(), "mc-ts-")), "data");
    this.port = options.port ?? 0;
    this.wsPort = options.wsPort ?? 0;
    this.proc = null;
    this.log = "";
  }

  get base() { return `http://127.0.0.1:${this.port}`; }
  get wsUrl() { return `ws://127.0.0.1:${this.wsPort}/ws/quotes`; }
  get key() { return readFileSync(join(this.dataDir, "demo-key.txt"), "utf8").trim(); }

  /** Start (again, on the same ports and data dir after a stop) and wait for /readyz. */
  async start() {
    if (!this.port) [this.port, this.wsPort] = await freePorts(2);
    const cmd = ["-m", "server", "serve", "--data-dir", this.dataDir, "--port", String(this.port),
      "--ws-port", String(this.wsPort), "--public-rate", "100000", ...this.args];
    const proc = spawn(PYTHON, cmd, { cwd: ROOT, env: { MARKET_DEMO_HOURS: "always", ...process.env, PYTHONUNBUFFERED: "1" },
      stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    proc.stdout.on("data", (d) => { this.log += d; });
    proc.stderr.on("data", (d) => { this.log += d; });
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}:\n${this.log}`);
      try {
        const r = await fetch(`${this.base}/readyz`);
        if (r.status === 200) return this;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100)); // polling a port that is not open yet: nothing to await
    }
    this.kill();
    throw new Error(`server not ready in 30 s:\n${this.log}`);
  }

  /** SIGTERM and wait for the exit code. */
  async stop() {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return proc?.exitCode ?? 0;
    const exited = new Promise((r) => proc.once("exit", (code) => r(code)));
    proc.kill("SIGTERM");
    return exited;
  }

  kill() {
    if (this.proc && this.proc.exitCode === null) this.proc.kill("SIGKILL");
  }

  /** Freeze the process (no output, connections stay open): a hung server or a dead link. */
  pause() { this.proc?.kill("SIGSTOP"); }
  resume() { this.proc?.kill("SIGCONT"); }

  createKey(plan, ...extra) {
    return JSON.parse(cli(this.dataDir, "keys", "create", "--plan", plan, "--json", ...extra)).key;
  }
}

/**
 * Resolve with the first event of `type` for which `pred` holds (reject after `ms`).
 * @param {any} emitter
 * @param {string} type
 * @param {(e: any) => boolean} [pred]
 * @param {number} [ms]
 * @returns {Promise<any>}
 */
export function next(emitter, type, pred = () => true, ms = 10_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { off(); reject(new Error(`no ${type} within ${ms} ms`)); }, ms);
    /** @type {() => void} */
    const off = emitter.on(type, (/** @type {any} */ e) => {
      if (!pred(e)) return;
      clearTimeout(timer);
      off();
      resolve(e);
    });
  });
}
