// Flat files (SPEC 18): a closed trading day's ticks or candles as one CSV.gz or Parquet file, downloaded with
// resume and a sha256 check.
//
// `downloadFlatfile` keeps the bytes in memory (browsers and Node alike: a day's file for 40 instruments is
// tens of MB at most). A download that breaks mid-body is resumed from the bytes received, with
// `Range: bytes=N-` and `If-Range` naming the file's sha256 (its ETag): if the server's file is another one it
// sends the whole file and the bytes held are dropped. Bytes an earlier run saved can be passed as `held`.
// Once every byte is in, their sha256 (WebCrypto) must be the listing's, else a ChecksumError is thrown.

import { ChecksumError, TransportError, problemError } from "./errors.js";
import type { components } from "./openapi.js";

export type FlatFile = components["schemas"]["FlatFile"];

export interface DownloadOptions {
  /** Bytes of this file an earlier, broken download saved: only the rest is fetched. */
  held?: Uint8Array;
  /** Requests at most (each resuming where the last one broke; default 5). */
  attempts?: number;
  /** Called as bytes arrive: (bytes held, the file's size). */
  onProgress?: (held: number, total: number) => void;
  signal?: AbortSignal;
}

export type Fetcher = (url: string, headers: Record<string, string>, signal?: AbortSignal) => Promise<Response>;

export async function downloadFlatfile(fetcher: Fetcher, baseUrl: string, entry: FlatFile,
  options: DownloadOptions = {}): Promise<Uint8Array> {
  let parts: Uint8Array[] = options.held?.length ? [options.held] : [];
  let held = options.held?.length ?? 0;
  const attempts = options.attempts ?? 5;
  for (let attempt = 0; attempt < attempts && held !== entry.bytes; attempt++) {
    if (held > entry.bytes) [parts, held] = [[], 0]; // not this file's beginning
    const headers: Record<string, string> = held ? { Range: `bytes=${held}-`, "If-Range": `"${entry.sha256}"` } : {};
    let resp: Response;
    try {
      resp = await fetcher(baseUrl + entry.url, headers, options.signal);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      continue;
    }
    if (resp.status === 416) {
      [parts, held] = [[], 0];
      continue;
    }
    if (resp.status !== 200 && resp.status !== 206) {
      const text = await resp.text();
      let payload: unknown = text;
      try { payload = JSON.parse(text); } catch { /* not a problem document */ }
      throw problemError(resp.status, payload, { requestId: resp.headers.get("x-request-id"), rateLimit: null,
        retryAfter: null, statusText: resp.statusText });
    }
    if (resp.status === 200) [parts, held] = [[], 0];
    const reader = resp.body?.getReader();
    if (!reader) continue;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(value);
        held += value.length;
        options.onProgress?.(held, entry.bytes);
      }
    } catch (err) {
      if (options.signal?.aborted) throw err;
      // broken mid-body: what arrived is kept, the next attempt asks for the rest
    }
  }
  if (held !== entry.bytes) throw new TransportError(`${entry.url}: not complete after ${attempts} attempts`);
  const body = join(parts, held);
  const digest = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", body as Uint8Array<ArrayBuffer>)),
    (b) => b.toString(16).padStart(2, "0")).join("");
  if (digest !== entry.sha256) {
    throw new ChecksumError(`${entry.url}: the bytes received have sha256 ${digest}, not ${entry.sha256}`);
  }
  return body;
}

function join(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
