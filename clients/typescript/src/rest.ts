// The REST client: every /api/v1 and public endpoint of the OpenAPI document, typed from it.
//
// One method, `request()`, does the work: it fills the path, encodes the query, sends the key,
// parses the rate-limit headers, waits out a 429's Retry-After (at most `retries429` times) and
// turns every error status into a ProblemError subclass. The named methods are one line each.

import { type ConsoleCalls, consoleCalls } from "./console.js";
import { type DownloadOptions, type FlatFile, downloadFlatfile } from "./flatfiles.js";
import {
  ProblemError,
  RateLimitedError,
  TransportError,
  problemError,
} from "./errors.js";
import type {
  BodyOf, CallOptions, Method, PathsWith, QueryOf, RequestOptions, SuccessBody, TypedClient,
} from "./http.js";
import type { paths } from "./openapi.js";
import { type RateLimit, parseRateLimit, parseRetryAfter } from "./ratelimit.js";
import type {
  Candle,
  CandleInterval,
  KlineQuery,
  KlineResponse,
  Timestamp,
} from "./types.js";

export const KEY_HEADER = "X-SERVICE-Key";

export interface ClientOptions {
  /** Where the HTTP listener is: `http://127.0.0.1:8000`; in a browser the page's origin by default. */
  baseUrl?: string;
  /**
   * The API key for `/api/v1` (sent as `X-SERVICE-Key`). Never put a key in front-end code: in a browser,
   * point `baseUrl` at your own backend, which adds the key (see the README).
   */
  key?: string | null;
  /** A fetch implementation (default: the global one: browsers, Node >= 18). */
  fetch?: typeof fetch;
  /** Per-request timeout in ms (default 10,000; 0 for none). */
  timeoutMs?: number;
  /** How many times a 429 is retried after waiting its Retry-After (default 2; 0 throws at once). */
  retries429?: number;
  /** A Retry-After longer than this (seconds) is not waited for: the RateLimitedError is thrown (default 60). */
  maxRetryWaitS?: number;
  /** A Bearer token for the service console's routes (`/api/console/...`); `console.signIn()` sets it. */
  token?: string | null;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** Called after every HTTP answer (also errors and retried 429s), e.g. to show the rate-limit budget. */
  onResponse?: (info: ResponseInfo) => void;
}

/** What every answer tells besides its body. */
export interface ResponseInfo {
  method: string;
  url: string;
  status: number;
  requestId: string | null;
  rateLimit: RateLimit | null;
  /** Seconds from Cache-Control max-age, or null. */
  maxAge: number | null;
  etag: string | null;
}

/** A success answer with its metadata. */
export interface ApiResponse<T> extends ResponseInfo {
  data: T;
  headers: Headers;
}

const DEFAULT_BASE = "http://127.0.0.1:8000";
/** "After the live candle" for a range query's `to`: a week ahead covers the next trading day of any interval. */
const AFTER_LIVE_MS = 7 * 86_400_000;

function defaultBase(): string {
  const loc = (globalThis as { location?: { origin?: string } }).location;
  return loc?.origin && loc.origin !== "null" ? loc.origin : DEFAULT_BASE;
}

