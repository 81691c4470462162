// The console's Data source section (SPEC 20, issue 43: an enterprise account's dedicated data source): the namespace
// an operator granted, the declared instruments (declare, delete), the account's limits (instruments held of its
// cap, ticks a second: an operator's `users limits`, else the plan's defaults), and how to publish (an ingest
// key is made in the keys section with the scope "ingest"). Names and units are the customer's text: they go into the
// page as text nodes only (el(), textContent), never as HTML.

import { el, replaceChildren, when } from "./dom.js";

const $ = (id) => document.getElementById(id);

export class SourcePanel {
  /** `page`: the console page (its client, i18n, `act`, `say` and `ask`). */
  constructor(page) {
    this.page = page;
    this.view = null; // GET /api/console/instruments: {namespace, items, limits?, used?}
  }

  get calls() {
    return this.page.client.console;
  }

  t(key, vars) {
    return this.page.i18n.t(key, vars);
  }

  /** The enterprise plan's section: shown to its accounts only (an operator has no data source of its own). */
  shown() {
    return this.page.me?.plan === "enterprise" && this.page.me?.role !== "operator";
  }

  bind() {
    $("source-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.page.act(() => this.declare(), "declare");
    });
  }

  /** One request, part of the page's first load (none for other plans). */
  async load() {
    this.view = this.shown() ? await this.calls.instruments() : null;
  }

  reset() {
    this.view = null;
    replaceChildren($("source-body"));
  }

  async declare() {
    const ns = this.view?.namespace;
    const value = (id) => $(id).value.trim();
    const made = await this.calls.declareInstrument({
      id: `${ns}.${value("source-name")}`,
      name: { zh: value("source-name-zh"), en: value("source-name-en") },
      unit: { zh: value("source-unit-zh"), en: value("source-unit-en") },
      currency: value("source-currency").toUpperCase(),
      decimals: Number(value("source-decimals")),
      venue: $("source-venue").value,
    });
    for (const id of ["source-name", "source-name-zh", "source-name-en"]) $(id).value = "";
    await this.refresh();
    this.page.say("instrumentDeclared", { id: made.id });
  }

  async remove(item) {
    if (!(await this.page.ask("deleteInstrumentAsk", { id: item.id }, "deleteInstrument"))) return;
    await this.calls.deleteInstrument(item.id);
    await this.refresh();
    this.page.say("instrumentDeleted", { id: item.id });
  }

  async refresh() {
    await this.load();
    this.render();
  }

  render() {
    const panel = $("source");
    panel.hidden = !this.view;
    $("key-scope-label").hidden = !this.view?.namespace; // an ingest key publishes to the namespace's instruments
    if (!this.view) return;
    const { namespace, items } = this.view;
    $("source-namespace").textContent = namespace
      ? this.t("sourceNamespace", { ns: namespace }) : this.t("sourceNoNamespace");
    $("source-prefix").textContent = namespace ? `${namespace}.` : "";
    $("source-form").hidden = !namespace;
    $("source-limits").textContent = this.limits();
    const full = this.view.used.instruments >= this.view.limits.instruments;
    $("source-limits").dataset.full = String(full);
    $("source-full").hidden = !full || !namespace;
    $("source-declare").disabled = full;
    const venue = $("source-venue");
    if (!venue.options.length) {
      replaceChildren(venue, (this.view.venues ?? []).map((v) => el("option", { value: v }, v)));
    }
    const lang = this.page.i18n.lang;
    const rows = items.map((i) => el("tr", { dataset: { id: i.id } },
      el("td", { class: "mono" }, i.id), el("td", {}, i.name?.[lang] || i.name?.en || ""),
      el("td", {}, i.venue), el("td", { class: "opt" }, `${i.unit?.[lang] || i.unit?.en || ""} · ${i.currency}`),
      el("td", { class: "num opt" }, i.decimals), el("td", { class: "mono opt" }, when(i.createdAt)),
      el("td", { class: "actions" }, el("button", { type: "button", class: "ghost", dataset: { act: "delete" },
        onclick: () => this.page.act(() => this.remove(i), "instrument") }, this.t("deleteInstrument")))));
    replaceChildren($("source-body"), rows.length ? rows
      : el("tr", {}, el("td", { colspan: "7" }, this.t(namespace ? "noInstruments" : "sourceNoNamespace"))));
  }

  /** The account's limits in force (an operator's `users limits`, else the plan's) and what it holds of them. */
  limits() {
    const { limits, used } = this.view;
    const number = (n) => n.toLocaleString(this.page.i18n.lang === "zh" ? "zh-CN" : "en-GB");
    return this.t("sourceLimits", { used: number(used.instruments), max: number(limits.instruments),
      rate: number(limits.ticksPerSecond) });
  }
}
