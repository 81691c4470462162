// Errors as data: every HTTP failure is a ProblemError carrying the server's RFC 9457 problem
// document (SPEC 4), a subclass per status family so callers can `instanceof` what they handle.

import type { RateLimit } from "./ratelimit.js";

/** An RFC 9457 problem document as the server sends it; `code` is a stable snake_case identifier. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  /** Validation errors: which field, what is wrong. */
  errors?: { field: string; message: string }[];
  /** On a 429: seconds to wait. */
  retryAfter?: number;
  [extra: string]: unknown;
}

/** Base class of everything this package throws. */
export class MarketError extends Error {
  override name = "MarketError";
}

/** The request never got an HTTP answer (network down, DNS, CORS, timeout, abort). */
export class TransportError extends MarketError {
  override name = "TransportError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A downloaded flat file's bytes do not have the sha256 its listing names (SPEC 18). */
export class ChecksumError extends MarketError {
  override name = "ChecksumError";
}

/** The server answered with an error status and (usually) a problem document. */
export class ProblemError extends MarketError {
  override name = "ProblemError";
  readonly status: number;
  readonly code: string;
  readonly problem: Problem;
  readonly requestId: string | null;
  readonly rateLimit: RateLimit | null;

  constructor(problem: Problem, meta: { requestId?: string | null; rateLimit?: RateLimit | null } = {}) {
    super(`${problem.status} ${problem.code}: ${problem.detail || problem.title}`);
    this.status = problem.status;
    this.code = problem.code;
    this.problem = problem;
    this.requestId = meta.requestId ?? null;
    this.rateLimit = meta.rateLimit ?? null;
  }

  /** Validation errors of a 400, by field. */
  get errors(): { field: string; message: string }[] {
    return this.problem.errors ?? [];
  }
}

export class BadRequestError extends ProblemError { override name = "BadRequestError"; }
export class UnauthorizedError extends ProblemError { override name = "UnauthorizedError"; }
export class ForbiddenError extends ProblemError { override name = "ForbiddenError"; }
export class NotFoundError extends ProblemError { override name = "NotFoundError"; }
export class ConflictError extends ProblemError { override name = "ConflictError"; }
export class PayloadTooLargeError extends ProblemError { override name = "PayloadTooLargeError"; }
export class ServerError extends ProblemError { override name = "ServerError"; }

/** A 429 that was still refused after the client's retries; `retryAfter` is the server's hint in seconds. */
export class RateLimitedError extends ProblemError {
  override name = "RateLimitedError";
  readonly retryAfter: number;
  constructor(problem: Problem, meta: { requestId?: string | null; rateLimit?: RateLimit | null; retryAfter: number }) {
    super(problem, meta);
    this.retryAfter = meta.retryAfter;
  }
}

const BY_STATUS: Record<number, new (p: Problem, m: { requestId?: string | null; rateLimit?: RateLimit | null }) =>
  ProblemError> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
};

/** The error for a non-2xx answer; a body that is not a problem document becomes one (code `http_<status>`). */
export function problemError(
  status: number,
  body: unknown,
  meta: { requestId?: string | null; rateLimit?: RateLimit | null; retryAfter?: number | null; statusText?: string } = {},
): ProblemError {
  const problem = asProblem(status, body, meta.statusText ?? "");
  if (status === 429) {
    return new RateLimitedError(problem, { ...meta, retryAfter: meta.retryAfter ?? problem.retryAfter ?? 1 });
  }
  const Cls = BY_STATUS[status] ?? (status >= 500 ? ServerError : ProblemError);
  return new Cls(problem, meta);
}

function asProblem(status: number, body: unknown, statusText: string): Problem {
  if (body && typeof body === "object" && typeof (body as Problem).code === "string") {
    const p = body as Problem;
    // a UDF error carries UDF's `errmsg` beside the problem fields
    const detail = typeof p.detail === "string" ? p.detail : typeof p["errmsg"] === "string" ? (p["errmsg"] as string) : "";
    return { ...p, status: typeof p.status === "number" ? p.status : status, detail, title: p.title ?? statusText };
  }
  return { type: "about:blank", title: statusText || `HTTP ${status}`, status, detail: "", code: `http_${status}` };
}
