// Everything a key unlocks: live quotes (WebSocket for professional/enterprise keys, polling
// within the plan's budget otherwise), the candle chart, spreads and inventories.
//
// Modes: "checking" -> "live" | "connecting" | "reconnecting" | "polling" | "fallback" | "paused" | "offline".
// The plan comes from the RateLimit-Policy header of the first keyed answer ("free", "professional", ...).
// A browser cannot read why a WebSocket handshake was refused, so after two attempts that never
// opened the page polls while it keeps retrying the socket with backoff.

import { makeClient, settle } from "./calls.js";
import { INTERVALS, PriceChart, intervalSwitch } from "./chart.js";
import { renderCurve } from "./curve.js";
import { el, flash, replaceChildren, signClass } from "./dom.js";
import { CloseCode, QuoteStream } from "./market-client.js";
import { QuoteBook, clockOf, formatCount, formatNumber, viewerTime, zonedClock } from "./quotes.js";
import { VenuePanel } from "./venues.js";

const SIDE_REFRESH_MS = 60000; // spreads and inventories
const POLL_SHARE = 0.5; // polling may use half of the plan's budget; the rest is for charts and tables
const RESYNC_MIN_MS = 10000;
const OLDER_PAGE = 300; // candles per scroll-left page
const FAILURES_BEFORE_FALLBACK = 2;
const SHUT_POLL_MS = 30000; // every venue shown is shut: prices cannot move, the budget is kept for later
const KINDS = ["all", "oil", "chem", "fx"];

export class KeyedSession {
  /** ctx: {i18n, notices, wsUrl(key), onRejected(status), onQuotes(book), onQuote(row)} */
  constructor(key, ctx) {
    this.key = key;
    this.ctx = ctx;
    this.book = new QuoteBook();
    this.api = makeClient(key);
    this.gaps = 0; // gap events of the stream (seqs it skipped and could not recover)
    this.staleStream = false; // two heartbeat intervals without a frame: the stream client replaces the connection
    this.dirty = new Map(); // rows with a tick not drawn yet (drawn on the next frame)
    this.flushQueued = false;
    this.mode = "checking";
    this.plan = "";
    this.rate = null;
    this.rateAt = 0;
    this.retryAt = 0;
    this.ticks = 0;
    this.resyncs = 0;
    this.lastResync = -Infinity;
    this.kind = "all";
    this.chartId = null;
    this.chartInterval = "1d";
    this.chart = null;
    this.spreads = null;
    this.inventory = null;
    this.venues = new VenuePanel(ctx);
    this.socket = null;
    this.pollTimer = null;
    this.timers = [];
    this.stopped = false;
    this.netFailures = 0;
    this.pollMode = null; // "polling" | "fallback" while quotes are polled
    this.shut = false; // every venue of the quotes shown is closed (or on a break)
    this.onResize = () => this._scrollCue();
  }

  /** Check the key and start; resolves to "ok", "unauthorized" or "stopped". */
  async start() {
    this._renderStatus();
    this.timers.push(setInterval(() => this._renderStatus(), 500));
    for (;;) {
      const r = await this.call("/api/v1/quotes");
      if (this.stopped) return "stopped";
      if (r.status === 401) return "unauthorized";
      if (r.ok) {
        this._begin(r);
        return "ok";
      }
      await sleep(this._retryDelay(r));
    }
  }

  stop() {
    this.stopped = true;
    this.socket?.stop();
    clearTimeout(this.pollTimer);
    for (const t of this.timers) clearInterval(t);
    window.removeEventListener("resize", this.onResize);
    this.chart?.remove();
    this.chart = null;
    for (const id of ["rate", "network", "server", "chart", "revoked"]) this.ctx.notices.clear(id);
  }

