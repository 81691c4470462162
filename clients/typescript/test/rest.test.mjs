// The REST client against a real server: typed answers, problem documents as typed errors,
// rate-limit headers, Retry-After on 429, range paging.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";

import {
  BadRequestError,
  MarketClient,
  NotFoundError,
  ProblemError,
  RateLimitedError,
  UnauthorizedError,
} from "../dist/index.js";
import { generate } from "../scripts/gen-types.mjs";
import { Server, havePython } from "./server.mjs";

describe("REST client", { skip: !havePython() && "no Python server (.venv) to test against" }, () => {
  /** @type {Server} */
  let server;
  /** @type {MarketClient} */
  let api;

  before(async () => {
    server = await new Server().start();
    api = new MarketClient({ baseUrl: server.base, key: server.key });
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.log);
  });

  test("src/openapi.ts is what openapi-typescript makes of the server's /openapi.json", async () => {
    const doc = await (await fetch(`${server.base}/openapi.json`)).json();
    const current = await readFile(new URL("../src/openapi.ts", import.meta.url), "utf8");
    assert.ok(current === await generate(doc),
      "src/openapi.ts is out of date: npm run gen:types -- http://HOST:PORT/openapi.json");
  });

  test("quotes, one quote, spreads, inventory: typed bodies and the key's rate limit", async () => {
    const all = await api.quotes();
    assert.ok(all.count >= 40);
    assert.equal(all.quotes.length, all.count);
    const oil = await api.quotes({ kind: "oil" });
    assert.ok(oil.quotes.every((q) => q.kind === "oil"));
    const two = await api.quotes({ ids: ["brent", "wti"] });
    assert.deepEqual(two.quotes.map((q) => q.id), ["brent", "wti"]);
    const brent = await api.quote("brent");
    assert.equal(brent.extended, true);
    assert.ok(Number.isInteger(brent.seq));
    assert.equal((await api.spreads()).spreads.length, 5);
    assert.ok((await api.inventory()).items.length > 0);
    assert.equal(api.rateLimit?.policy, "professional");
    assert.equal(api.rateLimit?.limit, 600);
    assert.ok(api.rateLimit.remaining < 600);
  });

  test("public endpoints need no key", async () => {
    const anon = new MarketClient({ baseUrl: server.base });
    const market = await anon.market();
    assert.equal(market.categories.length, 8);
    const one = await anon.marketCategory(market.categories[0].id);
    assert.equal(one.id, market.categories[0].id);
    const news = await anon.news({ limit: 2 });
    assert.equal(news.items.length, 2);
    assert.equal((await anon.research({ limit: 1 })).limit, 1);
    assert.equal((await anon.health()).status, "ok");
    assert.ok((await anon.config()).wsPort > 0);
  });

  test("status and incidents need no key; quality is keyed (SPEC 20)", async () => {
    const anon = new MarketClient({ baseUrl: server.base });
    const status = await anon.status();
    assert.ok(["none", "minor", "major", "critical"].includes(status.status.indicator));
    assert.ok(status.components.some((c) => c.id === "rest" && c.status === "operational"));
    assert.ok(Array.isArray(status.incidents) && Array.isArray(status.scheduledMaintenances));
    const listed = await anon.incidents();
    assert.ok(Array.isArray(listed.incidents) && "asOf" in listed);
    await assert.rejects(anon.quality(), (e) => e instanceof UnauthorizedError && e.status === 401);
    const quality = await api.quality({ venue: "ice-eu" });
    assert.deepEqual(quality.days, []); // the demo feed keeps no durable history
  });

  test("problem documents become typed errors", async () => {
    await assert.rejects(api.quote("nope"), (e) => e instanceof NotFoundError && e.status === 404 &&
      e.code === "not_found" && /nope/.test(e.problem.detail) && e.requestId !== null);
    await assert.rejects(api.kline("brent", { days: 0 }), (e) => e instanceof BadRequestError &&
      e.errors.some((f) => f.field === "days"));
    await assert.rejects(api.quotes({ kind: /** @type {any} */ ("gold") }), (e) => e instanceof ProblemError &&
      e.status === 400);
    const stranger = new MarketClient({ baseUrl: server.base, key: "mk_not_a_key" });
    await assert.rejects(stranger.quotes(), (e) => e instanceof UnauthorizedError && e.code === "unauthorized");
    await assert.rejects(new MarketClient({ baseUrl: server.base }).verifyAnchor("xyz"),
      (e) => e instanceof BadRequestError);
  });

  test("a 429 waits its Retry-After and retries; without retries it throws RateLimitedError", async () => {
    const key = server.createKey("free"); // 60 a minute: a burst of 60, then one a second
    const strict = new MarketClient({ baseUrl: server.base, key, retries429: 0 });
    let refused = null;
    for (let i = 0; i < 80 && !refused; i++) {
      try {
        await strict.quote("brent");
      } catch (e) {
        refused = e;
      }
    }
    assert.ok(refused instanceof RateLimitedError, String(refused));
    assert.equal(refused.status, 429);
    assert.ok(refused.retryAfter >= 1);
    assert.equal(refused.rateLimit?.remaining, 0);
    /** @type {number[]} */
    const statuses = [];
    const patient = new MarketClient({ baseUrl: server.base, key, retries429: 3,
      onResponse: (info) => statuses.push(info.status) });
    const started = Date.now();
    const quote = await patient.quote("brent");
    assert.equal(quote.id, "brent");
    assert.equal(statuses.at(-1), 200);
    if (statuses[0] === 429) assert.ok(Date.now() - started >= 900, "retried before Retry-After");
  });

  test("kline: the plain call, and ranges paged as an async iterator", async () => {
    const latest = await api.kline("brent", { interval: "1m", limit: 5 });
    assert.equal(latest.series.length, 5);
    const probe = await api.kline("brent", { interval: "1m", from: latest.series[0].t, limit: 2 });
    assert.equal(probe.series[0].t, latest.series[0].t);
    assert.ok(probe.next, "a page of 2 out of 5 names the next");
    const seen = [];
    for await (const c of api.candles("brent", { interval: "1m", from: latest.series[0].t, limit: 2 })) seen.push(c);
    // the live bucket may have rolled over meanwhile: the first 5 are those of the plain call
    assert.deepEqual(seen.slice(0, 4).map((c) => c.t), latest.series.slice(0, 4).map((c) => c.t));
    assert.deepEqual(seen.slice(0, 4), latest.series.slice(0, 4));
    const pages = [];
    for await (const page of api.olderCandles("brent", { interval: "1d", limit: 30 })) pages.push(page);
    const days = pages.reverse().flat().map((c) => c.t);
    // every daily candle held: at least 90 of brent's trading days (the book keeps a third more: SPEC 16's axis)
    const ninety = (await api.kline("brent", { days: 90 })).series.map((c) => c.t);
    assert.ok(days.length >= 90, "90 trading days held");
    assert.deepEqual(days.slice(-90), ninety);
    assert.deepEqual(days, [...days].sort());
    assert.equal(new Set(days).size, days.length);
  });

  test("UDF datafeed: config, symbol, history equal to /kline, time; errors keep problem and UDF fields", async () => {
    const config = await api.udf.config();
    assert.ok(config.supported_resolutions.includes("1D"));
    const sym = await api.udf.symbols("brent");
    assert.equal(sym.ticker, "brent");
    const kline = await api.kline("brent", { interval: "1m", limit: 3 });
    const from = Date.parse(kline.series[0].t) / 1000;
    const to = Date.parse(kline.series[1].t) / 1000;
    const hist = await api.udf.history({ symbol: "brent", resolution: "1", from, to });
    assert.equal(hist.s, "ok");
    if (hist.s === "ok") {
      assert.deepEqual(hist.t, [from, to]);
      assert.deepEqual(hist.c, kline.series.slice(0, 2).map((c) => c.c));
    }
    const now = await api.udf.time();
    assert.ok(Math.abs(now - Date.now() / 1000) < 60);
    await assert.rejects(api.udf.history({ symbol: "nope", resolution: "1", from, to }),
      (e) => e instanceof BadRequestError && e.problem.s === "error" && typeof e.problem.errmsg === "string");
  });
});
