// The /ws/quotes client (SPEC 7 and 14) for browsers and Node.
//
// One object, many connections: it connects, subscribes (resuming with since/epoch after the first
// connection), hands on what the server sends as typed events, and reconnects with backoff and jitter
// when the connection ends or goes silent. Silence is measured against the server's heartbeats: when
// nothing arrived for two heartbeat intervals the connection is dead (a browser cannot see WebSocket
// pings, and a paused or partitioned server never closes TCP), the client says so (`dead`) and reconnects.
//
// Order of events on a connection: `state` open -> (`subscribed`, then either the missed ticks or a `gap`
// and a `snapshot`) -> live `tick`/`candle`/`heartbeat`. Messages before the ack of our own subscribe are
// the server's default full-set greeting and are dropped when we asked for something else.

import { Backoff, type BackoffOptions } from "./backoff.js";
import { Emitter } from "./emitter.js";
import { KEY_HEADER } from "./rest.js";
import { type Gap, ResumeState } from "./resume.js";
import type {
  CandleInterval,
  CandleMessage,
  ErrorMessage,
  HeartbeatMessage,
  PongMessage,
  ServerMessage,
  SnapshotMessage,
  StatusMessage,
  SubscribedMessage,
  TickMessage,
} from "./types.js";

/** Close codes the server uses (SPEC 7). */
export const CloseCode = Object.freeze({
  NORMAL: 1000,
  GOING_AWAY: 1001,
  ABNORMAL: 1006,
  POLICY: 1008,
  TOO_BIG: 1009,
  REVOKED: 4001,
  /** The key's plan changed and no longer covers this session (SPEC 17): not retried. */
  PLAN_CHANGED: 4003,
  SLOW: 4008,
} as const);

/** What the stream needs of a WebSocket: the browser's, Node 22's global one, or the `ws` package's. */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate?(): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string; wasClean?: boolean }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string, protocolsOrOptions?: unknown) => SocketLike;

export type StreamState = "idle" | "connecting" | "open" | "waiting" | "closed";

export interface StateChange {
  state: StreamState;
  /** Reconnect attempt number (0 on the first connection). */
  attempt: number;
  /** In state `waiting`: ms until the next attempt. */
  retryInMs: number;
  /** Connection attempts in a row that never opened (refused handshake, server down). */
  failuresBeforeOpen: number;
  /** The close code that ended the last connection, when there was one. */
  closeCode: number | null;
  /** Why the last connection ended, in words. */
  reason: string;
}

export interface StreamEvents {
  state: StateChange;
  snapshot: SnapshotMessage;
  tick: TickMessage;
  candle: CandleMessage;
  heartbeat: HeartbeatMessage;
  /** A venue of a subscribed instrument opened, broke or closed (SPEC 16). */
  status: StatusMessage;
  subscribed: SubscribedMessage;
  pong: PongMessage;
  /** The server refused a client message (the connection stays open), or the client gave up. */
  error: ErrorMessage;
  gap: Gap;
  /** Nothing arrived for two heartbeat intervals: the connection is treated as dead and replaced. */
  dead: { silentMs: number; heartbeatMs: number };
  close: { code: number; reason: string; willReconnect: boolean };
  /** Every server message as it arrived (before duplicate filtering). */
  message: ServerMessage;
}

export interface StreamOptions {
  /** `ws://HOST:PORT/ws/quotes` (default `ws://127.0.0.1:8001/ws/quotes`). */
  url?: string;
  /** The API key (professional or enterprise plan). In a browser, see the README on keeping it out of pages. */
  key?: string | null;
  /**
   * Where the key goes: `header` (`X-SERVICE-Key`, kept out of proxy logs; Node with `ws` or the global
   * WebSocket) or `query` (`?key=`, the only way a browser can). Default: `query` in a browser, else `header`.
   */
  keyIn?: "query" | "header";
  /** Instruments to subscribe to; null or absent: the server's default, every instrument. */
  ids?: string[] | null;
  /** Candle intervals to receive `candle` frames for (for `ids`). */
  candles?: CandleInterval[];
  /** Only these ids get candle frames (default: every subscribed id): a chart of one instrument beside a
   * table of all of them. */
  candleIds?: string[] | null;
  /** The server's heartbeat interval (`--heartbeat-s`, default 5 s): silence for twice this is a dead
   * connection. 0 turns the check off (a server started with heartbeats off). Once two heartbeats in a row
   * have arrived, the interval between their `ts` is used instead (a server with another --heartbeat-s). */
  heartbeatMs?: number;
  /** A handshake that has not completed in this many ms is abandoned and retried (default 10,000). */
  connectTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** A WebSocket class; default the global one, else (Node 20 without --experimental-websocket) `ws`. */
  WebSocket?: WebSocketConstructor;
}