  _begin(first) {
    this.plan = first.rate?.policy ?? "";
    this.book.setAll(first.data.quotes);
    document.getElementById("keyed").hidden = false;
    this._renderTabs();
    this._renderQuotes();
    this._renderChartSelect();
    this.selectChart(this.chartId ?? first.data.quotes[0]?.id);
    this.loadSide();
    this.timers.push(setInterval(() => this.loadSide(), SIDE_REFRESH_MS));
    window.addEventListener("resize", this.onResize);
    document.getElementById("spreads-scroll").onscroll = this.onResize;
    if (this.plan === "free") this._poll("polling");
    else this._openSocket();
  }

  /** A keyed GET (an OpenAPI path with {params, query}) that keeps the budget and the notices up to date. */
  async call(path, options = {}) {
    const r = await settle(this.api, path, options);
    if (this.stopped) return r;
    const { i18n, notices } = this.ctx;
    if (r.rate) {
      this.rate = r.rate;
      this.rateAt = performance.now();
    }
    if (r.status === 401) {
      this.ctx.onRejected(401);
    } else if (r.status === 429) {
      const limit = r.rate?.limit ?? this.rate?.limit;
      notices.set("rate", () => i18n.t(limit ? "err429" : "err429NoLimit", { limit, s: r.retryAfter }), 429);
    } else if (r.status === 0) {
      this.netFailures += 1;
      notices.set("network", () => i18n.t("errNetwork", { s: Math.ceil(this._netDelay() / 1000) }), 0);
    } else if (r.status === 403) {
      notices.set("server", () => i18n.t("err403"), 403);
    } else if (!r.ok && r.status !== 404) {
      notices.set("server", () => i18n.t("errServer",
        { status: r.status, detail: i18n.problem(r.problem, r.status) }),
        r.status);
    } else {
      this.netFailures = 0;
      for (const id of ["rate", "network", "server"]) notices.clear(id);
    }
    return r;
  }

  _netDelay() {
    return Math.min(30000, 1000 * 2 ** Math.min(this.netFailures, 5));
  }

  _retryDelay(r) {
    if (r.status === 429) return r.retryAfter * 1000;
    if (r.status === 0) return this._netDelay();
    return 10000;
  }

  // --- live quotes: WebSocket ---------------------------------------------------------------

  _openSocket() {
    this.mode = "connecting";
    const stream = new QuoteStream({
      url: this.ctx.wsUrl(), key: this.key, keyIn: "query", ids: this.book.order, ...this._candleSubscription(),
      heartbeatMs: this.ctx.heartbeatMs,
    });
    this.socket = stream;
    stream.on("state", (s) => this._onSocketState(s));
    stream.on("snapshot", (msg) => {
      this.book.setAll(msg.quotes);
      this._renderQuotes();
      this._streamLive();
    });
    stream.on("subscribed", (msg) => {
      if (msg.recovered) this._streamLive(); // exactly the missed ticks follow
    });
    stream.on("tick", (tick) => this._onTick(tick));
    stream.on("candle", (candle) => this._onCandle(candle));
    stream.on("heartbeat", () => this._streamLive());
    stream.on("status", (msg) => {
      this.venues.update(msg);
      this._marketChanged();
    });
    stream.on("gap", (gap) => this._onGap(gap));
    stream.on("dead", () => this._streamStale(true));
    stream.on("close", (c) => {
      if (c.code !== CloseCode.REVOKED || this.stopped) return;
      this.ctx.notices.set("revoked", () => this.ctx.i18n.t("errRevoked"), 401);
      this.call("/api/v1/quotes"); // answers 401, which signs the key out
    });
    stream.start();
  }

  /** Candle frames for the chart's instrument and interval only (they drive its last bar). */
  _candleSubscription() {
    return this.chartId ? { candles: [this.chartInterval], candleIds: [this.chartId] } : {};
  }

