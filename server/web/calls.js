// The dashboard's HTTP calls go through @market-server/client (market-client.js: the package's browser
// build, vendored by `npm run vendor` in clients/typescript). `settle` turns its answers and typed errors
// into the Result the views branch on: it never throws for an HTTP or network failure (status 0: the
// network failed). 429s are not retried here: the page says so and waits Retry-After itself.

import { MarketClient, ProblemError, RateLimitedError } from "./market-client.js";

/**
 * @typedef {import("./market-client.js").RateLimit | null} Rate
 * @typedef {{ok: boolean, status: number, data: any, problem: any, rate: Rate, retryAfter: number,
 *            maxAge: number | null, requestId: string | null}} Result
 */

/** The console hands a new key to the dashboard in this tab's sessionStorage under this name (read once, removed). */
export const HANDOVER_STORAGE = "market.handoverKey";

/** A client for this page's origin; `key` is sent on /api/v1 calls only. */
export function makeClient(key = null) {
  return new MarketClient({ baseUrl: location.origin, key, retries429: 0, timeoutMs: 15000 });
}

/** GET `path` (an OpenAPI path such as `/api/v1/kline/{id}`) with {params, query, cache}; never throws. */
export async function settle(client, path, options = {}) {
  try {
    const r = await client.request("get", path, options);
    return { ok: true, status: r.status, data: r.data, problem: null, rate: r.rateLimit, retryAfter: 0,
      maxAge: r.maxAge, requestId: r.requestId };
  } catch (err) {
    if (err instanceof ProblemError) {
      return { ok: false, status: err.status, data: null, problem: err.problem, rate: err.rateLimit,
        retryAfter: err instanceof RateLimitedError ? Math.max(1, err.retryAfter) : 1, maxAge: null,
        requestId: err.requestId };
    }
    if (err && err.name === "AbortError") throw err;
    return { ok: false, status: 0, data: null, problem: { detail: String(err?.message ?? err) }, rate: null,
      retryAfter: 0, maxAge: null, requestId: null };
  }
}
