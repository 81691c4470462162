// The part of the page anyone sees: the 8 market categories (the public snapshot, refreshed
// as its Cache-Control says), the latest news and research.

import { makeClient, settle } from "./calls.js";
import { el, replaceChildren, signClass } from "./dom.js";
import { decimalsOf, formatNumber, viewerTime, zonedClock } from "./quotes.js";

const FEED_REFRESH_MS = 5 * 60 * 1000;
const MIN_REFRESH_S = 2; // when max-age is 0 (a refresh is due now), do not hammer the public bucket

export class PublicView {
  /** ctx: {i18n, notices, onDemo(bool)} */
  constructor(ctx) {
    this.ctx = ctx;
    this.api = makeClient(); // the public endpoints take no key
    this.market = null;
    this.news = null;
    this.research = null;
    this.timers = new Map();
    this.failures = 0;
    this.live = null; // a keyed session's QuoteBook: the cards then show its prices (the same ticks as the table)
    this.stale = false;
    this.cardRows = new Map(); // instrument id -> its rows in the cards
  }

  /** Follow a keyed session's quotes (or the public snapshot again with null). */
  setLive(book) {
    this.live = book;
    this.renderMarket();
  }

  /** One live quote moved: update its card row, if a card shows it. */
  updateLive(row) {
    if (!this.live) return;
    for (const tr of this.cardRows.get(row.quote.id) ?? []) {
      this._fillPrice(tr, row.quote, row.decimals);
      tr.dataset.live = "true";
    }
  }

  start() {
    this._loop("market", () => this.loadMarket());
    this._loop("news", () => this.loadFeed("news"));
    this._loop("research", () => this.loadFeed("research"));
  }

  /** Run `task` now and again after the delay (ms) it resolves to. */
  async _loop(name, task) {
    const delay = await task();
    this.timers.set(name, setTimeout(() => this._loop(name, task), delay));
  }

  async loadMarket() {
    const r = await settle(this.api, "/api/market", { cache: "no-cache" });
    if (r.ok) {
      this.market = r.data;
      this.ctx.onDemo(Boolean(r.data.demo));
      this._settled("market");
      this.renderMarket();
      const seconds = Math.max(MIN_REFRESH_S, (r.maxAge ?? r.data.refreshSeconds) + 1);
      return seconds * 1000;
    }
    return this._failed("market", r);
  }

  async loadFeed(kind) {
    const r = await settle(this.api, `/api/${kind}`, { query: { limit: 8 }, cache: "no-cache" });
    if (r.ok) {
      this[kind] = r.data.items;
      this._settled(kind);
      this.renderFeed(kind);
      return FEED_REFRESH_MS;
    }
    return this._failed(kind, r);
  }

  _settled(name) {
    this.failures = 0;
    this._setStale(false);
    this.ctx.notices.clear(`public-${name}`);
    this.ctx.notices.clear("public-network");
  }

  /** Explain the failure and return when to try again (ms). */
  _failed(name, r) {
    const { i18n, notices } = this.ctx;
    if (r.status === 0) {
      this.failures += 1;
      this._setStale(true);
      const seconds = Math.min(60, 2 ** Math.min(this.failures, 6));
      notices.set("public-network", () => i18n.t("errNetwork", { s: seconds }), 0);
      return seconds * 1000;
    }
    if (r.status === 429) {
      const limit = r.rate?.limit;
      notices.set(`public-${name}`, () => i18n.t(limit ? "err429" : "err429NoLimit",
        { limit, s: r.retryAfter }), 429);
      return r.retryAfter * 1000;
    }
    notices.set(`public-${name}`, () => i18n.t("errServer",
      { status: r.status, detail: i18n.problem(r.problem, r.status) }),
      r.status);
    return 30000;
  }

  render() {
    this.renderMarket();
    this.renderFeed("news");
    this.renderFeed("research");
  }

  _setStale(stale) {
    if (this.stale === stale) return;
    this.stale = stale;
    document.querySelector(".markets").dataset.stale = String(stale);
    this._renderNote();
  }

  _renderNote() {
    const { i18n } = this.ctx;
    const note = document.getElementById("markets-note");
    if (!this.market) return;
    const updated = this.market.updated ?? "";
    let text;
    if (this.stale) text = i18n.t("marketsStale");
    else if (this.live) text = i18n.t("marketsLive");
    else text = i18n.t("marketsNote", { s: this.market.refreshSeconds });
    // live: each price has its own time in the live table; the snapshot's time would only mislead
    note.textContent = this.live && !this.stale ? text
      : `${text} · ${i18n.t("lastUpdate", { t: zonedClock(updated, i18n) })}`;
    note.title = viewerTime(updated, i18n);
    note.dataset.source = this.live ? "live" : "snapshot";
  }

  renderMarket() {
    const box = document.getElementById("categories");
    if (!this.market) return;
    box.setAttribute("aria-busy", "false");
    this._renderNote();
    this.cardRows = new Map();
    replaceChildren(box, this.market.categories.map((c) => this._category(c)));
  }

  /** "73.17 USD/bbl" in the page's language (the unit is localised data; priceText is English only). */
  _fillPrice(tr, q, decimals) {
    const { i18n } = this.ctx;
    const [price, pct] = [tr.cells[1], tr.cells[2]];
    replaceChildren(price, formatNumber(q.price, decimals), " ", el("span", { class: "unit" }, i18n.loc(q.unit)));
    pct.textContent = q.changePct === null ? "—" : `${formatNumber(q.changePct, 2, { sign: true })}%`;
    pct.className = `num mono ${signClass(q.changePct)}`;
  }

  _category(cat) {
    const { i18n } = this.ctx;
    const rows = cat.quotes.map((q) => {
      const live = this.live?.get(q.id);
      const tr = el("tr", { dataset: { id: q.id, live: String(Boolean(live)) } },
        el("td", { class: "name", title: i18n.loc(q.source) }, i18n.loc(q.name)),
        el("td", { class: "num mono price" }),
        el("td", { class: "num mono" }));
      if (live) this._fillPrice(tr, live.quote, live.decimals);
      else this._fillPrice(tr, q, decimalsOf(q.priceText));
      this.cardRows.set(q.id, [...(this.cardRows.get(q.id) ?? []), tr]);
      return tr;
    });
    return el("article", { class: "panel category", dataset: { testid: "category", id: cat.id } },
      el("header", { class: "panel-head" },
        el("h3", { class: "cat-name" }, i18n.loc(cat.name)),
        el("span", { class: "count" }, String(cat.count))),
      el("table", { class: "grid compact" }, el("tbody", {}, rows)),
    );
  }

  renderFeed(kind) {
    const { i18n } = this.ctx;
    const items = this[kind];
    if (!items) return;
    const list = document.getElementById(kind);
    if (!items.length) {
      replaceChildren(list, el("li", { class: "placeholder" }, i18n.t("empty")));
      return;
    }
    replaceChildren(list, items.map((item) => el("li", { dataset: { id: item.id } },
      el("div", { class: "feed-meta" },
        el("time", { datetime: item.publishedAt, title: viewerTime(item.publishedAt, i18n) },
          zonedClock(item.publishedAt, i18n, { date: true })),
        el("span", { class: "source" }, i18n.source(item.source)),
        item.author ? el("span", {}, i18n.t("by", { a: item.author })) : null),
      el("h3", {}, i18n.loc(item.title)),
      el("p", {}, i18n.loc(item.summary)),
      item.tags?.length ? el("div", { class: "tags" }, item.tags.map((t) => el("span", { class: "tag", dataset: { tag: t } }, i18n.tag(t)))) : null,
    )));
  }
}
