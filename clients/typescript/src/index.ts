// @market-server/client: typed REST and WebSocket client for the commodity market server.

export { MarketClient, KEY_HEADER, sleep } from "./rest.js";
export type { ApiResponse, ClientOptions, ResponseInfo } from "./rest.js";
export type { CallOptions } from "./http.js";
export type { ConsoleCalls } from "./console.js";
export { QuoteStream, CloseCode } from "./stream.js";
export type { SocketLike, StateChange, StreamEvents, StreamOptions, StreamState, WebSocketConstructor } from "./stream.js";
export { ResumeState } from "./resume.js";
export { downloadFlatfile } from "./flatfiles.js";
export type { DownloadOptions, FlatFile } from "./flatfiles.js";
export type { Gap } from "./resume.js";
export { Backoff } from "./backoff.js";
export type { BackoffOptions } from "./backoff.js";
export { parseRateLimit, parseRetryAfter } from "./ratelimit.js";
export type { RateLimit } from "./ratelimit.js";
export {
  BadRequestError,
  ChecksumError,
  ConflictError,
  ForbiddenError,
  MarketError,
  NotFoundError,
  PayloadTooLargeError,
  ProblemError,
  RateLimitedError,
  ServerError,
  TransportError,
  UnauthorizedError,
} from "./errors.js";
export type { Problem } from "./errors.js";
export type * from "./types.js";
export type { components, operations, paths } from "./openapi.js";
