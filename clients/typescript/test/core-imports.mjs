// What core.test.mjs needs from the build, including the internal errors helper.
export { Backoff, RateLimitedError, ResumeState, parseRateLimit, parseRetryAfter } from "../dist/index.js";
export { problemError as problemErrorFor } from "../dist/errors.js";