  _onSocketState(s) {
    if (this.stopped) return;
    if (s.state === "open") {
      this.mode = "live";
      this.pollMode = null;
      clearTimeout(this.pollTimer);
      this.ctx.notices.clear("network");
    } else if (s.state === "waiting") {
      this.retryAt = performance.now() + s.retryInMs;
      if (s.failuresBeforeOpen >= FAILURES_BEFORE_FALLBACK) {
        // polling says which it is: HTTP answers (the socket was refused: "fallback") or nothing does ("offline")
        if (this.pollMode !== "fallback") this._poll("fallback");
      } else if (this.pollMode !== "fallback") {
        this.mode = "reconnecting";
      }
    }
    this._renderStatus();
  }

  /** The stream delivers again: drop the stale banner; a stream that came back refills the chart's missed bars. */
  _streamLive() {
    if (!this.staleStream) return;
    this._streamStale(false);
    this._refillChart();
  }

  /** Two heartbeat intervals without a frame (SPEC 14): say so until the stream delivers again. */
  _streamStale(stale) {
    this.staleStream = stale;
    const { i18n, notices } = this.ctx;
    const seconds = Math.round((this.socket?.heartbeatMs ?? 5000) * 2 / 1000);
    if (stale) notices.set("stale", () => i18n.t("errStale", { s: seconds }), "stale");
    else notices.clear("stale");
    this._renderStatus();
  }

  /** Prices change at once; rows are redrawn once per frame, so a burst (a resume replaying hundreds of ticks)
   * costs one redraw per row, not one per tick. */
  _onTick(tick) {
    this.ticks += 1;
    const row = this.book.applyTick(tick);
    if (!row) return;
    this.dirty.set(tick.id, row);
    if (this.flushQueued) return;
    this.flushQueued = true;
    requestAnimationFrame(() => this._flushRows());
  }

  _flushRows() {
    this.flushQueued = false;
    if (this.stopped) return;
    for (const row of this.dirty.values()) this._updateRow(row);
    if (this.dirty.has(this.chartId)) this._renderChartMeta(); // the bar itself follows candle frames
    this.dirty.clear();
  }

  _onCandle(candle) {
    if (this.chartShown !== `${candle.id}|${candle.interval}` || !this.chart) return;
    this.chart.upsert(candle);
    document.getElementById("chart").dataset.liveBar = `${candle.t}|${candle.c}|${candle.final}`;
  }

  _onGap(gap) {
    this.gaps += 1;
    // a refused resume brings a fresh snapshot, a heartbeat-found gap a resume; a conflated (slow) reader
    // still has the latest price, the chart's bars are refilled from a range query
    if (gap.reason !== "heartbeat") this._refillChart();
    if (gap.reason === "seq_jump") this._resync();
  }

  /** After a seq jump, ask for a fresh snapshot (a subscribe answers with one), at most every 10 s. */
  _resync() {
    const now = performance.now();
    if (now - this.lastResync < RESYNC_MIN_MS || !this.socket) return;
    if (this.socket.subscribe(this.book.order, this._candleSubscription())) {
      this.lastResync = now;
      this.resyncs += 1;
    }
  }

  // --- live quotes: polling -----------------------------------------------------------------

  _poll(mode) {
    this.pollMode = mode;
    // a fallback is only named once a poll has answered: until then the server may simply be unreachable
    if (mode === "polling" || this.mode === "live" || this.mode === "connecting") this.mode = mode;
    clearTimeout(this.pollTimer);
    const loop = this.pollLoop = (this.pollLoop ?? 0) + 1; // a poll in flight from an older loop ends there
    // the first poll comes at the plan's pace even while the markets are shut: it says whether the server answers
    this.pollTimer = setTimeout(() => this._pollOnce(mode, loop), this._pollIntervalMs(false));
    this._renderStatus();
  }

