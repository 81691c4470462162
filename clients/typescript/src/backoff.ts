// Reconnect delays: exponential with "equal jitter" (half fixed, half random), capped. Reset after a
// connection that delivered its subscription, so a flapping server is not hammered and a healthy
// one is rejoined fast.

export interface BackoffOptions {
  /** First delay's ceiling in ms (default 500). */
  baseMs?: number;
  /** Largest delay in ms (default 30,000). */
  capMs?: number;
  /** Random numbers in [0, 1) (inject one for tests). */
  random?: () => number;
}

export class Backoff {
  attempt = 0;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly random: () => number;

  constructor({ baseMs = 500, capMs = 30_000, random = Math.random }: BackoffOptions = {}) {
    this.baseMs = baseMs;
    this.capMs = capMs;
    this.random = random;
  }

  /** The next delay in ms: between half and all of min(cap, base x 2^attempt). */
  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt += 1;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  reset(): void {
    this.attempt = 0;
  }
}
