// The page's copy of the quotes: filled from a snapshot or a REST poll, moved by ticks.
// Pure data and formatting; rendering lives in app.js.

/** Decimal places shown in a priceText such as "2,415.00 CNY/t" (the server's choice per instrument). */
export function decimalsOf(priceText, fallback = 2) {
  const m = /^-?[\d,]+(?:\.(\d+))?/.exec(priceText ?? "");
  if (!m) return fallback;
  return m[1] ? m[1].length : 0;
}

const formatters = new Map();

/** A number with fixed decimals and thousands separators; "—" for null. */
export function formatNumber(value, decimals = 2, { sign = false } = {}) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  const key = `${decimals}:${sign}`;
  let fmt = formatters.get(key);
  if (!fmt) {
    fmt = new Intl.NumberFormat("en-US", {
      minimumFractionDigits: decimals,
      maximumFractionDigits: decimals,
      signDisplay: sign ? "exceptZero" : "auto",
    });
    formatters.set(key, fmt);
  }
  return fmt.format(value);
}

const COMPACT = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

/** A count in few characters (open interest in a narrow cell): "1,002", "270.3K", "2.7M"; "—" for null. */
export function formatCount(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  return Math.abs(value) < 10000 ? formatNumber(value, 0) : COMPACT.format(value);
}

/** "HH:MM:SS" of an ISO time with offset (the server's local time, Asia/Shanghai). */
export function clockOf(iso) {
  const m = /T(\d{2}:\d{2}:\d{2})/.exec(iso ?? "");
  return m ? m[1] : "—";
}

/** The zone of an ISO time, from its offset: "UTC+8", "UTC-5:30", "UTC". */
export function zoneOf(iso) {
  const m = /(Z|([+-])(\d{2}):(\d{2}))$/.exec(iso ?? "");
  if (!m) return "";
  if (m[1] === "Z" || (m[3] === "00" && m[4] === "00")) return "UTC";
  return `UTC${m[2]}${Number(m[3])}${m[4] === "00" ? "" : `:${m[4]}`}`;
}

/** The exchange-time label of an ISO time: "UTC+8"-style in both languages (one zone label on every page). */
export function zoneLabel(iso, i18n) {
  const zone = zoneOf(iso);
  return zone === "UTC+8" ? i18n.t("tzShanghai") : zone;
}

/** "HH:MM:SS UTC+8" (or "YYYY-MM-DD HH:MM UTC+8" with {date: true}): the time as the server wrote it, labelled. */
export function zonedClock(iso, i18n, { date = false } = {}) {
  if (!iso) return "—";
  const text = date ? iso.slice(0, 16).replace("T", " ") : clockOf(iso);
  const zone = zoneLabel(iso, i18n);
  return zone ? `${text} ${zone}` : text;
}

// every field asked for explicitly, 24-hour: with only timeZoneName set, sv-SE wrote hours 0-9 as one digit ("9:05:09")
const VIEWER_PARTS = new Intl.DateTimeFormat("en-US", {
  year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
  hourCycle: "h23", timeZoneName: "short",
});

/** The same instant in the viewer's own zone, for a tooltip: "Your time: 2026-11-22 18:11:25 UTC". */
export function viewerTime(iso, i18n) {
  const t = viewerStamp(iso);
  return t ? i18n.t("localTime", { t }) : "";
}

/** An instant in the viewer's own zone, "YYYY-MM-DD HH:MM:SS zone" ("" for no instant). */
export function viewerStamp(iso) {
  const d = new Date(iso ?? "");
  if (Number.isNaN(d.getTime())) return "";
  const p = Object.fromEntries(VIEWER_PARTS.formatToParts(d).map((part) => [part.type, part.value]));
  const two = (v) => v.padStart(2, "0");
  const hour = p.hour === "24" ? "00" : p.hour; // some engines write midnight as 24 even with h23
  return `${p.year}-${two(p.month)}-${two(p.day)} ${two(hour)}:${two(p.minute)}:${two(p.second)} ${p.timeZoneName}`;
}

/** -1, 0 or 1. */
export function direction(value) {
  if (!value) return 0;
  return value > 0 ? 1 : -1;
}

export class QuoteBook {
  constructor() {
    this.rows = new Map(); // id -> {quote, decimals, prevClose, moved}
    this.order = [];
  }

  get size() {
    return this.order.length;
  }

  /** Replace everything (a snapshot, or the first REST answer). */
  setAll(quotes) {
    this.rows.clear();
    this.order = quotes.map((q) => q.id);
    for (const q of quotes) this.rows.set(q.id, this._row(q, 0));
  }

  /** Merge polled quotes; returns the ids whose price changed, each with its direction. */
  merge(quotes) {
    const changed = [];
    for (const q of quotes) {
      const old = this.rows.get(q.id);
      const moved = old ? direction((q.price ?? 0) - (old.quote.price ?? 0)) : 0;
      this.rows.set(q.id, this._row(q, moved));
      if (!old) this.order.push(q.id);
      if (moved) changed.push(q.id);
    }
    return changed;
  }

  /** Apply a tick {id, price, change, ts, seq; a futures tick also bid, ask, oi, vol}; returns the row, or null
   * for an unknown id. */
  applyTick(tick) {
    const row = this.rows.get(tick.id);
    if (!row) return null;
    const prevClose = tick.price - tick.change;
    row.moved = direction(tick.price - (row.quote.price ?? tick.price));
    row.quote = {
      ...row.quote,
      price: tick.price,
      change: tick.change,
      changePct: prevClose ? (100 * tick.change) / prevClose : null,
      updated: tick.ts,
      ...(tick.oi === undefined ? {} : { bid: tick.bid, ask: tick.ask, openInterest: tick.oi, volume: tick.vol }),
      ...(tick.contract === undefined ? {} : { contract: tick.contract }), // a product's main contract (SPEC 19)
    };
    row.prevClose = prevClose;
    return row;
  }

  get(id) {
    return this.rows.get(id) ?? null;
  }

  list() {
    return this.order.map((id) => this.rows.get(id));
  }

  _row(quote, moved) {
    const prevClose = quote.price !== null && quote.change !== null ? quote.price - quote.change : null;
    return { quote, decimals: decimalsOf(quote.priceText), prevClose, moved };
  }
}