  async _pollOnce(mode, loop) {
    const r = await this.call("/api/v1/quotes");
    if (this.stopped || loop !== this.pollLoop || (mode === "fallback" && this.pollMode !== "fallback")) return;
    let delay = this._pollIntervalMs();
    if (r.ok) {
      this.mode = mode;
      for (const id of this.book.merge(r.data.quotes)) this._updateRow(this.book.get(id));
      const chartRow = this.chartId && this.book.get(this.chartId);
      if (chartRow) {
        this.chart?.updateLast(chartRow.quote.price, chartRow.quote.updated, chartRow.quote.tradingDay);
        this._renderChartMeta();
      }
    } else if (r.status === 401) {
      return;
    } else {
      delay = this._retryDelay(r);
      this.mode = r.status === 429 ? "paused" : "offline";
      this.retryAt = performance.now() + delay;
    }
    this._renderStatus();
    this.pollTimer = setTimeout(() => this._pollOnce(mode, loop), delay);
  }

  /** Poll with a share of the plan's requests per minute; slow down when the bucket runs low. */
  _pollIntervalMs(slowWhenShut = true) {
    if (this.shut && slowWhenShut) return SHUT_POLL_MS;
    const limit = this.rate?.limit || 60;
    let ms = Math.ceil(60000 / (limit * POLL_SHARE));
    if (this.rate && this.rate.remaining < 5) ms = Math.max(ms, (60000 / limit) * 2);
    return Math.min(10000, Math.max(1000, ms));
  }

  // --- quotes table ---------------------------------------------------------------------

  _renderTabs() {
    const { i18n } = this.ctx;
    const tabs = KINDS.map((kind) => el("button", {
      type: "button", role: "tab", class: "tab", "aria-selected": String(kind === this.kind),
      dataset: { kind }, onclick: () => { this.kind = kind; this._renderTabs(); this._applyFilter(); },
    }, kind === "all" ? i18n.t("all") : i18n.t(`kind_${kind}`)));
    replaceChildren(document.getElementById("kind-tabs"), tabs);
  }

  _applyFilter() {
    for (const tr of document.getElementById("live-body").rows) {
      tr.hidden = this.kind !== "all" && tr.dataset.kind !== this.kind;
    }
  }

  _renderQuotes() {
    const { i18n } = this.ctx;
    const rows = this.book.list().map((row) => {
      const q = row.quote;
      const tr = el("tr", {
        dataset: { id: q.id, kind: q.kind }, tabindex: "0", class: q.id === this.chartId ? "selected" : null,
        onclick: () => this.selectChart(q.id),
        onkeydown: (e) => { if (e.key === "Enter") this.selectChart(q.id); },
      },
        // on a phone the unit and time columns give way to a second line under the name
        el("td", { class: "name", title: i18n.loc(q.source) }, el("span", { class: "nm" }, i18n.loc(q.name)),
          el("span", { class: "mkt", dataset: { venue: q.venue ?? "" } }),
          el("span", { class: "sub" }, el("span", { class: "sub-unit" }, i18n.loc(q.unit)), " · ",
            el("span", { class: "sub-time mono" }))),
        el("td", { class: "num mono price" }),
        el("td", { class: "num mono change opt" }),
        el("td", { class: "num mono pct" }),
        el("td", { class: "num mono opt book" }), // futures: bid / ask, then settle and open interest (SPEC 19)
        el("td", { class: "opt unit" }, i18n.loc(q.unit)),
        el("td", { class: "num opt mono time" }),
      );
      this._fillRow(tr, row);
      return tr;
    });
    replaceChildren(document.getElementById("live-body"), rows);
    this.venues.renderMarket(this.book);
    this._applyFilter();
    this.ctx.onQuotes?.(this.book);
  }

  _fillRow(tr, row) {
    const q = row.quote;
    const cls = signClass(q.change);
    const cells = tr.cells;
    cells[1].textContent = formatNumber(q.price, row.decimals);
    cells[2].textContent = formatNumber(q.change, row.decimals, { sign: true });
    cells[3].textContent = q.changePct === null ? "—" : `${formatNumber(q.changePct, 2, { sign: true })}%`;
    cells[2].className = `num mono change opt ${cls}`;
    cells[3].className = `num mono pct ${cls}`;
    this._fillBook(cells[4], q, row.decimals);
    cells[6].textContent = clockOf(q.updated); // the column header names the zone
    cells[6].title = viewerTime(q.updated, this.ctx.i18n);
    cells[0].lastChild.lastChild.textContent = zonedClock(q.updated, this.ctx.i18n);
  }