const DEFAULT_URL = "ws://127.0.0.1:8001/ws/quotes";
const OPEN = 1;
const IS_BROWSER = typeof (globalThis as { document?: unknown }).document !== "undefined";

export class QuoteStream extends Emitter<StreamEvents> {
  state: StreamState = "idle";
  readonly resume = new ResumeState();
  readonly backoff: Backoff;
  /** Connections opened after the first. */
  reconnects = 0;
  private ids: string[] | null;
  private candles: CandleInterval[];
  private candleIds: string[] | null;
  private narrowPending: string[] | null = null; // ids whose candle intervals go once the subscribe is acked
  /** The heartbeat interval in use: the option's, then what the server's heartbeats show. */
  heartbeatMs: number;
  private lastHeartbeatTs: number | null = null;
  private readonly opts: StreamOptions & { heartbeatMs: number; connectTimeoutMs: number };
  private ws: SocketLike | null = null;
  private impl: WebSocketConstructor | null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watchdog: ReturnType<typeof setTimeout> | null = null;
  private lastMessageAt = 0;
  private failuresBeforeOpen = 0;
  private reqIds = 0;
  private awaitingReqId: string | null = null; // our subscribe's reqId: messages before its ack are dropped
  private preAckIds: Set<string> | null = null; // ...or, when not resuming, narrowed to these ids
  private everOpened = false;
  private lastClose: { code: number | null; reason: string } = { code: null, reason: "" };

  constructor(options: StreamOptions = {}) {
    super();
    this.opts = { heartbeatMs: 5000, connectTimeoutMs: 10_000, ...options };
    this.ids = options.ids ? [...options.ids] : null;
    this.candles = options.candles ? [...options.candles] : [];
    this.candleIds = options.candleIds ? [...options.candleIds] : null;
    this.heartbeatMs = this.opts.heartbeatMs;
    this.backoff = new Backoff(options.backoff);
    this.impl = options.WebSocket ?? null;
  }

  /** The last tick seq seen per instrument, and the history they belong to (what a resume asks from). */
  get epoch(): string | null {
    return this.resume.epoch;
  }

  /** Connect (and keep reconnecting until `stop()`). */
  start(): this {
    if (this.state === "idle") void this.connect();
    return this;
  }

