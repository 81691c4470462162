// The console's Data source section (SPEC 20, docs/ingest.md): an enterprise account's (or an operator's) declared
// instruments, its namespace and its limits (instruments held of its cap, ticks a second), as an operator set them
// (`users limits`) or the plan's defaults. Read-only: declaring and publishing are API calls (docs/ingest.md).
// Names are the customer's text: text nodes only (el(), textContent), never HTML.

import { el, replaceChildren } from "./dom.js";

const $ = (id) => document.getElementById(id);

export class SourcePanel {
  /** `page`: the console page (its client, i18n and `me`). */
  constructor(page) {
    this.page = page;
    this.view = null; // GET /api/console/instruments, or null: not this account's (hidden)
  }

  shown() {
    const me = this.page.me;
    return me?.plan === "enterprise" || me?.role === "operator";
  }

  /** One request, part of the page's first load (after `me`); nothing for other plans. */
  async load() {
    this.view = this.shown() ? await this.page.client.get("/api/console/instruments", {}) : null;
  }

  render() {
    const v = this.view;
    $("source").hidden = !v;
    if (!v) return;
    const t = (k, vars) => this.page.i18n.t(k, vars);
    const number = (n) => n.toLocaleString(this.page.i18n.lang === "zh" ? "zh-CN" : "en-GB");
    $("source-namespace").textContent = v.namespace ? t("sourceNamespace", { ns: v.namespace }) : t("sourceNoNamespace");
    const limits = $("source-limits");
    limits.textContent = t("sourceLimits", { n: v.used.instruments, cap: number(v.limits.instruments),
      tps: number(v.limits.ticksPerSecond) });
    limits.dataset.full = String(v.used.instruments >= v.limits.instruments);
    $("source-full").hidden = v.used.instruments < v.limits.instruments;
    const lang = this.page.i18n.lang === "zh" ? "zh" : "en";
    replaceChildren($("source-body"), v.items.length ? v.items.map((i) => el("tr", { dataset: { id: i.id } },
      el("td", { class: "mono" }, i.id), el("td", {}, i.name[lang] || i.name.en), el("td", {}, i.venue),
      el("td", { class: "opt" }, i.unit[lang] || i.unit.en)))
      : [el("tr", {}, el("td", { colspan: "4", class: "hint" }, t("noInstruments")))]);
  }
}
