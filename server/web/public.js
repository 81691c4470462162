// The part of the page anyone sees: the 8 market categories (the public snapshot, refreshed
// as its Cache-Control says), the latest news and research.

import { getJson } from "./api.js";
import { el, replaceChildren, signClass } from "./dom.js";
import { formatNumber } from "./quotes.js";

const FEED_REFRESH_MS = 5 * 60 * 1000;
const MIN_REFRESH_S = 2; // when max-age is 0 (a refresh is due now), do not hammer the public bucket

export class PublicView {
  /** ctx: {i18n, notices, onDemo(bool)} */
  constructor(ctx) {
    this.ctx = ctx;
    this.market = null;
    this.news = null;
    this.research = null;
    this.timers = new Map();
    this.failures = 0;
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
    const r = await getJson("/api/market", { revalidate: true });
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
    const r = await getJson(`/api/${kind}?limit=8`, { revalidate: true });
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
    this.ctx.notices.clear(`public-${name}`);
    this.ctx.notices.clear("public-network");
  }

  /** Explain the failure and return when to try again (ms). */
  _failed(name, r) {
    const { i18n, notices } = this.ctx;
    if (r.status === 0) {
      this.failures += 1;
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
    notices.set(`public-${name}`, () => i18n.t("errServer", { status: r.status, detail: r.problem?.detail ?? "" }),
      r.status);
    return 30000;
  }

  render() {
    this.renderMarket();
    this.renderFeed("news");
    this.renderFeed("research");
  }

  renderMarket() {
    const { i18n } = this.ctx;
    const box = document.getElementById("categories");
    if (!this.market) return;
    box.setAttribute("aria-busy", "false");
    document.getElementById("markets-note").textContent =
      i18n.t("marketsNote", { s: this.market.refreshSeconds }) + " · " + i18n.t("lastUpdate", {
        t: (this.market.updated ?? "").slice(11, 19),
      });
    replaceChildren(box, this.market.categories.map((c) => this._category(c)));
  }

  _category(cat) {
    const { i18n } = this.ctx;
    const rows = cat.quotes.map((q) => el("tr", { dataset: { id: q.id } },
      el("td", { class: "name", title: i18n.loc(q.source) }, i18n.loc(q.name)),
      el("td", { class: "num mono" }, q.priceText),
      el("td", { class: `num mono ${signClass(q.changePct)}` },
        q.changePct === null ? "—" : `${formatNumber(q.changePct, 2, { sign: true })}%`),
    ));
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
        el("time", { datetime: item.publishedAt }, (item.publishedAt ?? "").slice(0, 16).replace("T", " ")),
        el("span", {}, item.source),
        item.author ? el("span", {}, i18n.t("by", { a: item.author })) : null),
      el("h3", {}, i18n.loc(item.title)),
      el("p", {}, i18n.loc(item.summary)),
      item.tags?.length ? el("div", { class: "tags" }, item.tags.map((t) => el("span", { class: "tag" }, t))) : null,
    )));
  }
}
