// The console's incidents (SPEC 20, docs/incidents.md): every account's choice of incident e-mails, and for
// operators the incidents (open, post an update, resolve) and scheduled maintenance, as the CLI does. Loaded and
// drawn by the console page (console.js), whose `act`, `say`, client and strings it uses.

import { el, replaceChildren, when } from "./dom.js";

const $ = (id) => document.getElementById(id);

export class IncidentsPanel {
  constructor(page) {
    this.page = page;
    this.view = { mail: null, incidents: [], maintenances: [] };
  }

  start() {
    $("incident-mail").addEventListener("change", (e) => this.page.act(() => this.setMail(e.target.checked), "mail"));
    $("incident-open").addEventListener("submit", (e) => {
      e.preventDefault();
      this.page.act(() => this.open(), "incident");
    });
    $("maintenance-add").addEventListener("submit", (e) => {
      e.preventDefault();
      this.page.act(() => this.addMaintenance(), "maintenance");
    });
  }

  /** The account's choice; an operator's incidents and maintenance too. */
  async load(operator) {
    const c = this.page.client.console;
    const [mail, incidents, maintenances] = await Promise.all([c.incidentMail(),
      operator ? c.incidents() : [], operator ? c.maintenances() : []]);
    this.view = { mail, incidents, maintenances };
  }

  render(operator) {
    const t = (k, vars) => this.page.i18n.t(k, vars);
    $("incident-mail").checked = Boolean(this.view.mail?.incidents);
    $("incident-mail-default").textContent = t(this.view.mail?.default ? "mailDefaultOn" : "mailDefaultOff");
    $("incidents-admin").hidden = !operator;
    if (!operator) return;
    const open = this.view.incidents.filter((i) => i.status !== "resolved");
    const done = this.view.incidents.filter((i) => i.status === "resolved").slice(0, 10);
    replaceChildren($("incident-admin-list"), open.length ? open.map((i) => this.openCard(i))
      : el("p", { class: "hint" }, t("noOpenIncidents")), done.map((i) => el("p",
      { class: "hint incident-done", dataset: { id: i.id } }, `${t(`inc_${i.status}`)} · ${i.name} · ${when(i.resolvedAt)}`)));
    replaceChildren($("maintenance-admin-list"), this.view.maintenances.length
      ? this.view.maintenances.map((m) => el("li", { dataset: { id: m.id, status: m.status } },
        `${m.name} · ${t(`mnt_${m.status}`)} · ${when(m.scheduledFor)} – ${when(m.scheduledUntil)}`))
      : el("li", { class: "hint" }, t("noMaintenance")));
  }

  openCard(inc) {
    const t = (k) => this.page.i18n.t(k);
    const status = el("select", { "aria-label": t("incidentStatus"), dataset: { testid: "update-status" } },
      ["identified", "monitoring"].map((s) => el("option", { value: s }, t(`inc_${s}`))));
    const message = el("input", { maxlength: "4000", placeholder: t("updateMessage"), "aria-label": t("updateMessage"),
      dataset: { testid: "update-message" } });
    return el("div", { class: "incident-admin", dataset: { id: inc.id, status: inc.status } },
      el("p", {}, el("strong", {}, inc.name), ` · ${t(`impact_${inc.impact}`)} · ${t(`inc_${inc.status}`)} · `,
        when(inc.createdAt), inc.components.length ? ` · ${inc.components.join(", ")}` : ""),
      el("div", { class: "row actions" }, status, message,
        el("button", { type: "button", dataset: { act: "update" }, onclick: () => this.page.act(() =>
          this.update(inc, status.value, message.value.trim()), "incident") }, t("postUpdate")),
        el("button", { type: "button", class: "ghost", dataset: { act: "resolve" }, onclick: () => this.page.act(() =>
          this.resolve(inc), "incident") }, t("resolveIncident"))));
  }

  async reload() {
    await this.load(true);
    this.render(true);
  }

  async setMail(on) {
    this.view.mail = await this.page.client.console.setIncidentMail(on);
    this.render(this.page.me?.role === "operator");
    this.page.say(on ? "mailOn" : "mailOff");
  }

  async open() {
    const components = $("incident-components").value.split(",").map((s) => s.trim()).filter(Boolean);
    const message = $("incident-message").value.trim();
    const made = await this.page.client.console.openIncident({ title: $("incident-title").value.trim(),
      impact: $("incident-impact").value, components, ...(message ? { message } : {}) });
    for (const id of ["incident-title", "incident-components", "incident-message"]) $(id).value = "";
    await this.reload();
    this.page.say("incidentOpened", { title: made.name });
  }

  async update(inc, status, message) {
    await this.page.client.console.updateIncident(inc.id, status, message);
    await this.reload();
    this.page.say("incidentUpdated", { title: inc.name });
  }

  async resolve(inc) {
    await this.page.client.console.resolveIncident(inc.id);
    await this.reload();
    this.page.say("incidentResolved", { title: inc.name });
  }

  async addMaintenance() {
    const made = await this.page.client.console.addMaintenance($("maintenance-title").value.trim(),
      $("maintenance-from").value, $("maintenance-to").value);
    for (const id of ["maintenance-title", "maintenance-from", "maintenance-to"]) $(id).value = "";
    await this.reload();
    this.page.say("maintenanceAdded", { title: made.name });
  }
}
