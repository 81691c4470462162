// The rate-limit fields every limited response carries (SPEC 5), parsed once per response.

/** What the server said about the caller's bucket on the last response. */
export interface RateLimit {
  /** Requests per window (`X-RateLimit-Limit`). */
  limit: number;
  /** Requests left now (`X-RateLimit-Remaining`). */
  remaining: number;
  /** Seconds until the bucket is full again (`X-RateLimit-Reset`). */
  reset: number;
  /** The bucket's name from `RateLimit-Policy` (`"professional";q=600;w=60` gives `professional`): a key's plan. */
  policy: string;
  /** The raw IETF `RateLimit-Policy` field. */
  policyField: string | null;
  /** The raw IETF `RateLimit` field. */
  field: string | null;
}

interface HeaderSource {
  get(name: string): string | null;
}

/** The rate-limit headers of a response, or null when the endpoint is not limited. */
export function parseRateLimit(headers: HeaderSource): RateLimit | null {
  const limit = headers.get("x-ratelimit-limit");
  if (limit === null) return null;
  const policyField = headers.get("ratelimit-policy");
  const name = /^"([^"]+)"/.exec(policyField ?? "");
  return {
    limit: Number(limit),
    remaining: Number(headers.get("x-ratelimit-remaining") ?? 0),
    reset: Number(headers.get("x-ratelimit-reset") ?? 0),
    policy: name?.[1] ?? "",
    policyField,
    field: headers.get("ratelimit"),
  };
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), else the problem's `retryAfter`, else null. */
export function parseRetryAfter(value: string | null, problemRetryAfter?: unknown, now = Date.now()): number | null {
  if (value !== null && value.trim() !== "") {
    const seconds = Number(value);
    if (Number.isFinite(seconds)) return Math.max(0, seconds);
    const at = Date.parse(value);
    if (!Number.isNaN(at)) return Math.max(0, (at - now) / 1000);
  }
  return typeof problemRetryAfter === "number" && Number.isFinite(problemRetryAfter) ? problemRetryAfter : null;
}
