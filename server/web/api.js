// HTTP calls to the hub. Never throws for an HTTP or network failure: every call
// resolves to a Result, so callers branch on data (status 0 means the network failed).

export const KEY_HEADER = "X-SERVICE-Key";

/**
 * @typedef {{limit: number, remaining: number, reset: number, policy: string} | null} Rate
 * @typedef {{ok: boolean, status: number, data: any, problem: any, rate: Rate,
 *            retryAfter: number, maxAge: number | null, requestId: string | null}} Result
 */

/** Parse the rate-limit headers; `policy` is the bucket's name from RateLimit-Policy (the key's plan). */
export function parseRate(headers) {
  const limit = headers.get("x-ratelimit-limit");
  if (limit === null) return null;
  const policy = /^"([^"]+)"/.exec(headers.get("ratelimit-policy") ?? "");
  return {
    limit: Number(limit),
    remaining: Number(headers.get("x-ratelimit-remaining") ?? 0),
    reset: Number(headers.get("x-ratelimit-reset") ?? 0),
    policy: policy ? policy[1] : "",
  };
}

/** `max-age` of a Cache-Control value, or null. */
export function parseMaxAge(value) {
  const m = /max-age=(\d+)/.exec(value ?? "");
  return m ? Number(m[1]) : null;
}

/** GET a JSON resource; `key` adds the X-SERVICE-Key header; `revalidate` asks the cache to check the ETag. */
export async function getJson(path, { key = null, revalidate = false, signal = undefined } = {}) {
  const headers = key ? { [KEY_HEADER]: key } : {};
  let resp;
  try {
    resp = await fetch(path, { headers, signal, cache: revalidate ? "no-cache" : "default" });
  } catch (err) {
    if (err && err.name === "AbortError") throw err;
    return failure(0, { detail: String(err && err.message ? err.message : err) });
  }
  let body = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  const result = {
    ok: resp.ok,
    status: resp.status,
    data: resp.ok ? body : null,
    problem: resp.ok ? null : body ?? { detail: resp.statusText },
    rate: parseRate(resp.headers),
    retryAfter: Math.max(1, Number(resp.headers.get("retry-after") ?? body?.retryAfter ?? 1)),
    maxAge: parseMaxAge(resp.headers.get("cache-control")),
    requestId: resp.headers.get("x-request-id"),
  };
  return result;
}

function failure(status, problem) {
  return { ok: false, status, data: null, problem, rate: null, retryAfter: 0, maxAge: null, requestId: null };
}
