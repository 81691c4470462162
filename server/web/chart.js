// Candlestick chart with volume, drawn by TradingView's lightweight-charts (vendored standalone
// build, loaded by index.html as the global `LightweightCharts`, v5 API).
//
// Volume has its own pane below the candles, with its own scale. The library's logo is turned off
// (it sat on the volume bars); index.html credits TradingView with a link under the chart instead, as
// the library's licence asks. A legend above the plot shows O/H/L/C and volume of the bar under the
// pointer (the last bar otherwise). Axis labels follow the page's language.

const MONTHS_EN = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const VOLUME_PANE_HEIGHT = 0.26; // share of the chart's height
const OLDER_MARGIN_BARS = 5; // scrolled to within this many bars of the oldest: load the page before it

/** The candle intervals of GET /api/v1/kline (`interval=`): bucket seconds; 1d is one candle per trading day. */
export const INTERVALS = { "1m": 60, "5m": 300, "15m": 900, "1h": 3600, "1d": 0 };
// intraday bars sit at exchange wall-clock time (Asia/Shanghai, UTC+8): the axis reads the same hours as the API
const EXCHANGE_OFFSET_S = 8 * 3600;

/** A bar's time: the trading day "YYYY-MM-DD" for 1d, else the bucket start (ISO 8601) as exchange-time seconds. */
export function barTime(t, interval) {
  return interval === "1d" ? t : Math.floor(Date.parse(t) / 1000) + EXCHANGE_OFFSET_S;
}

/**
 * The interval switch, placed before `anchor`: one button per interval (labels[interval]; labels.title names
 * the group); `onChange(interval)` when another is chosen. Drawn again on each call (a language switch).
 */
export function intervalSwitch(anchor, current, labels, onChange) {
  let group = document.getElementById("chart-interval");
  if (!group) {
    group = document.createElement("div");
    group.id = "chart-interval";
    group.className = "tabs";
    group.dataset.testid = "chart-interval";
    group.setAttribute("role", "tablist");
    Object.assign(group.style, { justifyContent: "flex-end", marginBottom: "6px" });
    anchor.before(group);
  }
  group.setAttribute("aria-label", labels.title);
  group.replaceChildren(...Object.keys(INTERVALS).map((interval) => {
    const b = document.createElement("button");
    Object.assign(b, { type: "button", className: "tab", textContent: labels[interval] ?? interval });
    b.setAttribute("role", "tab");
    b.setAttribute("aria-selected", String(interval === current));
    b.dataset.interval = interval;
    b.onclick = () => { if (interval !== current) onChange(interval); };
    return b;
  }));
}

/** A time-axis label of a business day ({year, month, day} or "YYYY-MM-DD") or a UNIX time, per language. */
export function axisLabel(time, tickType, lang) {
  let y;
  let m;
  let d;
  if (typeof time === "object") ({ year: y, month: m, day: d } = time);
  else if (typeof time === "string") [y, m, d] = time.split("-").map(Number);
  else {
    const t = new Date(time * 1000);
    [y, m, d] = [t.getUTCFullYear(), t.getUTCMonth() + 1, t.getUTCDate()];
    if (tickType >= 3) return `${String(t.getUTCHours()).padStart(2, "0")}:${String(t.getUTCMinutes()).padStart(2, "0")}`;
  }
  const zh = lang === "zh";
  if (tickType === 0) return zh ? `${y}年` : String(y);
  if (tickType === 1) return zh ? `${m}月` : MONTHS_EN[m - 1];
  return zh ? `${m}月${d}日` : `${MONTHS_EN[m - 1]} ${d}`; // a bare "19" says nothing of its month
}

/** Chart colours come from the page's CSS variables, so the up/down convention follows the language. */
function palette() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  return { up: v("--up"), down: v("--down"), text: v("--muted"), grid: v("--grid"), bg: v("--panel") };
}