export class MarketClient implements TypedClient {
  readonly baseUrl: string;
  key: string | null;
  /** The console's Bearer token (memory only: keep it out of localStorage and URLs). */
  token: string | null;
  /** The rate-limit headers of the latest limited answer (the key's bucket for /api/v1). */
  rateLimit: RateLimit | null = null;
  private readonly fetchImpl: typeof fetch;
  private readonly opts: Required<Pick<ClientOptions, "timeoutMs" | "retries429" | "maxRetryWaitS">> & ClientOptions;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? defaultBase()).replace(/\/+$/, "");
    this.key = options.key ?? null;
    this.token = options.token ?? null;
    const f = options.fetch ?? globalThis.fetch;
    if (!f) throw new TransportError("no fetch implementation: pass `fetch` in the options");
    this.fetchImpl = f.bind(globalThis);
    this.opts = { timeoutMs: 10_000, retries429: 2, maxRetryWaitS: 60, ...options };
  }

  // --- keyed market data (/api/v1) ---------------------------------------------------------

  /** `GET /api/v1/quotes`: every quote in catalogue order, or those of `kind` / `ids`. */
  quotes(query: { kind?: "oil" | "chem" | "fx"; ids?: string[] | string } = {}, call?: CallOptions) {
    const ids = Array.isArray(query.ids) ? query.ids.join(",") : query.ids;
    return this.get("/api/v1/quotes", { query: { kind: query.kind, ids }, ...call } as never) as
      Promise<SuccessBody<"/api/v1/quotes", "get">>;
  }

  /** `GET /api/v1/quotes/{id}`: one quote with today's open/high/low and its `seq`. */
  quote(id: string, call?: CallOptions) {
    return this.get("/api/v1/quotes/{id}", { params: { id }, ...call });
  }

  /** `GET /api/v1/kline/{id}`: candles; `from`/`to` take a Date, epoch ms, ISO 8601 or YYYY-MM-DD. */
  kline(id: string, query: KlineQuery = {}, call?: CallOptions): Promise<KlineResponse> {
    return this.get("/api/v1/kline/{id}", { params: { id }, query: klineQuery(query) as never, ...call }) as
      Promise<KlineResponse>;
  }

  /** `GET /api/v1/spreads`: domestic vs import-parity spreads. */
  spreads(call?: CallOptions) {
    return this.get("/api/v1/spreads", { ...call });
  }

  /** `GET /api/v1/inventory`: port, social and factory inventories. */
  inventory(call?: CallOptions) {
    return this.get("/api/v1/inventory", { ...call });
  }

  /**
   * Every candle of `[from, to)` in ascending order, fetched a page at a time (following `next`):
   * `for await (const c of client.candles("brent", {interval: "1m", from: "2026-11-20"})) ...`
   */
  async *candles(id: string, query: KlineQuery & { from: Timestamp }, call?: CallOptions): AsyncGenerator<Candle> {
    for await (const page of this.candlePages(id, query, call)) yield* page;
  }

  /** The pages behind `candles()`: each an ascending array, the next one starting at the server's `next`. */
  async *candlePages(id: string, query: KlineQuery & { from: Timestamp }, call?: CallOptions):
    AsyncGenerator<Candle[]> {
    let from: Timestamp | undefined = query.from;
    while (from !== undefined) {
      const page: KlineResponse = await this.kline(id, { ...query, from }, call);
      if (page.series.length) yield page.series;
      from = page.next ?? undefined;
    }
  }

  /**
   * History going back from `before` (exclusive; default: from the live candle back), newest page first,
   * each page ascending: what a chart needs when the user scrolls left. Stops at the oldest candle held.
   */
  async *olderCandles(id: string, query: Omit<KlineQuery, "from" | "to"> & { before?: Timestamp } = {},
    call?: CallOptions): AsyncGenerator<Candle[]> {
    const { before, ...rest } = query;
    // always a range query (`to`): `limit` then counts candles for every interval, 1d included
    let to: Timestamp = before ?? Date.now() + AFTER_LIVE_MS;
    for (;;) {
      const page: KlineResponse = await this.kline(id, { ...rest, to }, call);
      if (!page.series.length) return;
      yield page.series;
      const first = page.series[0]!.t;
      if (sameInstant(first, to)) return; // the server cannot go further back
      to = first;
    }
  }

  // --- flat files (SPEC 18: professional and enterprise plans) ---------------------------

  /** `GET /api/v1/flatfiles`: the closed trading days' files of a dataset (`from`/`to` YYYY-MM-DD, included). */
  flatfiles(query: QueryOf<"/api/v1/flatfiles", "get">, call?: CallOptions) {
    return this.get("/api/v1/flatfiles", { query, ...call });
  }

  /**
   * One listed file's bytes, resumed with Range when a download breaks and checked against its sha256
   * (ChecksumError); `held`: bytes an earlier broken download saved (src/flatfiles.ts).
   */
  downloadFlatfile(entry: FlatFile, options: DownloadOptions = {}): Promise<Uint8Array> {
    const fetcher = (url: string, headers: Record<string, string>, signal?: AbortSignal) => {
      const all: Record<string, string> = { ...this.opts.headers, ...headers };
      if (this.key) all[KEY_HEADER] = this.key;
      return this.fetchImpl(url, { headers: all, signal });
    };
    return downloadFlatfile(fetcher, this.baseUrl, entry, options);
  }

  // --- TradingView UDF datafeed (/api/v1/udf) ---------------------------------------------

  readonly udf = {
    /** `GET /api/v1/udf/config`: resolutions 1, 5, 15, 60, 1D; search and time supported. */
    config: (call?: CallOptions) => this.get("/api/v1/udf/config", { ...call }),
    /** `GET /api/v1/udf/symbols?symbol=ID`: TradingView symbol info. */
    symbols: (symbol: string, call?: CallOptions) => this.get("/api/v1/udf/symbols", { query: { symbol }, ...call }),
    search: (query: QueryOf<"/api/v1/udf/search", "get">, call?: CallOptions) =>
      this.get("/api/v1/udf/search", { query, ...call }),
    /** Bars with from <= t <= to (UDF counts `to` in), or the latest `countback`; `s` is ok, no_data or error. */
    history: (query: QueryOf<"/api/v1/udf/history", "get">, call?: CallOptions) =>
      this.get("/api/v1/udf/history", { query, ...call }),
    /** Server time in epoch seconds. */
    time: async (call?: CallOptions) => Number(await this.get("/api/v1/udf/time", { ...call })),
  };

  // --- the service console (/api/console, Bearer) ------------------------------------------

  readonly console: ConsoleCalls = consoleCalls(this);

  // --- public site (/api) -------------------------------------------------------------------

  /** `GET /api/market`: the 8 categories (ETag + max-age: pass `cache: "no-cache"` to revalidate). */
  market(call?: CallOptions) {
    return this.get("/api/market", { ...call });
  }

  /** `GET /api/market/{id}`: one category. */
  marketCategory(id: string, call?: CallOptions) {
    return this.get("/api/market/{id}", { params: { id }, ...call });
  }

  news(query: { limit?: number; offset?: number } = {}, call?: CallOptions) {
    return this.get("/api/news", { query, ...call });
  }

  research(query: { limit?: number; offset?: number } = {}, call?: CallOptions) {
    return this.get("/api/research", { query, ...call });
  }

  register(body: BodyOf<"/api/auth/register", "post">, call?: CallOptions) {
    return this.post("/api/auth/register", { body, ...call });
  }

  login(body: BodyOf<"/api/auth/login", "post">, call?: CallOptions) {
    return this.post("/api/auth/login", { body, ...call });
  }

  /** `POST /api/submit-inquiry` with the Bearer token from `login()`. */
  submitInquiry(token: string, body: BodyOf<"/api/submit-inquiry", "post">, call?: CallOptions) {
    const headers = { ...call?.headers, Authorization: `Bearer ${token}` };
    return this.post("/api/submit-inquiry", { body, ...call, headers });
  }

  cooperation(body: BodyOf<"/api/cooperation", "post">, call?: CallOptions) {
    return this.post("/api/cooperation", { body, ...call });
  }

  receipt(receiptNo: string, call?: CallOptions) {
    return this.get("/api/receipt/{receiptNo}", { params: { receiptNo }, ...call });
  }

  verifyAnchor(hash: string, call?: CallOptions) {
    return this.get("/api/verify-anchor", { query: { hash }, ...call });
  }

  /** `GET /api/config`: where the WebSocket listens (the dashboard's own endpoint). */
  config(call?: CallOptions) {
    return this.get("/api/config", { ...call });
  }

  // --- operations ---------------------------------------------------------------------------

  health(call?: CallOptions) {
    return this.get("/healthz", { ...call });
  }

  ready(call?: CallOptions) {
    return this.get("/readyz", { ...call });
  }

  // --- status (SPEC 20) ----------------------------------------------------------------------

  /** `GET /api/v1/status` (no key): the indicator, every component, unresolved incidents, maintenance. */
  status(call?: CallOptions) {
    return this.get("/api/v1/status", { ...call });
  }

  /** `GET /api/v1/status/incidents` (no key): the newest 50 incidents, resolved ones too; `asOf` its read. */
  incidents(call?: CallOptions) {
    return this.get("/api/v1/status/incidents", { ...call });
  }

  /** `GET /api/v1/quality`: each venue's trading days with their condition and in-session gaps. */
  quality(query: QueryOf<"/api/v1/quality", "get"> = {}, call?: CallOptions) {
    return this.get("/api/v1/quality", { query, ...call });
  }

  // --- the typed core -----------------------------------------------------------------------

  /** GET a path of the OpenAPI document; resolves to its success body. */
  async get<P extends PathsWith<"get">>(path: P, options: RequestOptions<P, "get">): Promise<SuccessBody<P, "get">> {
    return (await this.request("get", path, options)).data;
  }

  /** POST to a path of the OpenAPI document; resolves to its success body. */
  async post<P extends PathsWith<"post">>(path: P, options: RequestOptions<P, "post">):
    Promise<SuccessBody<P, "post">> {
    return (await this.request("post", path, options)).data;
  }

  /** Any operation, with the answer's metadata (status, rate limit, request id, ETag, max-age). */
  async request<M extends Method, P extends PathsWith<M> & keyof paths>(method: M, path: P,
    options: RequestOptions<P, M>): Promise<ApiResponse<SuccessBody<P, M>>> {
    const o = options as { params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown } &
      CallOptions;
    const url = this.baseUrl + fillPath(path, o.params) + queryString(o.query);
    const headers: Record<string, string> = { Accept: "application/json", ...this.opts.headers, ...o.headers };
    if (this.key && path.startsWith("/api/v1/")) headers[KEY_HEADER] = this.key;
    if (this.token && path.startsWith("/api/console/")) headers.Authorization = `Bearer ${this.token}`;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers["Content-Type"] = "application/json";
    }
    for (let attempt = 0; ; attempt++) {
      const resp = await this.send(url, { method: method.toUpperCase(), headers, body, cache: o.cache }, o.signal);
      const info = this.info(method, url, resp);
      const payload = await readBody(resp);
      if (resp.ok) return { ...info, data: payload as SuccessBody<P, M>, headers: resp.headers };
      const retryAfter = parseRetryAfter(resp.headers.get("retry-after"),
        (payload as { retryAfter?: unknown } | null)?.retryAfter);
      const error = problemError(resp.status, payload, { requestId: info.requestId, rateLimit: info.rateLimit,
        retryAfter, statusText: resp.statusText });
      if (!(error instanceof RateLimitedError) || attempt >= this.opts.retries429 ||
        error.retryAfter > this.opts.maxRetryWaitS) throw error;
      await sleep(Math.max(1, error.retryAfter) * 1000, o.signal);
    }
  }

  private async send(url: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
    const signals = [signal, this.opts.timeoutMs > 0 ? AbortSignal.timeout(this.opts.timeoutMs) : undefined]
      .filter((s): s is AbortSignal => s !== undefined);
    try {
      return await this.fetchImpl(url, { ...init, signal: anySignal(signals) });
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      const name = (err as { name?: string } | null)?.name;
      const why = name === "TimeoutError" ? `no answer within ${this.opts.timeoutMs} ms` : String(err);
      throw new TransportError(`${init.method} ${url}: ${why}`, { cause: err });
    }
  }

  private info(method: string, url: string, resp: Response): ResponseInfo {
    const rateLimit = parseRateLimit(resp.headers);
    if (rateLimit) this.rateLimit = rateLimit;
    const maxAge = /max-age=(\d+)/.exec(resp.headers.get("cache-control") ?? "");
    const info: ResponseInfo = {
      method: method.toUpperCase(), url, status: resp.status, requestId: resp.headers.get("x-request-id"),
      rateLimit, maxAge: maxAge ? Number(maxAge[1]) : null, etag: resp.headers.get("etag"),
    };
    this.opts.onResponse?.(info);
    return info;
  }
}

