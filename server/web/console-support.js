// The console's Support section (SPEC 20, issue 43): open a ticket, the list, a ticket's thread, reply, close and
// reopen; operators list every account's tickets (filtered by status) and answer on the same thread. Subjects and
// bodies are the customer's plain text: they go into the page as text nodes only (el(), textContent), never as HTML.

import { el, replaceChildren, when } from "./dom.js";

const $ = (id) => document.getElementById(id);

export class SupportPanel {
  /** `page`: the console page (its client, i18n, `act` and `say`). */
  constructor(page) {
    this.page = page;
    this.items = [];
    this.ticket = null; // the ticket whose thread is shown, with `thread`
  }

  get calls() {
    return this.page.client.console;
  }

  t(key, vars) {
    return this.page.i18n.t(key, vars);
  }

  bind() {
    const act = (fn) => (e) => {
      e?.preventDefault();
      this.page.act(fn, "ticket");
    };
    $("ticket-form").addEventListener("submit", act(() => this.create()));
    $("ticket-reply").addEventListener("submit", act(() => this.reply()));
    $("ticket-close").addEventListener("click", act(() => this.setStatus("close")));
    $("ticket-reopen").addEventListener("click", act(() => this.setStatus("reopen")));
    $("ticket-back").addEventListener("click", () => this.show(null));
    $("tickets-refresh").addEventListener("click", act(() => this.refresh()));
    $("tickets-filter").addEventListener("change", act(() => this.refresh()));
  }

  /** The list (one request); part of the page's first load. */
  async load() {
    this.items = await this.calls.tickets($("tickets-filter").value || undefined);
  }

  async refresh() {
    await this.load();
    if (this.ticket) this.ticket = await this.calls.ticket(this.ticket.id);
    this.render();
  }

  async create() {
    const subject = $("ticket-subject").value.trim();
    const body = $("ticket-body").value.trim();
    const opened = await this.calls.openTicket(subject, body, Number($("ticket-severity").value));
    $("ticket-subject").value = "";
    $("ticket-body").value = "";
    this.ticket = opened;
    await this.load();
    this.render();
    this.page.say("ticketOpened", { id: opened.id });
  }

  async open(id) {
    this.ticket = await this.calls.ticket(id);
    this.render();
    $("ticket-view").scrollIntoView?.({ block: "nearest" });
  }

  /** Signed out: nothing of the last account stays in the page. */
  reset() {
    this.items = [];
    this.ticket = null;
    replaceChildren($("tickets-body"));
    replaceChildren($("ticket-thread"));
    $("ticket-view").hidden = true;
  }

  show(ticket) {
    this.ticket = ticket;
    this.render();
  }

  async reply() {
    const body = $("ticket-reply-body").value.trim();
    await this.calls.replyTicket(this.ticket.id, body);
    $("ticket-reply-body").value = "";
    await this.refresh();
    this.page.say("ticketReplied");
  }

  async setStatus(verb) {
    const id = this.ticket.id;
    await (verb === "close" ? this.calls.closeTicket(id) : this.calls.reopenTicket(id));
    await this.refresh();
    this.page.say(verb === "close" ? "ticketClosed" : "ticketReopened");
  }

  render() {
    const operator = this.page.me?.role === "operator";
    $("ticket-form").hidden = operator; // operators answer; customers open tickets
    $("tickets-filter-label").hidden = !operator;
    $("support-hint").textContent = this.t(operator ? "supportOperatorHint" : "supportHint");
    this.renderList(operator);
    this.renderThread(operator);
  }

  renderList(operator) {
    const rows = this.items.map((k) => el("tr", { dataset: { id: k.id, status: k.status } },
      el("td", { class: "wide" }, el("button", { type: "button", class: "linkish", dataset: { act: "open-ticket" },
        onclick: () => this.page.act(() => this.open(k.id), "ticket") }, k.subject)),
      operator ? el("td", { class: "opt" }, k.email ?? k.userId) : null,
      el("td", {}, this.t(`sev${k.severity}`)), el("td", { class: `status ${k.status}` }, this.t(`st_${k.status}`)),
      el("td", { class: "opt" }, this.target(k)), el("td", { class: "mono opt" }, when(k.updatedAt))));
    $("tickets-email-col").hidden = !operator;
    replaceChildren($("tickets-body"), rows.length ? rows
      : el("tr", {}, el("td", { colspan: "6" }, this.t("noTickets"))));
  }

  /** The first-response target in words: due at, answered in time, or missed (enterprise tickets only). */
  target(k) {
    if (!k.firstResponseDue) return "";
    if (k.firstResponseMet === true) return this.t("targetMet");
    if (k.firstResponseMet === false) return this.t("targetMissed");
    return this.t("targetDue", { t: when(k.firstResponseDue) });
  }

  renderThread(operator) {
    const k = this.ticket;
    $("ticket-view").hidden = !k;
    if (!k) return;
    $("ticket-title").textContent = k.subject;
    $("ticket-meta").textContent = [k.id, this.t(`sev${k.severity}`), this.t(`st_${k.status}`), this.target(k),
      operator ? k.email ?? "" : ""].filter(Boolean).join(" · ");
    replaceChildren($("ticket-thread"), (k.thread ?? []).map((m) => el("li", { class: m.author,
      dataset: { author: m.author } },
      el("div", { class: "who" }, el("span", {}, this.t(`author_${m.author}`)),
        el("span", { class: "mono" }, m.authorEmail ?? ""), el("span", { class: "when mono" }, when(m.createdAt))),
      el("p", { class: "body" }, m.body))));
    const closed = k.status === "closed";
    $("ticket-reply").hidden = closed;
    $("ticket-close").hidden = closed;
    $("ticket-reopen").hidden = !closed;
  }
}