  /** A futures quote's book in one narrow cell (two short lines, prices without separators: the table must not
   * scroll sideways at 1440 px); "—" for spot and FX. */
  _fillBook(cell, q, decimals) {
    if (q.bid === undefined) {
      cell.textContent = "—";
      return;
    }
    const plain = (v) => (v === null || v === undefined ? "—" : v.toFixed(decimals));
    replaceChildren(cell, [
      `${plain(q.bid)} / ${plain(q.ask)}`,
      el("span", { class: "sub-book" }, this.ctx.i18n.t("settleOi", {
        s: plain(q.settle ?? q.prevSettle), oi: formatCount(q.openInterest) })),
    ]);
  }

  _updateRow(row) {
    const tr = document.querySelector(`#live-body tr[data-id="${CSS.escape(row.quote.id)}"]`);
    if (!tr) return;
    this._fillRow(tr, row);
    flash(tr.cells[1], row.moved);
    this.ctx.onQuote?.(row);
  }

  // --- chart ----------------------------------------------------------------------------

  _renderChartSelect() {
    const { i18n } = this.ctx;
    const select = document.getElementById("chart-select");
    replaceChildren(select, this.book.list().map(({ quote }) =>
      el("option", { value: quote.id, selected: quote.id === this.chartId }, i18n.loc(quote.name))));
    select.onchange = () => this.selectChart(select.value);
    const days = document.getElementById("chart-days");
    days.onchange = () => this.selectChart(this.chartId);
    days.disabled = this.chartInterval !== "1d"; // days counts daily candles only
    const labels = { title: i18n.t("chartInterval") };
    for (const interval of Object.keys(INTERVALS)) labels[interval] = i18n.t(`interval_${interval}`);
    intervalSwitch(document.getElementById("chart").parentElement, this.chartInterval, labels, (interval) => {
      this.chartInterval = interval;
      this._renderChartSelect();
      this.selectChart(this.chartId);
    });
  }

  async selectChart(id) {
    if (!id) return;
    const changed = id !== this.chartId || this.chartInterval !== this.candleInterval;
    this.chartId = id;
    this.chartShown = null;
    this.candleInterval = this.chartInterval;
    if (changed && this.socket) this.socket.subscribe(this.book.order, this._candleSubscription());
    document.getElementById("chart-select").value = id;
    for (const tr of document.getElementById("live-body").rows) tr.classList.toggle("selected", tr.dataset.id === id);
    const { i18n, notices } = this.ctx;
    const box = document.getElementById("chart");
    box.setAttribute("aria-busy", "true");
    document.getElementById("chart-meta").textContent = i18n.t("chartLoading");
    const interval = this.chartInterval;
    const query = interval === "1d" ? { days: Number(document.getElementById("chart-days").value) } : { interval };
    const r = await this.call("/api/v1/kline/{id}", { params: { id }, query });
    if (this.stopped || id !== this.chartId || interval !== this.chartInterval) return;
    this._showCurve(id);
    box.setAttribute("aria-busy", "false");
    if (!r.ok) {
      if (r.status !== 401) {
        notices.set("chart", () => i18n.t("errChart", { detail: i18n.problem(r.problem, r.status) }), r.status);
      }
      return;
    }
    notices.clear("chart");
    try {
      this.chart ??= new PriceChart(box, { legend: document.getElementById("chart-legend"), ...this._chartLanguage() });
    } catch {
      notices.set("chart", () => i18n.t("errNoChartLib"), 0);
      return;
    }
    this.chart.setSeries(r.data.series, this.book.get(id)?.decimals ?? 2, interval);
    this.chart.onNeedOlder = () => this._loadOlder(id, interval);
    this.chartShown = `${id}|${interval}`;
    box.dataset.instrument = id;
    box.dataset.interval = interval;
    box.dataset.candles = String(r.data.series.length);
    delete box.dataset.oldest; // another series: its older pages are not asked for yet
    this._renderChartMeta();
  }

