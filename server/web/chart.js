// Candlestick chart with volume, drawn by TradingView's lightweight-charts (vendored standalone
// build, loaded by index.html as the global `LightweightCharts`, v5 API).

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
  constructor(container) {
    const lib = window.LightweightCharts;
    if (!lib) throw new Error("lightweight-charts is not loaded");
    this.lib = lib;
    this.container = container;
    this.chart = lib.createChart(container, {
      autoSize: true,
      layout: { background: { type: "solid", color: "transparent" }, fontSize: 11 },
      timeScale: { borderVisible: false, rightOffset: 2 },
      rightPriceScale: { borderVisible: false },
      crosshair: { mode: lib.CrosshairMode.Normal },
    });
    this.candles = this.chart.addSeries(lib.CandlestickSeries, { borderVisible: false });
    this.candles.priceScale().applyOptions({ scaleMargins: { top: 0.08, bottom: 0.28 } });
    this.volume = this.chart.addSeries(lib.HistogramSeries, {
      priceFormat: { type: "volume" },
      priceScaleId: "volume",
      lastValueVisible: false,
      priceLineVisible: false,
    });
    this.chart.priceScale("volume").applyOptions({ scaleMargins: { top: 0.78, bottom: 0 } });
    this.bars = [];
    this.applyColors();
  }

  /** Re-read the colours (after a language switch changes the up/down convention). */
  applyColors() {
    const p = palette();
    this.colors = p;
    this.chart.applyOptions({
      layout: { textColor: p.text },
      grid: { vertLines: { color: p.grid }, horzLines: { color: p.grid } },
    });
    this.candles.applyOptions({ upColor: p.up, downColor: p.down, wickUpColor: p.up, wickDownColor: p.down });
    if (this.bars.length) this.volume.setData(this.bars.map((b) => this._volumeBar(b)));
  }

  /** Show a kline series [{t, o, h, l, c, v}] with `decimals` price decimals. */
  setSeries(series, decimals) {
    this.bars = series.map((c) => ({ time: c.t, open: c.o, high: c.h, low: c.l, close: c.c, volume: c.v }));
    const minMove = 10 ** -decimals;
    this.candles.applyOptions({ priceFormat: { type: "price", precision: decimals, minMove } });
    this.candles.setData(this.bars.map(({ volume, ...bar }) => bar));
    this.volume.setData(this.bars.map((b) => this._volumeBar(b)));
    this.chart.timeScale().fitContent();
  }

  /** Move the live (last) candle with a new price. */
  updateLast(price) {
    const last = this.bars[this.bars.length - 1];
    if (!last || price === null || price === undefined) return;
    last.close = price;
    last.high = Math.max(last.high, price);
    last.low = Math.min(last.low, price);
    const { volume, ...bar } = last;
    this.candles.update(bar);
    this.volume.update(this._volumeBar(last));
  }

  _volumeBar(b) {
    const color = b.close >= b.open ? this.colors.up : this.colors.down;
    return { time: b.time, value: b.volume, color: withAlpha(color, 0.45) };
  }

  remove() {
    this.chart.remove();
  }
}