  /** Close for good. */
  stop(): void {
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      detach(ws);
      try {
        ws.close(CloseCode.NORMAL, "client stopped");
      } catch {
        // already closed
      }
    }
    if (this.state !== "closed") this.setState("closed");
  }

  /** Replace the subscription (ids; and candle intervals, none when omitted, for `candleIds` or every id). */
  subscribe(ids: string[], options: { candles?: CandleInterval[]; candleIds?: string[] | null } = {}): string | null {
    this.ids = [...ids];
    this.candles = options.candles ? [...options.candles] : [];
    this.candleIds = options.candleIds ? [...options.candleIds] : null;
    this.resume.clearAsk();
    const reqId = this.send({ op: "subscribe", ids: this.ids, ...(this.candles.length ? { candles: this.candles } : {}) });
    this.narrowCandles(this.ids);
    return reqId;
  }

  /**
   * Candle frames only for `candleIds`: a subscribe sets ids x intervals, so once its ack echoes `candles`
   * (a server without live candles echoes none, and would take the unsubscribe for all of the ids) the
   * intervals of the other ids are dropped.
   */
  private narrowCandles(ids: string[]): void {
    this.narrowPending = this.candleIds && this.candles.length ? ids.filter((i) => !this.candleIds!.includes(i)) : null;
  }

  private afterAck(ack: SubscribedMessage): void {
    const rest = this.narrowPending;
    this.narrowPending = null;
    if (rest?.length && ack.candles?.length) this.send({ op: "unsubscribe", ids: rest, candles: this.candles });
  }

  /** Remove ids (and, with `candles`, only those candle intervals of them). */
  unsubscribe(ids: string[], options: { candles?: CandleInterval[] } = {}): string | null {
    if (options.candles) {
      this.candles = this.candles.filter((c) => !options.candles!.includes(c));
    } else if (this.ids) {
      this.ids = this.ids.filter((i) => !ids.includes(i));
    }
    return this.send({ op: "unsubscribe", ids, ...(options.candles ? { candles: options.candles } : {}) });
  }

  /** Ask for a pong. */
  ping(): string | null {
    return this.send({ op: "ping" });
  }

  /** Cut the current connection as a network failure would (no close handshake); the client reconnects. */
  dropConnection(): void {
    if (this.ws) this.lost(this.ws, CloseCode.ABNORMAL, "dropped by the client");
  }

  /** Send a client op now; returns its reqId, or null when not connected (the subscription is sent on open). */
  private send(op: Record<string, unknown>): string | null {
    const ws = this.ws;
    if (!ws || ws.readyState !== OPEN) return null;
    const reqId = `c${++this.reqIds}`;
    ws.send(JSON.stringify({ ...op, reqId }));
    return reqId;
  }

  // --- connecting --------------------------------------------------------------------------

  private async connect(): Promise<void> {
    this.setState("connecting");
    let ws: SocketLike;
    try {
      const Impl = this.impl ?? (this.impl = await defaultWebSocket());
      if (this.state !== "connecting") return; // stopped meanwhile
      ws = this.open(Impl);
    } catch (err) {
      this.failuresBeforeOpen += 1;
      this.scheduleReconnect(null, `cannot connect: ${String(err)}`);
      return;
    }
    this.ws = ws;
    let opened = false;
    this.timer = setTimeout(() => {
      if (!opened) this.lost(ws, CloseCode.ABNORMAL, `no handshake within ${this.opts.connectTimeoutMs} ms`);
    }, this.opts.connectTimeoutMs);
    ws.onopen = () => {
      opened = true;
      this.clearTimer();
      this.failuresBeforeOpen = 0;
      if (this.everOpened) this.reconnects += 1;
      this.everOpened = true;
      this.lastHeartbeatTs = null;
      this.setState("open");
      this.touch();
      this.sendSubscription();
    };
    ws.onmessage = (ev) => this.onData(ws, ev.data);
    ws.onerror = () => undefined; // the close that follows says what happened
    ws.onclose = (ev) => {
      if (!opened) this.failuresBeforeOpen += 1;
      this.lost(ws, ev.code, ev.reason || (opened ? "connection closed" : "handshake failed"));
    };
  }

  private open(Impl: WebSocketConstructor): SocketLike {
    const keyIn = this.opts.keyIn ?? (IS_BROWSER ? "query" : "header");
    let url = this.opts.url ?? DEFAULT_URL;
    const key = this.opts.key;
    if (key && keyIn === "query") url += `${url.includes("?") ? "&" : "?"}key=${encodeURIComponent(key)}`;
    if (key && keyIn === "header") return new Impl(url, { headers: { [KEY_HEADER]: key } });
    return new Impl(url);
  }

  /** On open: the subscription we hold, resuming where the last connection stopped. */
  private sendSubscription(): void {
    const ids = this.ids ?? (this.resume.knownIds.length ? this.resume.knownIds : null);
    if (ids === null) {
      // the first connection to every instrument: the server's greeting snapshot is the subscription
      this.awaitingReqId = null;
      if (this.candles.length) this.awaitingReqId = "greeting"; // subscribe with its ids once it arrives
      return;
    }
    const resume = this.resume.resumeFields(ids);
    const reqId = this.send({
      op: "subscribe", ids, ...(this.candles.length ? { candles: this.candles } : {}), ...resume,
    });
    // a resume must not mix the greeting's snapshot and ticks with the replay: drop them until its ack;
    // with nothing to resume the greeting is the first data, narrowed to the ids asked for
    this.awaitingReqId = reqId;
    this.preAckIds = resume.since ? null : new Set(ids);
    this.narrowCandles(ids);
  }

  private scheduleReconnect(code: number | null, reason: string): void {
    this.lastClose = { code, reason };
    const retryInMs = this.backoff.next();
    this.setState("waiting", { retryInMs });
    this.timer = setTimeout(() => void this.connect(), retryInMs);
  }

  /** The connection ended (closed, failed, timed out, or silent): report it and reconnect unless fatal. */
  private lost(ws: SocketLike, code: number, reason: string): void {
    if (ws !== this.ws) return;
    this.ws = null;
    this.clearTimers();
    detach(ws);
    try {
      if (ws.terminate) ws.terminate(); // `ws`: drop the TCP connection now
      else ws.close(4000, "client gave up on this connection");
    } catch {
      // already closing
    }
    if (this.state === "closed") return;
    const fatal = code === CloseCode.REVOKED || code === CloseCode.PLAN_CHANGED;
    this.emit("close", { code, reason, willReconnect: !fatal });
    if (fatal) {
      this.lastClose = { code, reason };
      this.setState("closed");
      return;
    }
    this.scheduleReconnect(code, reason);
  }

  // --- receiving ---------------------------------------------------------------------------

  private onData(ws: SocketLike, data: unknown): void {
    if (ws !== this.ws) return;
    this.touch();
    let msg: ServerMessage;
    try {
      msg = JSON.parse(typeof data === "string" ? data : String(data)) as ServerMessage;
    } catch {
      return; // not JSON: nothing this client understands
    }
    this.emit("message", msg);
    if (this.awaitingReqId !== null && !this.isOurAck(msg)) {
      const narrowed = this.preAck(msg);
      if (narrowed === null) return;
      msg = narrowed;
    }
    switch (msg.type) {
      case "snapshot": return this.onSnapshot(msg);
      case "tick": return this.onTick(msg);
      case "candle": return this.emit("candle", msg);
      case "heartbeat": return this.onHeartbeat(msg);
      case "status": return this.emit("status", msg);
      case "subscribed": return this.onSubscribed(msg);
      case "pong": return this.emit("pong", msg);
      case "error": return this.emit("error", msg);
      default: return; // a message type from a newer server
    }
  }

  /** Before the ack of a subscribe that does not resume: the greeting's data for the ids asked for. */
  private preAck(msg: ServerMessage): ServerMessage | null {
    const ids = this.preAckIds;
    if (ids === null) return null;
    if (msg.type === "tick") return ids.has(msg.id) ? msg : null;
    if (msg.type !== "snapshot") return null;
    const seqs = Object.fromEntries(Object.entries(msg.seqs ?? {}).filter(([id]) => ids.has(id)));
    return { ...msg, quotes: msg.quotes.filter((q) => ids.has(q.id)), seqs };
  }

  /** While our subscribe is unanswered, only its ack (or its refusal) passes; the greeting waits for ids. */
  private isOurAck(msg: ServerMessage): boolean {
    if (this.awaitingReqId === "greeting") {
      if (msg.type !== "snapshot") return false;
      this.resume.onSnapshot(msg);
      this.awaitingReqId = null;
      this.sendSubscription();
      return false;
    }
    if ((msg.type === "subscribed" || msg.type === "error") && msg.reqId === this.awaitingReqId) {
      this.awaitingReqId = null;
      if (msg.type === "error") this.resume.clearAsk();
      return true;
    }
    return false;
  }

  private onSnapshot(msg: SnapshotMessage): void {
    this.resume.onSnapshot(msg);
    this.backoff.reset(); // a healthy session: the next outage starts backing off from the bottom
    this.emit("snapshot", msg);
  }

  private onSubscribed(msg: SubscribedMessage): void {
    this.afterAck(msg);
    const gap = this.resume.onAck(msg);
    if (msg.recovered) this.backoff.reset();
    this.emit("subscribed", msg);
    if (gap) this.emit("gap", gap);
  }

  private onTick(msg: TickMessage): void {
    const { duplicate, gap } = this.resume.onTick(msg);
    if (duplicate) return;
    if (gap) this.emit("gap", gap);
    this.emit("tick", msg);
  }

  private onHeartbeat(msg: HeartbeatMessage): void {
    this.learnInterval(msg);
    this.emit("heartbeat", msg);
    if (this.awaitingReqId !== null) return; // a resume is under way: its ticks will follow
    const gap = this.resume.onHeartbeat(msg);
    if (!gap) return;
    this.emit("gap", gap);
    // ask for exactly the missing ticks on this connection (SPEC 14: a seqs entry above the last tick seen)
    const ids = this.ids ?? this.resume.knownIds;
    this.awaitingReqId = this.send({
      op: "subscribe", ids, ...(this.candles.length ? { candles: this.candles } : {}), ...this.resume.resumeFields(ids),
    });
  }

  // --- liveness ----------------------------------------------------------------------------

  /** Two heartbeats in a row on one connection: their `ts` apart is the server's interval. */
  private learnInterval(msg: HeartbeatMessage): void {
    const ts = Date.parse(msg.ts);
    const prev = this.lastHeartbeatTs;
    this.lastHeartbeatTs = Number.isNaN(ts) ? null : ts;
    if (prev === null || Number.isNaN(ts) || this.opts.heartbeatMs <= 0) return;
    const spacing = Math.round((ts - prev) / 100) * 100;
    if (spacing >= 100 && spacing <= 120_000 && spacing !== this.heartbeatMs) {
      this.heartbeatMs = spacing;
      if (this.watchdog !== null) clearTimeout(this.watchdog);
      this.armWatchdog(2 * spacing); // re-armed with the interval just learnt
    }
  }

  /**
   * Any message proves the connection alive; silence for two heartbeat intervals does the opposite. One
   * timer per connection, not one per message: when it fires early (messages came meanwhile) it is set
   * again for the time that is left.
   */
  private touch(): void {
    this.lastMessageAt = Date.now();
    if (this.watchdog === null && this.heartbeatMs > 0) this.armWatchdog(2 * this.heartbeatMs);
  }

  private armWatchdog(ms: number): void {
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      const ws = this.ws;
      const hb = this.heartbeatMs;
      if (!ws || hb <= 0) return;
      const silentMs = Date.now() - this.lastMessageAt;
      if (silentMs < 2 * hb) {
        this.armWatchdog(2 * hb - silentMs);
        return;
      }
      this.emit("dead", { silentMs, heartbeatMs: hb });
      this.lost(ws, CloseCode.ABNORMAL, `no message for ${silentMs} ms (2 heartbeats missed)`);
    }, ms);
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private clearTimers(): void {
    this.clearTimer();
    if (this.watchdog !== null) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  private setState(state: StreamState, extra: { retryInMs?: number } = {}): void {
    this.state = state;
    this.emit("state", {
      state,
      attempt: this.backoff.attempt,
      retryInMs: extra.retryInMs ?? 0,
      failuresBeforeOpen: this.failuresBeforeOpen,
      closeCode: this.lastClose.code,
      reason: this.lastClose.reason,
    });
  }

  /** Events as an async iterator: `for await (const [type, event] of stream.events()) ...`. */
  async *events(types: (keyof StreamEvents)[] = ["snapshot", "tick", "candle", "heartbeat", "gap", "dead", "close"]):
    AsyncGenerator<[keyof StreamEvents, StreamEvents[keyof StreamEvents]]> {
    const queue: [keyof StreamEvents, StreamEvents[keyof StreamEvents]][] = [];
    let wake: (() => void) | null = null;
    const offs = types.map((t) => this.on(t, (e) => {
      queue.push([t, e]);
      wake?.();
    }));
    const offState = this.on("state", (s) => { if (s.state === "closed") wake?.(); });
    try {
      for (;;) {
        while (queue.length) yield queue.shift()!;
        if (this.state === "closed") return;
        await new Promise<void>((r) => { wake = r; });
        wake = null;
      }
    } finally {
      for (const off of offs) off();
      offState();
    }
  }
}

function detach(ws: SocketLike): void {
  ws.onopen = null;
  ws.onmessage = null;
  ws.onclose = null;
  ws.onerror = () => undefined; // `ws` throws an unhandled 'error' when nothing listens
}

/** The global WebSocket (browsers, Node >= 22, Node 20 with --experimental-websocket), else the `ws` package. */
async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global) return global;
  const name = "ws"; // a variable: bundlers for the browser must not try to resolve it
  try {
    const mod = (await import(name)) as { default?: WebSocketConstructor; WebSocket?: WebSocketConstructor };
    const Impl = mod.WebSocket ?? mod.default;
    if (Impl) return Impl;
  } catch {
    // fall through to the explanation
  }
  throw new Error("no WebSocket: install the `ws` package (npm i ws) or run Node >= 22 " +
    "(Node 20: node --experimental-websocket)");
}
