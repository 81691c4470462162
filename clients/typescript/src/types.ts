// Friendly names for the generated OpenAPI schemas, and the stream's messages (SPEC 7 and 14;
// the AsyncAPI document at /asyncapi.json describes the same).

import type { components, operations } from "./openapi.js";

type Schemas = components["schemas"];

export type Quote = Schemas["Quote"];
export type QuoteExtended = Schemas["QuoteExtended"];
export type QuoteList = Schemas["QuoteList"];
export type Candle = Schemas["Candle"];
export type Spread = Schemas["Spread"];
export type InventoryItem = Schemas["InventoryItem"];
export type MarketSnapshot = Schemas["MarketSnapshot"];
export type NewsItem = Schemas["NewsItem"];
export type ResearchItem = Schemas["ResearchItem"];
export type Receipt = Schemas["Receipt"];
export type Localised = Schemas["Localised"];

/** A point in time as the kline range parameters take it: a Date, epoch ms, ISO 8601 with offset or YYYY-MM-DD. */
export type Timestamp = Date | number | string;
export type CandleInterval = "1m" | "5m" | "15m" | "1h" | "1d";

type GeneratedKlineQuery = NonNullable<operations["get_kline"]["parameters"]["query"]>;
/** `GET /api/v1/kline/{id}` parameters; `from`/`to` form the half-open range of SPEC 14. */
export type KlineQuery = Omit<GeneratedKlineQuery, "from" | "to"> & {
  interval?: CandleInterval;
  from?: Timestamp;
  to?: Timestamp;
  limit?: number;
  days?: number;
};
/** The kline answer; `next` (with `from`) is where the following page starts when more candles remain. */
export type KlineResponse = Schemas["CandleSeries"] & { next?: string | null };

// --- stream messages (server -> client) ---------------------------------------------------------

export interface SnapshotMessage {
  type: "snapshot";
  updated: string | null;
  quotes: Quote[];
  /** Names the tick history the seqs belong to; changes when that history is lost (a server restart). */
  epoch?: string;
  /** The last tick seq each quote's price includes. */
  seqs?: Record<string, number>;
}

export interface TickMessage {
  type: "tick";
  id: string;
  price: number;
  change: number;
  ts: string;
  seq: number;
  /** A futures product's tick (SPEC 19): best bid and ask, open interest, the trading day's volume so far. */
  bid?: number | null;
  ask?: number | null;
  oi?: number | null;
  vol?: number;
}

export interface CandleMessage {
  type: "candle";
  id: string;
  interval: CandleInterval;
  t: string;
  o: number;
  h: number;
  l: number;
  c: number;
  v: number;
  /** true once the bucket has ended: equal to what /kline returns for it from then on. */
  final: boolean;
  /** The last tick included. */
  seq: number;
}

export interface HeartbeatMessage {
  type: "heartbeat";
  ts: string;
  /** The last tick seq of each subscribed id, written after the ticks it accounts for. */
  seqs: Record<string, number>;
}

/** SPEC 16: a venue opened, broke or closed; SPEC 20: its feed went silent in session (`stale`) and `open` again when
 * ticks return (sent to the sessions subscribed to one of its instruments). */
export interface StatusMessage {
  type: "status";
  venue: string;
  status: "open" | "break" | "closed" | "stale";
  ts: string;
}

export interface SubscribedMessage {
  type: "subscribed";
  ids: string[];
  candles?: CandleInterval[];
  reqId?: string | number | null;
  /** Only on a subscribe that asked to resume: true when every missed tick follows. */
  recovered?: boolean;
  /** Only when the message named continuous ids (`methanol.c.0`): each -> the contract id it named then. */
  resolved?: Record<string, string>;
}

export interface PongMessage {
  type: "pong";
  ts?: string;
  reqId?: string | number | null;
}

export interface ErrorMessage {
  type: "error";
  code: string;
  detail: string;
  reqId?: string | number | null;
}

export type ServerMessage =
  | SnapshotMessage
  | TickMessage
  | CandleMessage
  | HeartbeatMessage
  | StatusMessage
  | SubscribedMessage
  | PongMessage
  | ErrorMessage;
