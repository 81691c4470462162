// The /ws/quotes client: one socket, automatic reconnect with exponential backoff,
// seq-gap detection per instrument and a liveness check. It knows nothing of the DOM:
// it reports through callbacks and the page decides what to show.

/** Close codes the server uses (SPEC 7). */
export const Close = Object.freeze({
  NORMAL: 1000,
  GOING_AWAY: 1001,
  ABNORMAL: 1006,
  POLICY: 1008,
  TOO_BIG: 1009,
  REVOKED: 4001,
  SLOW: 4008,
});

/** Exponential backoff with jitter: base x 2^attempt, capped, then a random half of it is added or not. */
export class Backoff {
  constructor({ baseMs = 500, capMs = 30000, random = Math.random } = {}) {
    this.baseMs = baseMs;
    this.capMs = capMs;
    this.random = random;
    this.attempt = 0;
  }

  next() {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** this.attempt);
    this.attempt += 1;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  reset() {
    this.attempt = 0;
  }
}

/**
 * Tracks each instrument's last `seq`. seq counts an instrument's ticks from 1 per server
 * start; `epoch` (in the snapshot) names the start, so a new epoch starts counting afresh.
 */
export class SeqTracker {
  constructor() {
    this.epoch = null;
    this.last = new Map();
    this.gaps = 0; // gap events
    this.missed = 0; // ticks never received
  }

  /** Called with each snapshot's epoch; a new epoch (server restart) forgets every seq. */
  setEpoch(epoch) {
    if (epoch !== this.epoch) {
      this.epoch = epoch;
      this.last.clear();
    }
  }

  /** Returns "ok", "gap" (some ticks were skipped: the price is still the latest) or "stale" (old or repeated). */
  observe(id, seq) {
    const last = this.last.get(id);
    if (last !== undefined && seq <= last) return "stale";
    this.last.set(id, seq);
    if (last === undefined || seq === last + 1) return "ok";
    this.gaps += 1;
    this.missed += seq - last - 1;
    return "gap";
  }
}

/**
 * States: "connecting" -> "open" -> ("waiting" -> "connecting" ...) ; "stopped" at the end.
 * Callbacks: onMessage(msg), onState({state, attempt, retryInMs, failuresBeforeOpen, closeCode}).
 */
export class LiveSocket {
  constructor(url, { onMessage, onState, backoff = new Backoff(), livenessMs = 15000 } = {}) {
    this.url = url;
    this.onMessage = onMessage;
    this.onState = onState;
    this.backoff = backoff;
    this.livenessMs = livenessMs;
    this.ws = null;
    this.state = "idle";
    this.failuresBeforeOpen = 0; // consecutive attempts that never opened (refused handshake, server down)
    this.timer = null;
    this.watchdog = null;
    this.lastMessageAt = 0;
    this.reqIds = 0;
  }

  start() {
    if (this.state !== "idle") return;
    this._connect();
  }

  stop() {
    this._setState("stopped");
    clearTimeout(this.timer);
    clearInterval(this.watchdog);
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      ws.close(Close.NORMAL, "client stopped");
    }
  }

  /** Send a client op; returns false when the socket is not open. */
  send(op) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify({ ...op, reqId: op.reqId ?? `r${++this.reqIds}` }));
    return true;
  }

  _connect() {
    this._setState("connecting");
    let opened = false;
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => {
      opened = true;
      this.failuresBeforeOpen = 0;
      this.lastMessageAt = performance.now();
      this._setState("open");
      this._watch();
    };
    ws.onmessage = (event) => {
      this.lastMessageAt = performance.now();
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch {
        return;
      }
      if (msg.type === "snapshot") this.backoff.reset(); // a healthy session: start backing off from the bottom
      this.onMessage?.(msg);
    };
    ws.onclose = (event) => this._closed(ws, opened, event.code);
  }

  _closed(ws, opened, code) {
    if (ws !== this.ws || this.state === "stopped") return;
    this.ws = null;
    clearInterval(this.watchdog);
    if (!opened) this.failuresBeforeOpen += 1;
    if (code === Close.REVOKED) {
      this._setState("stopped", { closeCode: code });
      return;
    }
    const retryInMs = this.backoff.next();
    this._setState("waiting", { retryInMs, closeCode: code });
    this.timer = setTimeout(() => this._connect(), retryInMs);
  }

  /** Ask for a pong now and then; a socket silent for `livenessMs` is dead even if TCP has not noticed. */
  _watch() {
    clearInterval(this.watchdog);
    const period = Math.max(1000, this.livenessMs / 3);
    this.watchdog = setInterval(() => {
      const silentMs = performance.now() - this.lastMessageAt;
      if (silentMs > this.livenessMs) {
        this.ws?.close(4000, "no message within the liveness window");
        // the browser may take long to report the close of a dead TCP connection: act now
        if (this.ws) this._closed(this.ws, true, Close.ABNORMAL);
      } else if (silentMs > period) {
        this.send({ op: "ping" });
      }
    }, period);
  }

  _setState(state, extra = {}) {
    this.state = state;
    this.onState?.({
      state,
      attempt: this.backoff.attempt,
      failuresBeforeOpen: this.failuresBeforeOpen,
      retryInMs: 0,
      closeCode: null,
      ...extra,
    });
  }
}