  /** The user scrolled to the oldest bar shown: load the page before it with a range query (SPEC 14). */
  async _loadOlder(id, interval) {
    const first = this.chart?.firstTime();
    const box = document.getElementById("chart");
    if (!first || this.loadingOlder || box.dataset.oldest === "true") return; // nothing older is held: asked already
    this.loadingOlder = true;
    const r = await this.call("/api/v1/kline/{id}", { params: { id }, query: { interval, to: first, limit: OLDER_PAGE } });
    this.loadingOlder = false;
    if (this.stopped || this.chartShown !== `${id}|${interval}` || !r.ok) return;
    const added = this.chart.prepend(r.data.series);
    box.dataset.candles = String(this.chart.bars.length);
    if (added === 0) box.dataset.oldest = "true"; // nothing older is held
  }

  /** Bars the stream could not replay (candle frames are not resumed): fetch from the last bar shown on. */
  async _refillChart() {
    const last = this.chart?.lastTime();
    const shown = this.chartShown;
    if (!last || !shown) return;
    const [id, interval] = shown.split("|");
    const r = await this.call("/api/v1/kline/{id}", { params: { id }, query: { interval, from: last } });
    if (this.stopped || this.chartShown !== shown || !r.ok) return;
    for (const candle of r.data.series) this.chart.upsert(candle);
  }

  _chartLanguage() {
    const { i18n } = this.ctx;
    return { lang: i18n.lang, labels: { open: i18n.t("legendOpen"), high: i18n.t("legendHigh"),
      low: i18n.t("legendLow"), close: i18n.t("legendClose"), volume: i18n.t("legendVolume") } };
  }

  /** A futures product's curve under the chart (SPEC 19); nothing for any other instrument. */
  async _showCurve(id) {
    const box = document.getElementById("curve");
    const row = this.book.get(id);
    if (!row || row.quote.contract === undefined) {
      box.hidden = true;
      return;
    }
    const r = await this.call("/api/v1/curve/{product}", { params: { product: id } });
    if (this.stopped || id !== this.chartId) return;
    if (!r.ok) {
      box.hidden = true;
      return;
    }
    renderCurve(box, r.data, (key, vars) => this.ctx.i18n.t(key, vars));
  }

  _renderChartMeta() {
    const row = this.book.get(this.chartId);
    if (!row) return;
    const { i18n } = this.ctx;
    const q = row.quote;
    const pct = q.changePct === null ? "" : ` (${formatNumber(q.changePct, 2, { sign: true })}%)`;
    replaceChildren(document.getElementById("chart-meta"),
      el("strong", {}, i18n.loc(q.name)), " ",
      el("span", { class: "mono" }, `${formatNumber(q.price, row.decimals)} ${i18n.loc(q.unit)}`), " ",
      el("span", { class: `mono ${signClass(q.change)}` },
        `${formatNumber(q.change, row.decimals, { sign: true })}${pct}`),
      el("span", { class: "hint" }, ` · ${i18n.loc(q.source)}`),
      ...(q.contract ? [el("span", { class: "main-contract", "data-testid": "main-contract" },
        ` · ${i18n.t("mainContract", { contract: q.contract, settle: q.settle ?? q.prevSettle ?? "—",
                                       oi: q.openInterest ?? "—" })}`)] : []));
  }

  /** The venues' state changed: redraw it; polling follows at once when the markets open or all shut. */
  _marketChanged() {
    const shut = this.venues.renderMarket(this.book);
    if (shut === this.shut) return;
    this.shut = shut;
    if (this.pollMode) this._poll(this.pollMode);
  }

