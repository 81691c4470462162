// Type-level plumbing over the generated OpenAPI `paths`: what a path's GET/POST takes and returns.
// Nothing here exists at run time.

import type { paths } from "./openapi.js";

export type Method = "get" | "post" | "patch" | "delete";
/** Paths that define `M`. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P] extends Record<M, infer O> ? ([O] extends [undefined | never] ? never : P) : never;
}[keyof paths];

type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M & keyof paths[P]]>;

type JsonContent<R> = R extends { content: { "application/json": infer J } } ? J
  : R extends { content: { "text/plain": infer T } } ? T : unknown;

/** The body of the operation's success answer (200, else 201). */
export type SuccessBody<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R }
  ? R extends { 200: infer A } ? JsonContent<A> : R extends { 201: infer B } ? JsonContent<B> : unknown
  : unknown;

export type QueryOf<P extends keyof paths, M extends Method> = Operation<P, M> extends
  { parameters: { query?: infer Q } } ? ([Q] extends [undefined | never] ? never : NonNullable<Q>) : never;

export type PathParamsOf<P extends keyof paths, M extends Method> = Operation<P, M> extends
  { parameters: { path?: infer Q } } ? ([Q] extends [undefined | never] ? never : NonNullable<Q>) : never;

export type BodyOf<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: infer RB }
  ? [NonNullable<RB>] extends [never] ? never
  : NonNullable<RB> extends { content: { "application/json": infer B } } ? B : never
  : never;

/** Options of `request()`: `params` fills `{name}` in the path, `query` is the query string. */
export type RequestOptions<P extends keyof paths, M extends Method> =
  ([PathParamsOf<P, M>] extends [never] ? { params?: undefined } : { params: PathParamsOf<P, M> }) &
  ([QueryOf<P, M>] extends [never] ? { query?: undefined } : { query?: QueryOf<P, M> }) &
  ([BodyOf<P, M>] extends [never] ? { body?: undefined } : { body: BodyOf<P, M> }) &
  CallOptions;

/** Per-call options. */
export interface CallOptions {
  /** Extra request headers (e.g. `Authorization: Bearer ...` for the inquiry endpoint). */
  headers?: Record<string, string>;
  /** Aborts the request (and any wait for a 429's Retry-After). */
  signal?: AbortSignal;
  /** The fetch cache mode: `no-cache` revalidates a cached answer by its ETag (a 304 costs no body). */
  cache?: RequestCache;
}

/** What the console's calls need of a client (`MarketClient` is one): the typed core and the Bearer token. Declared
 * here so that console.ts and rest.ts do not import each other. */
export interface TypedClient {
  token: string | null;
  get<P extends PathsWith<"get">>(path: P, options: RequestOptions<P, "get">): Promise<SuccessBody<P, "get">>;
  post<P extends PathsWith<"post">>(path: P, options: RequestOptions<P, "post">): Promise<SuccessBody<P, "post">>;
  request<M extends Method, P extends PathsWith<M> & keyof paths>(method: M, path: P,
    options: RequestOptions<P, M>): Promise<{ data: SuccessBody<P, M> }>;
  login(body: BodyOf<"/api/auth/login", "post">, call?: CallOptions): Promise<SuccessBody<"/api/auth/login", "post">>;
}
