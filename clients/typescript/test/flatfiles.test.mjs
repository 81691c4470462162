// Flat files (SPEC 18) against a real server whose data dir holds an imported trading day: the listing, a
// download checked against its sha256, a download broken mid-body and resumed with Range, bytes held from an
// earlier run, a corrupt part caught by the checksum, and the plan a free key lacks.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { BadRequestError, ChecksumError, ForbiddenError, MarketClient } from "../dist/index.js";
import { Server, cli, havePython } from "./server.mjs";

const NOW = "2026-11-18T14:20:00+08:00"; // a Wednesday in Shanghai: Tuesday's files exist
const TUESDAY = Date.parse("2026-11-17T10:00:00+08:00");

describe("flat files", { skip: !havePython() && "no Python server (.venv) to test against" }, () => {
  /** @type {Server} */
  let server;
  /** @type {MarketClient} */
  let api;
  let entry;

  before(async () => {
    const tmp = mkdtempSync(join(tmpdir(), "mc-ts-flat-"));
    const dataDir = join(tmp, "data");
    mkdirSync(dataDir);
    const ticks = Array.from({ length: 200 }, (_, k) => JSON.stringify(
      { id: k % 2 ? "brent" : "methanol", ts: (TUESDAY + k * 60_000) / 1000, seq: k + 1, price: 2400 + k, volume: 1 }));
    writeFileSync(join(tmp, "ticks.jsonl"), ticks.join("\n") + "\n"); // ts in epoch seconds, as the feed's
    cli(dataDir, "ticks", "import", join(tmp, "ticks.jsonl"), "--clock-start", NOW);
    writeFileSync(join(tmp, "feed.jsonl"), "");
    server = await new Server({ dataDir, args: ["--feed", `jsonl:${join(tmp, "feed.jsonl")}`, "--clock-start", NOW,
      "--engine", "memory"] }).start();
    api = new MarketClient({ baseUrl: server.base, key: server.createKey("professional") });
    const listing = await api.flatfiles({ dataset: "ticks", from: "2026-11-16", to: "2026-11-18", format: "parquet" });
    assert.deepEqual(listing.files.map((f) => [f.date, f.rows]), [["2026-11-17", 200]]);
    entry = listing.files[0];
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.log);
  });

  test("a download is the listed bytes", async () => {
    const body = await api.downloadFlatfile(entry);
    assert.equal(body.length, entry.bytes);
    assert.equal(createHash("sha256").update(body).digest("hex"), entry.sha256);
  });

  test("a download broken mid-body resumes from the bytes received", async () => {
    const asked = [];
    let first = true;
    const breaking = async (url, init) => {
      asked.push(new Headers(init?.headers).get("range"));
      const resp = await fetch(url, init);
      if (!first) return resp;
      first = false;
      const reader = resp.body.getReader();
      let sent = 0;
      const body = new ReadableStream({ // the first 100 bytes, then the connection "drops"
        async pull(ctl) {
          const { value } = await reader.read();
          if (sent >= 100 || !value) return ctl.error(new TypeError("terminated"));
          const piece = value.subarray(0, 100 - sent);
          sent += piece.length;
          ctl.enqueue(piece);
        },
      });
      return new Response(body, { status: resp.status, headers: resp.headers });
    };
    const flaky = new MarketClient({ baseUrl: server.base, key: api.key, fetch: breaking });
    const progress = [];
    const body = await flaky.downloadFlatfile(entry, { onProgress: (held) => progress.push(held) });
    assert.equal(createHash("sha256").update(body).digest("hex"), entry.sha256);
    assert.deepEqual(asked, [null, "bytes=100-"]);
    assert.equal(progress.at(-1), entry.bytes);
  });

  test("bytes held from an earlier run are kept; a corrupt part fails the checksum", async () => {
    const whole = await api.downloadFlatfile(entry);
    const resumed = await api.downloadFlatfile(entry, { held: whole.subarray(0, 64) });
    assert.deepEqual(resumed, whole);
    await assert.rejects(api.downloadFlatfile(entry, { held: new Uint8Array(64) }), ChecksumError);
  });

  test("a venue's own files hold its instruments only", async () => {
    const listing = await api.flatfiles({ dataset: "ticks", from: "2026-11-16", to: "2026-11-18", venue: "zce" });
    assert.deepEqual(listing.files.map((f) => [f.venue, f.date, f.rows, f.url]),
      [["zce", "2026-11-17", 100, "/api/v1/flatfiles/zce/ticks/2026-11-17.csv.gz"]]); // methanol's, not brent's
    const body = await api.downloadFlatfile(listing.files[0]);
    assert.equal(createHash("sha256").update(body).digest("hex"), listing.files[0].sha256);
    await assert.rejects(api.flatfiles({ dataset: "ticks", venue: /** @type {any} */ ("nyse") }),
      (err) => err instanceof BadRequestError && err.problem.errors?.[0]?.field === "venue");
  });

  test("a free key is told which plan has flat files", async () => {
    const free = new MarketClient({ baseUrl: server.base, key: server.createKey("free") });
    await assert.rejects(free.flatfiles({ dataset: "ticks" }),
      (err) => err instanceof ForbiddenError && err.problem.requiredPlan === "professional");
    await assert.rejects(free.downloadFlatfile(entry), ForbiddenError);
  });
});