  // --- spreads and inventories ------------------------------------------------------------

  async loadSide() {
    const [spreads, inventory] = [await this.call("/api/v1/spreads"), await this.call("/api/v1/inventory")];
    const venues = await this.call("/api/v1/venues");
    if (this.stopped) return;
    if (spreads.ok) this.spreads = spreads.data.spreads;
    if (inventory.ok) this.inventory = inventory.data.items;
    if (venues.ok) {
      this.venues.set(venues.data.venues);
      this._marketChanged();
    }
    this._renderSpreads();
    this._renderInventory();
  }

  _renderSpreads() {
    if (!this.spreads) return;
    const { i18n } = this.ctx;
    const n = (v, d = 2) => formatNumber(v, d);
    const pct = (v) => `${formatNumber(v * 100, 1)}%`;
    const parity = (s) => i18n.t("parityRow", { cfr: n(s.cfrUsd), fx: n(s.fx, 4), tariff: pct(s.tariff),
      vat: pct(s.vat), fee: n(s.portFee, 0), intl: n(s.intl) });
    replaceChildren(document.getElementById("spreads-body"), this.spreads.map((s) => el("tr", {
      // the server's note (English) names the contract and spot market; in Chinese, the formula with numbers
      title: i18n.lang === "en" ? s.note : parity(s), dataset: { pair: s.pair },
    },
      el("td", { class: "name" }, el("span", { class: "nm" }, i18n.t(`pair_${s.pair}`)),
        el("span", { class: "contract" }, i18n.t(`futures_${s.pair}`))),
      el("td", { class: "num mono", title: i18n.t("futuresTitle", { c: i18n.t(`futures_${s.pair}`) }) }, n(s.shfe)),
      el("td", { class: "num mono", title: i18n.t(`spot_${s.pair}`) }, n(s.dce)),
      el("td", { class: "num mono" }, n(s.cfrUsd)),
      el("td", { class: "num mono" }, n(s.fx, 4)),
      el("td", { class: "num mono" }, pct(s.tariff)),
      el("td", { class: "num mono" }, pct(s.vat)),
      el("td", { class: "num mono" }, n(s.portFee, 0)),
      el("td", { class: "num mono strong parity", title: parity(s) }, n(s.intl)),
      el("td", { class: `num mono strong ${signClass(s.basis)}` }, formatNumber(s.basis, 2, { sign: true })),
      el("td", { class: `num mono ${signClass(s.basisPct)}` }, `${formatNumber(s.basisPct, 2, { sign: true })}%`),
    )));
    this._scrollCue();
  }

  /** A table wider than its box says so: a shadow on the side with more columns, and a line under it. */
  _scrollCue() {
    const box = document.getElementById("spreads-scroll");
    const wrap = document.getElementById("spreads-wrap");
    const cue = document.getElementById("spreads-cue");
    const more = box.scrollWidth - box.clientWidth > 1;
    wrap.dataset.more = !more ? "none" : box.scrollLeft + box.clientWidth >= box.scrollWidth - 1 ? "left" : "right";
    cue.hidden = !more;
    cue.textContent = more ? this.ctx.i18n.t("scrollCue", { n: box.querySelectorAll("thead th").length }) : "";
  }

  _renderInventory() {
    if (!this.inventory) return;
    const { i18n } = this.ctx;
    replaceChildren(document.getElementById("inventory-body"), this.inventory.map((item) => {
      const arrow = item.wow > 0 ? "▲" : item.wow < 0 ? "▼" : "▬";
      return el("tr", { dataset: { id: item.id } },
        el("td", { class: "name" }, el("span", { class: "nm" }, i18n.loc(item.name)),
          el("span", { class: "sub" }, i18n.t(`type_${item.type}`))),
        el("td", { class: "opt" }, i18n.t(`type_${item.type}`)),
        el("td", { class: "num mono" }, `${formatNumber(item.level, 1)} ${i18n.unit(item.unit)}`),
        el("td", { class: `num mono wow ${signClass(item.wow)}` },
          el("span", { class: "arrow", "aria-hidden": "true" }, arrow), " ",
          `${formatNumber(item.wow, 1, { sign: true })} `,
          el("span", { class: "wow-pct" }, `(${formatNumber(item.wowPct, 2, { sign: true })}%)`)),
      );
    }));
  }

