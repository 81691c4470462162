// Type-checked only (tsc -p tsconfig.consumer.json), never run: what a TypeScript user of the built package
// writes, against its .d.ts files. A wrong field name or type here fails the test run.

import {
  type Candle,
  type Gap,
  MarketClient,
  type Quote,
  QuoteStream,
  RateLimitedError,
} from "../dist/index.js";

export async function consumer(): Promise<void> {
  const api = new MarketClient({ baseUrl: "http://127.0.0.1:8000", key: "k" });
  const quotes: Quote[] = (await api.quotes({ kind: "oil" })).quotes;
  const price: number | null = (await api.quote("brent")).price;
  const seq: number = (await api.quote("brent")).seq;
  const series: Candle[] = (await api.kline("brent", { interval: "1m", from: new Date(), limit: 10 })).series;
  const next: string | null | undefined = (await api.kline("brent")).next;
  for await (const c of api.candles("brent", { interval: "5m", from: "2026-11-20" })) c.o.toFixed(2);
  const token: string = (await api.login({ email: "a@b.c", password: "12345678" })).token;
  await api.submitInquiry(token, { product: "methanol", quantity: 100 });
  const remaining: number | undefined = api.rateLimit?.remaining;
  const res = await api.request("get", "/api/v1/quotes/{id}", { params: { id: "brent" } });
  const requestId: string | null = res.requestId;
  try {
    await api.spreads();
  } catch (e) {
    if (e instanceof RateLimitedError) e.retryAfter.toFixed(0);
  }
  const stream = new QuoteStream({ url: "ws://127.0.0.1:8001/ws/quotes", ids: ["brent"], candles: ["1m"] });
  stream.on("tick", (t) => t.seq.toFixed(0));
  stream.on("candle", (c) => (c.final ? c.c : c.o));
  stream.on("gap", (g: Gap) => Object.keys(g.missed));
  stream.on("dead", (d) => d.silentMs);
  // @ts-expect-error: not an event of the stream
  stream.on("nonsense", () => undefined);
  // @ts-expect-error: quote() takes an id string
  await api.quote(42);
  void [quotes, price, seq, series, next, remaining, requestId];
}