/** The query of a kline call with every time as the server reads it (Date -> epoch ms). */
function klineQuery(q: KlineQuery): Record<string, unknown> {
  const out: Record<string, unknown> = { ...q };
  for (const k of ["from", "to"] as const) {
    const v = q[k];
    if (v instanceof Date) out[k] = v.getTime();
  }
  return out;
}

function sameInstant(a: string, b: Timestamp): boolean {
  const ms = (v: Timestamp) => (v instanceof Date ? v.getTime() : typeof v === "number" ? v : Date.parse(v));
  return ms(a) === ms(b);
}

function fillPath(path: string, params?: Record<string, unknown>): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = params?.[name];
    if (v === undefined || v === null) throw new TypeError(`path parameter ${name} is required for ${path}`);
    return encodeURIComponent(String(v));
  });
}

function queryString(query?: Record<string, unknown>): string {
  if (!query) return "";
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    qs.append(k, Array.isArray(v) ? v.join(",") : String(v));
  }
  const s = qs.toString();
  return s ? `?${s}` : "";
}

async function readBody(resp: Response): Promise<unknown> {
  if (resp.status === 204 || resp.status === 304) return null;
  const type = resp.headers.get("content-type") ?? "";
  const text = await resp.text();
  if (!/json/.test(type)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function anySignal(signals: AbortSignal[]): AbortSignal | undefined {
  if (signals.length <= 1) return signals[0];
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const ctl = new AbortController();
  for (const s of signals) s.addEventListener("abort", () => ctl.abort(s.reason), { once: true });
  return ctl.signal;
}

/** Wait `ms`, or reject when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export { ProblemError };