  // --- status line ------------------------------------------------------------------------

  _renderStatus() {
    if (this.stopped) return;
    const { i18n } = this.ctx;
    const status = document.getElementById("status");
    status.hidden = false;
    const conn = document.getElementById("conn");
    conn.dataset.mode = this.mode;
    const stale = this.staleStream || ["reconnecting", "paused", "offline"].includes(this.mode);
    conn.dataset.stale = String(this.staleStream);
    if (this.socket) conn.dataset.heartbeatMs = String(this.socket.heartbeatMs); // silence for twice this: stale
    document.querySelector(".quotes-panel").dataset.stale = String(stale);
    document.getElementById("categories").dataset.liveStale = String(stale); // the cards on live prices too
    conn.textContent = this._modeText();
    document.getElementById("budget").textContent = this._budgetText();
    const hint = { polling: "hintFree", fallback: "hintFallback", offline: "hintOffline" }[this.mode];
    document.getElementById("mode-hint").textContent = hint ? i18n.t(hint) : "";
    document.getElementById("counters").textContent = this.socket
      ? [i18n.t("ticks", { n: this.ticks }), i18n.t("gaps", { n: this.gaps }),
        i18n.t("resyncs", { n: this.resyncs })].join(" · ")
      : "";
    const badge = document.getElementById("plan-badge");
    badge.textContent = this.plan ? i18n.t("plan", { plan: this._planName() }) : "";
    badge.dataset.plan = this.plan;
  }

  _planName() {
    const key = { free: "planFree", professional: "planProfessional", enterprise: "planEnterprise" }[this.plan];
    return key ? this.ctx.i18n.t(key) : this.plan;
  }

  _modeText() {
    const { i18n } = this.ctx;
    const s = Math.max(0, Math.ceil((this.retryAt - performance.now()) / 1000));
    const every = Math.round(this._pollIntervalMs() / 100) / 10;
    if (this.staleStream && this.mode !== "fallback") return i18n.t("modeStale");
    switch (this.mode) {
      case "checking": return i18n.t("checkingKey");
      case "connecting": return i18n.t("modeConnecting");
      case "live": return i18n.t("modeLive");
      case "reconnecting": return i18n.t("modeReconnecting", { s, n: this.socket?.backoff.attempt ?? 1 });
      case "polling": return i18n.t("modePolling", { s: every });
      case "fallback": return i18n.t("modePollingFallback", { s: every });
      case "paused": return i18n.t("modePaused", { s });
      case "offline": return i18n.t("modeOffline", { s });
      default: return "";
    }
  }

  _budgetText() {
    if (!this.rate) return "";
    const { i18n } = this.ctx;
    const { remaining, limit, reset } = this.rate;
    const left = Math.max(0, Math.ceil(reset - (performance.now() - this.rateAt) / 1000));
    const text = i18n.t("budget", { remaining, limit });
    return left > 0 ? `${text} · ${i18n.t("budgetFull", { s: left })}` : text;
  }

  /** Re-render everything in the current language. */
  render() {
    if (this.stopped || !this.book.size) return;
    this._renderTabs();
    this._renderQuotes();
    this._renderChartSelect();
    this._renderChartMeta();
    this._renderSpreads();
    this._renderInventory();
    this.venues.render();
    this.chart?.applyColors();
    if (this.chart) {
      const { lang, labels } = this._chartLanguage();
      this.chart.applyLanguage(lang, labels);
    }
    this._renderStatus();
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