function withAlpha(color, alpha) {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return color;
  const n = parseInt(m[1], 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

export class PriceChart {
  /** opts: {legend: element for the O/H/L/C/V legend, lang: "en"|"zh", labels: {open, high, low, close, volume}} */
  constructor(container, opts = {}) {
    const lib = window.LightweightCharts;
    if (!lib) throw new Error("lightweight-charts is not loaded");
    this.lib = lib;
    this.container = container;
    this.legend = opts.legend ?? null;
    this.lang = opts.lang ?? "en";
    this.labels = opts.labels ?? { open: "O", high: "H", low: "L", close: "C", volume: "Vol" };
    this.decimals = 2;
    this.interval = "1d";
    this.axisLabels = new Set(); // every time-axis label drawn, for the page's tests (data-axis-labels)
    this.chart = lib.createChart(container, {
      autoSize: true,
      layout: { background: { type: "solid", color: "transparent" }, fontSize: 11, attributionLogo: false },
      timeScale: {
        // fixed edges: the library moves a label that would cross the axis' left or right end inside it only when
        // the edges are fixed (a phone clipped "Nov 26" at the left and the last time label at the right); they
        // also keep the view within the bars (the newest bar at the right edge, no empty space past the oldest)
        borderVisible: false, fixLeftEdge: true, fixRightEdge: true,
        tickMarkFormatter: (time, tickType) => this._axisLabel(time, tickType),
      },
      rightPriceScale: { borderVisible: false },
      crosshair: { mode: lib.CrosshairMode.Normal },
    });
    this.candles = this.chart.addSeries(lib.CandlestickSeries, { borderVisible: false });
    this.candles.priceScale().applyOptions({ scaleMargins: { top: 0.08, bottom: 0.04 } });
    this.volume = this.chart.addSeries(lib.HistogramSeries, {
      priceFormat: { type: "volume" },
      lastValueVisible: false,
      priceLineVisible: false,
    }, 1); // its own pane, with its own (right) scale
    this.volume.priceScale().applyOptions({ scaleMargins: { top: 0.12, bottom: 0 }, borderVisible: false });
    this._sizePanes();
    this.chart.subscribeCrosshairMove((param) => this._showLegend(param));
    /** Called when the user scrolls to within a few bars of the oldest one shown (load older history). */
    this.onNeedOlder = null;
    // only a user's scroll asks for more (fitContent() on load also shows the oldest bar)
    this.userMoved = false;
    const nearOldest = (range) => range && range.from < OLDER_MARGIN_BARS && this.bars.length;
    for (const type of ["pointerdown", "wheel", "touchstart", "keydown"]) {
      container.addEventListener(type, () => {
        this.userMoved = true;
        // the left edge is fixed: with the oldest bar in view a drag to the right cannot move the view (no range
        // change follows), so reaching for the chart there asks for the page before it
        if (nearOldest(this.chart.timeScale().getVisibleLogicalRange())) this.onNeedOlder?.();
      }, { passive: true });
    }
    this.chart.timeScale().subscribeVisibleLogicalRangeChange((range) => {
      if (this.userMoved && nearOldest(range)) this.onNeedOlder?.();
    });
    this.bars = [];
    this.applyLanguage(this.lang, this.labels);
    this.applyColors();
  }

  _sizePanes() {
    const panes = this.chart.panes();
    if (panes.length < 2) return;
    panes[0].setStretchFactor(1 - VOLUME_PANE_HEIGHT);
    panes[1].setStretchFactor(VOLUME_PANE_HEIGHT);
  }

  /** Axis labels and legend words in `lang`. */
  applyLanguage(lang, labels) {
    this.lang = lang;
    if (labels) this.labels = labels;
    this.axisLabels.clear();
    this.chart.applyOptions({ localization: { locale: lang === "zh" ? "zh-CN" : "en-US", dateFormat: "yyyy-MM-dd" } });
    this._showLegend(null);
  }

  _axisLabel(time, tickType) {
    const label = axisLabel(time, tickType, this.lang);
    this.axisLabels.add(label);
    this.container.dataset.axisLabels = [...this.axisLabels].join("|");
    return label;
  }

  /** The bar under the pointer, or the last one when the pointer is elsewhere. */
  _showLegend(param) {
    if (!this.legend) return;
    const hovered = param?.time !== undefined ? this.bars.find((b) => b.time === param.time) : null;
    const bar = hovered ?? this.bars[this.bars.length - 1];
    if (!bar) {
      this.legend.textContent = "";
      return;
    }
    const fmt = (v, d) => new Intl.NumberFormat("en-US", { minimumFractionDigits: d, maximumFractionDigits: d })
      .format(v);
    const L = this.labels;
    const when = typeof bar.time === "string" ? bar.time
      : `${new Date(bar.time * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC+8`; // exchange time (bars
    // are shifted), labelled with its zone
    const parts = [
      [null, when],
      [L.open, fmt(bar.open, this.decimals)], [L.high, fmt(bar.high, this.decimals)],
      [L.low, fmt(bar.low, this.decimals)], [L.close, fmt(bar.close, this.decimals)],
      [L.volume, fmt(bar.volume, 0)],
    ];
    this.legend.replaceChildren(...parts.filter(([, v]) => v).map(([k, v]) => {
      const span = document.createElement("span");
      if (k) {
        const b = document.createElement("b");
        b.textContent = k;
        span.append(b, " ");
      }
      span.append(v);
      return span;
    }));
    this.legend.dataset.time = typeof bar.time === "string" ? bar.time : String(bar.time);
    this.legend.dataset.hover = String(Boolean(hovered));
  }

  /** Re-read the colours (after a language switch changes the up/down convention). */
  applyColors() {
    const p = palette();
    this.colors = p;
    this.chart.applyOptions({
      layout: { textColor: p.text, panes: { separatorColor: p.grid, separatorHoverColor: p.grid, enableResize: false } },
      grid: { vertLines: { color: p.grid }, horzLines: { color: p.grid } },
    });
    this.candles.applyOptions({ upColor: p.up, downColor: p.down, wickUpColor: p.up, wickDownColor: p.down });
    if (this.bars.length) this.volume.setData(this.bars.map((b) => this._volumeBar(b)));
  }

  /** Show a kline series [{t, o, h, l, c, v}] of `interval` (1m ... 1d) with `decimals` price decimals. */
  setSeries(series, decimals, interval = "1d") {
    this.interval = interval;
    this.chart.applyOptions({ timeScale: { timeVisible: interval !== "1d", secondsVisible: false } });
    this.bars = series.map((c) => this._bar(c));
    this.decimals = decimals;
    const minMove = 10 ** -decimals;
    this.candles.applyOptions({ priceFormat: { type: "price", precision: decimals, minMove } });
    this._draw();
    this.userMoved = false;
    this.chart.timeScale().fitContent();
    this._showLegend(null);
  }

  _bar(c) {
    return { time: barTime(c.t, this.interval), t: c.t, open: c.o, high: c.h, low: c.l, close: c.c, volume: c.v };
  }

  /** The oldest and newest bars' `t` as the API gave them (for range queries). */
  firstTime() {
    return this.bars[0]?.t ?? null;
  }

  lastTime() {
    return this.bars[this.bars.length - 1]?.t ?? null;
  }

  /** A candle frame or a refilled candle ({t, o, h, l, c, v}): replaces its bar, or appends a newer one. */
  upsert(candle) {
    const bar = this._bar(candle);
    const last = this.bars[this.bars.length - 1];
    if (!last || bar.time > last.time) this.bars.push(bar);
    else if (bar.time === last.time) this.bars[this.bars.length - 1] = bar;
    else {
      const i = this.bars.findIndex((b) => b.time === bar.time);
      if (i < 0) return; // older than the live window and not shown: nothing to redraw
      this.bars[i] = bar; // a final frame of the bucket before the live one: redraw all (update() takes the last only)
      this._draw();
      return;
    }
    const { volume, t, ...ohlc } = bar;
    this.candles.update(ohlc);
    this.volume.update(this._volumeBar(bar));
    if (this.legend?.dataset.hover !== "true") this._showLegend(null);
  }

  /** Older candles (ascending) before the first bar; keeps the view where it was. Returns how many were added. */
  prepend(series) {
    const first = this.bars[0];
    const older = series.map((c) => this._bar(c)).filter((b) => !first || b.time < first.time);
    if (!older.length) return 0;
    const scale = this.chart.timeScale();
    const range = scale.getVisibleLogicalRange();
    this.bars = older.concat(this.bars);
    this._draw();
    if (range) scale.setVisibleLogicalRange({ from: range.from + older.length, to: range.to + older.length });
    return older.length;
  }

  _draw() {
    this.candles.setData(this.bars.map(({ volume, t, ...bar }) => bar));
    this.volume.setData(this.bars.map((b) => this._volumeBar(b)));
  }

  /** Move the live (last) candle with a new price; an intraday price stamped `ts` (ISO 8601) past the last bucket
   * opens the next bucket (its volume is the server's: it shows at the next load). A daily price of a later
   * trading day `day` than the last candle's leaves that candle alone: the day's candle exists from its first tick
   * and comes with the next load or candle frame, never a copy of yesterday's. */
  updateLast(price, ts, day) {
    let last = this.bars[this.bars.length - 1];
    if (!last || price === null || price === undefined) return;
    const seconds = INTERVALS[this.interval];
    if (!seconds && day && day > last.time) return;
    const start = seconds && ts ? Math.floor(Date.parse(ts) / 1000 / seconds) * seconds + EXCHANGE_OFFSET_S : NaN;
    if (start > last.time) {
      last = { time: start, t: ts, open: price, high: price, low: price, close: price, volume: 0 };
      this.bars.push(last);
    }
    last.close = price;
    last.high = Math.max(last.high, price);
    last.low = Math.min(last.low, price);
    const { volume, t, ...bar } = last;
    this.candles.update(bar);
    this.volume.update(this._volumeBar(last));
    if (this.legend?.dataset.hover !== "true") this._showLegend(null);
  }

  _volumeBar(b) {
    const color = b.close >= b.open ? this.colors.up : this.colors.down;
    return { time: b.time, value: b.volume, color: withAlpha(color, 0.45) };
  }

  remove() {
    this.chart.remove();
  }
}
