// The service console (SPEC 17): sign up or in, the account's keys (a new secret shown once), usage per day, the
// plan and its upgrade request, the activity list; operators decide pending requests and see their decisions. Built on
// the TypeScript client's browser build (market-client.js: `client.console`). The session token is kept in this tab's
// sessionStorage until sign-out or its expiry (never localStorage or a URL), so a reload keeps the user signed in; a
// key's secret is in the DOM only until "I saved it", and reaches the dashboard through sessionStorage, read once.

import { HANDOVER_STORAGE } from "./calls.js";
import { el, replaceChildren, when } from "./dom.js";
import { ConsoleI18n } from "./console-i18n.js";
import { IncidentsPanel } from "./console-incidents.js";
import { MarketClient, ProblemError } from "./market-client.js";
import { SourcePanel } from "./console-source.js";
import { SupportPanel } from "./console-support.js";

const LANG_STORAGE = "market.lang"; // the language, shared with the dashboard
const SESSION_STORAGE = "market.console"; // {token, expires}: this tab only

function stored(store, name) {
  try {
    return window[store].getItem(name);
  } catch {
    return null; // storage disabled: the value lasts as long as the page
  }
}

function store(kind, name, value) {
  try {
    if (value === null) window[kind].removeItem(name);
    else window[kind].setItem(name, value);
  } catch { /* storage disabled */ }
}

const $ = (id) => document.getElementById(id);

class ConsolePage {
  constructor() {
    const browserLang = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
    const lang = stored("localStorage", LANG_STORAGE) ?? browserLang;
    this.i18n = new ConsoleI18n(lang);
    this.client = new MarketClient({ baseUrl: location.origin, retries429: 0, timeoutMs: 15000 });
    this.signUp = false;
    this.me = null;
    this.view = { keys: [], usage: null, events: [], requests: [] };
    this.support = new SupportPanel(this); // SPEC 20's tickets (console-support.js)
    this.source = new SourcePanel(this); // SPEC 20's dedicated data source (console-source.js)
    this.incidents = new IncidentsPanel(this); // SPEC 20: incident e-mails; operators' incidents and maintenance
  }

  start() {
    this.i18n.apply();
    $("lang-toggle").addEventListener("click", () => this.toggleLang());
    $("auth-switch").addEventListener("click", () => this.switchAuth());
    $("auth-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.act(() => this.authenticate(), this.signUp ? "signUp" : "signIn");
    });
    $("sign-out").addEventListener("click", () => this.signOut());
    $("key-create").addEventListener("submit", (e) => {
      e.preventDefault();
      this.act(() => this.createKey(), "createKey");
    });
    $("secret-copy").addEventListener("click", () => this.copySecret());
    $("secret-done").addEventListener("click", () => this.hideSecret());
    $("plan-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.act(() => this.requestPlan(), "requestPlan");
    });
    $("secret-open").addEventListener("click", () =>
      store("sessionStorage", HANDOVER_STORAGE, $("secret-value").value)); // the dashboard reads it once
    $("usage-refresh").addEventListener("click", () => this.act(() => this.refreshUsage(true)));
    this.support.bind();
    this.source.bind();
    $("sla-refresh").addEventListener("click", () => this.act(() => this.refreshSla()));
    $("sla-month").addEventListener("change", () => this.act(() => this.refreshSla()));
    $("sla-csv-ranges").addEventListener("click", () => this.download("ranges"));
    $("sla-csv-days").addEventListener("click", () => this.download("days"));
    this.incidents.start();
    window.addEventListener("focus", () => { // at most once a minute: the console's budget is 30 requests a minute
      if (this.me && Date.now() - (this.usageAt?.getTime() ?? 0) >= 60000) this.act(() => this.refreshUsage(false));
    });
    this.resume().finally(() => { document.body.dataset.ready = "1"; });
  }

  /** A reload keeps the session: the token saved in this tab, until sign-out or its expiry. */
  async resume() {
    const saved = JSON.parse(stored("sessionStorage", SESSION_STORAGE) ?? "null");
    if (!saved || saved.expires <= Date.now()) return store("sessionStorage", SESSION_STORAGE, null);
    this.client.token = saved.token;
    await this.act(() => this.enter(), "resume");
    if (!this.me) this.signOut(false);
  }

  toggleLang() {
    const lang = this.i18n.toggle();
    store("localStorage", LANG_STORAGE, lang);
    this.i18n.apply();
    this.syncAuthText();
    this.said?.(); // the last message and refusal, in the new language
    this.noticed?.();
    if (this.me) this.render();
  }

  switchAuth() {
    this.signUp = !this.signUp;
    this.syncAuthText();
  }

  syncAuthText() {
    const t = (k) => this.i18n.t(k);
    $("auth-title").textContent = t(this.signUp ? "signUp" : "signIn");
    $("auth-submit").textContent = t(this.signUp ? "signUp" : "signIn");
    $("auth-switch").textContent = t(this.signUp ? "toSignIn" : "toSignUp");
    $("auth-password").autocomplete = this.signUp ? "new-password" : "current-password";
  }

  /** Run an action; a refusal or a network failure goes to the banner in the page's words (the problem's `code`
   * mapped per action, its English `detail` in the tooltip), nothing is thrown. */
  async act(fn, action = "") {
    this.notice(null);
    this.say(null);
    try {
      await fn();
    } catch (err) {
      const status = err instanceof ProblemError ? err.status : 0;
      this.notice(() => this.i18n.problem(action, err instanceof ProblemError ? err.code : "network", status),
        status, err?.problem?.detail);
    }
  }

  /** The banner (a refusal); `text` is a function, so a language switch rewrites it. */
  notice(text, status = 0, detail = "") {
    const banner = $("banner");
    banner.hidden = !text;
    banner.dataset.status = text ? String(status) : "";
    replaceChildren(banner, text ? el("p", { title: detail || null }, text()) : null);
    this.noticed = text ? () => this.notice(text, status, detail) : null;
  }

  /** The line saying what an action did (role=status); `key` and `vars` of a UI string. */
  say(key, vars = {}) {
    const box = $("message");
    box.hidden = !key;
    box.dataset.said = key ?? "";
    replaceChildren(box, key ? el("p", {}, this.i18n.t(key, vars)) : null);
    this.said = key ? () => this.say(key, vars) : null;
  }

  /** An in-page dialog naming the key by label and prefix; resolves to the input's value, true, or null. */
  ask(textKey, vars, okKey, input = null) {
    const dialog = $("dialog");
    $("dialog-text").textContent = this.i18n.t(textKey, vars);
    $("dialog-ok").textContent = this.i18n.t(okKey);
    $("dialog-input").hidden = input === null;
    $("dialog-input").value = input ?? "";
    dialog.returnValue = "";
    dialog.showModal();
    if (input !== null) $("dialog-input").select();
    return new Promise((resolve) => dialog.addEventListener("close", () => {
      if (dialog.returnValue !== "ok") resolve(null);
      else resolve(input === null ? true : $("dialog-input").value.trim() || null);
    }, { once: true }));
  }

  async authenticate() {
    const email = $("auth-email").value.trim();
    const password = $("auth-password").value;
    const signUp = this.signUp;
    if (signUp) await this.client.register({ email, password });
    const session = await this.client.console.signIn(email, password);
    store("sessionStorage", SESSION_STORAGE,
      JSON.stringify({ token: session.token, expires: Date.now() + (session.expiresIn ?? 3600) * 1000 }));
    $("auth-password").value = "";
    this.signUp = false; // signing in again after a sign-out is a sign-in
    this.syncAuthText();
    await this.enter();
    this.say(signUp ? "registered" : "signedIn", { email });
  }

  async enter() {
    await this.load(); // the account shows once it is filled: never an empty plan or key list
    $("auth").hidden = true;
    $("account").hidden = false;
  }

  signOut(said = true) {
    this.client.console.signOut();
    store("sessionStorage", SESSION_STORAGE, null);
    this.me = null;
    this.support.reset();
    this.source.reset();
    this.hideSecret();
    $("account").hidden = true;
    $("auth").hidden = false;
    if (!said) return; // a refused saved session: the banner says it expired
    this.notice(null);
    this.say("signedOut");
  }

  async load() {
    const c = this.client.console;
    const [me, keys, usage, events] = await Promise.all([c.me(), c.keys(), c.usage(), c.events(),
      this.support.load()]);
    this.me = me;
    // operators: every request, pending ones to decide and the decided ones as their history
    this.view = { keys, usage, events, requests: me.role === "operator" ? await c.subscriptions() : [] };
    this.view.sla = this.slaShown() ? await c.sla($("sla-month").value || undefined) : null;
    await Promise.all([this.incidents.load(me.role === "operator"), this.source.load()]); // the data source: enterprise accounts only
    this.usageAt = new Date();
    this.render();
  }

  /** The SLA report is the enterprise plan's, and the operators' (SPEC 20). */
  slaShown() {
    return this.me?.plan === "enterprise" || this.me?.role === "operator";
  }

  async refreshSla() {
    if (!this.slaShown()) return;
    this.view.sla = await this.client.console.sla($("sla-month").value || undefined);
    this.renderSla();
  }

  /** The usage again (a button, and when the tab gets the focus back at most once a minute). */
  async refreshUsage(asked) {
    this.view.usage = await this.client.console.usage();
    this.usageAt = new Date();
    this.renderUsage();
    if (asked) this.say("usageRefreshed");
  }

  // after a key action only the keys and the audit list changed: two requests, not the whole view's four (the
  // console allows an account 30 requests a minute, SPEC 17: a few clicks must not spend them)
  async loadKeys() {
    const c = this.client.console;
    const [keys, events] = await Promise.all([c.keys(), c.events()]);
    this.view = { ...this.view, keys, events };
    this.renderKeys();
    this.renderEvents();
  }

  // after a plan request or an operator's decision only the account, the requests and the audit list changed:
  // three requests, where the whole view is ten for an operator (three decisions in a minute took the whole budget)
  async loadPlan() {
    const c = this.client.console;
    const [me, events, requests] = await Promise.all([c.me(), c.events(),
      this.me?.role === "operator" ? c.subscriptions() : []]);
    this.me = me;
    this.view = { ...this.view, events, requests };
    this.renderAccount();
    this.renderPlan();
    this.renderEvents();
    this.renderAdmin();
    document.body.dataset.loaded = String(Date.now());
  }

  render() {
    this.renderAccount();
    this.renderKeys();
    this.renderUsage();
    this.renderSla();
    this.source.render();
    this.renderPlan();
    this.renderEvents();
    this.renderAdmin();
    this.support.render();
    this.source.render();
    this.incidents.render(this.me.role === "operator");
    document.body.dataset.loaded = String(Date.now());
  }

  renderAccount() {
    const { me, i18n } = this;
    $("account-email").textContent = me.account.email;
    const plan = $("account-plan");
    plan.textContent = i18n.plan(me.plan);
    plan.dataset.plan = me.plan;
    plan.hidden = me.role === "operator"; // an operator is not a customer: no plan badge, no upgrade form
    $("account-role").hidden = me.role !== "operator";
    $("account-role").textContent = i18n.t("operator");
    $("account-limits").textContent = i18n.t("limits", { rate: me.limits.rate, n: me.limits.keys });
  }

  renderKeys() {
    const t = (k, v) => this.i18n.t(k, v);
    replaceChildren($("keys-body"), this.view.keys.map((k) => el("tr",
      { class: k.revokedAt ? "revoked" : null, dataset: { id: k.id } },
      el("td", {}, k.label ?? "", k.scope === "ingest"
        ? el("span", { class: "badge", dataset: { scope: k.scope } }, t("scopeIngest")) : null),
      el("td", { class: "mono" }, `${k.prefix ?? ""}…`),
      el("td", {}, this.i18n.plan(k.plan)), el("td", { class: "num" }, k.rate),
      el("td", { class: "opt" }, when(k.createdAt)), el("td", { class: "opt" }, when(k.lastUsedAt) || t("never")),
      el("td", { class: "actions" }, k.revokedAt ? t("revoked") : [
        ...["rename", "rotate", "revoke"].map((act) => el("button", { type: "button", class: "ghost", dataset: { act },
          onclick: () => this.act(() => this[`${act}Key`](k), "key") }, t(act))),
      ]))));
  }

  renderUsage() {
    const days = new Map();
    for (const row of this.view.usage?.items ?? []) {
      const d = days.get(row.date) ?? { requests: 0, refused: 0, clientErrors: 0, wsConnections: 0, wsMessages: 0 };
      for (const f of Object.keys(d)) d[f] += row[f];
      days.set(row.date, d);
    }
    const rows = [...days.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    const top = Math.max(1, ...rows.map(([, d]) => d.requests));
    const at = this.usageAt?.toTimeString().slice(0, 5); // the viewer's clock: when the figures were read
    $("usage-at").textContent = at ? this.i18n.t("usageAt", { t: at }) : "";
    const chart = $("usage-chart");
    chart.dataset.empty = this.i18n.t("usageEmpty");
    chart.setAttribute("aria-label", this.i18n.t("usageChart"));
    replaceChildren(chart, rows.map(([day, d]) => el("div",
      { class: "bar", title: `${day}: ${d.requests}`, style: `height:${(100 * d.requests) / top}%`,
        dataset: { day } },
      el("span", { class: "refused", style: `height:${d.requests ? (100 * d.refused) / d.requests : 0}%` }))));
    replaceChildren($("usage-body"), rows.slice().reverse().map(([day, d]) => el("tr", { dataset: { day } },
      el("td", { class: "mono" }, day), el("td", { class: "num" }, d.requests), el("td", { class: "num" }, d.refused),
      el("td", { class: "num opt" }, d.clientErrors), el("td", { class: "num opt" }, d.wsConnections),
      el("td", { class: "num" }, d.wsMessages))));
  }

  /** The month's availability: a bar per day (its lowest component), the components' table, the CSV buttons. */
  renderSla() {
    const report = this.view.sla;
    $("sla").hidden = !report;
    if (!report) return;
    const t = (k, v) => this.i18n.t(k, v);
    if (!$("sla-month").value) $("sla-month").value = report.month;
    $("sla-summary").textContent = report.minutes
      ? t("slaSummary", { n: report.minutes, p50: report.latency.p50Ms ?? "-", p99: report.latency.p99Ms ?? "-",
        frames: report.stream.frames })
      : t("slaNone");
    const chart = $("sla-chart");
    chart.setAttribute("aria-label", t("slaChart"));
    replaceChildren(chart, report.days.map((d) => {
      const values = Object.values(d.availability).filter((v) => v !== null);
      const low = values.length ? Math.min(...values) : null;
      const height = low === null ? 0 : Math.max(2, Math.min(100, (low - 90) * 10));
      return el("div", { class: `bar${low === null ? " none" : low < report.target ? " miss" : ""}`,
        title: `${d.date}: ${low === null ? "-" : `${low}%`}`, style: `height:${height}%`, dataset: { day: d.date } });
    }));
    replaceChildren($("sla-body"), report.components.map((c) => el("tr", { dataset: { id: c.id } },
      el("td", { class: "mono" }, c.id),
      el("td", { class: `num ${c.met === false ? "miss" : ""}` }, c.availability === null ? "-" : `${c.availability}%`),
      el("td", { class: "num" }, `${c.target}%`), el("td", { class: "num" }, c.downMinutes),
      el("td", { class: "opt mono" }, c.downRanges.map((r) => `${when(r.from)} - ${when(r.to)}`).join("; ")))));
  }

  /** The report's down ranges or per-day figures as a CSV file, made here from the answer shown. */
  download(kind) {
    const report = this.view.sla;
    if (!report) return;
    const ids = report.components.map((c) => c.id);
    const lines = kind === "ranges"
      ? [["component", "from", "to", "minutes"], ...report.components.flatMap((c) => c.downRanges.map((r) =>
        [c.id, r.from, r.to, Math.round((Date.parse(r.to) - Date.parse(r.from)) / 60000)]))]
      : [["date", "minutes", ...ids], ...report.days.map((d) =>
        [d.date, d.minutes, ...ids.map((id) => d.availability[id] ?? "")])];
    const blob = new Blob([lines.map((row) => row.join(",")).join("\n") + "\n"], { type: "text/csv" });
    const link = el("a", { href: URL.createObjectURL(blob), download: `sla-${report.month}-${kind}.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    URL.revokeObjectURL(link.href);
  }

  renderPlan() {
    const { me, i18n } = this;
    const lines = [i18n.t("planNow", { plan: i18n.plan(me.plan), rate: me.limits.rate, n: me.limits.keys,
      ws: me.limits.wsConnections })];
    const sub = me.subscription;
    if (sub?.status === "pending") lines.push(i18n.t("requestPending", { plan: i18n.plan(sub.plan) }));
    if (sub?.status === "rejected") lines.push(i18n.t("requestRejected", { plan: i18n.plan(sub.plan) }));
    $("plan-status").textContent = lines.join(" ");
    $("plan-status").dataset.subscription = sub?.status ?? "";
    $("plan-form").hidden = sub?.status === "pending" || me.plan === "enterprise" || me.role === "operator";
    const choice = $("plan-choice"); // only a plan above the current one can be asked for
    for (const option of choice.options) option.disabled = option.value === me.plan;
    if (choice.value === me.plan) choice.value = "enterprise";
  }

  renderEvents() {
    const items = this.view.events;
    replaceChildren($("events"), items.length ? items.map((e) => el("li", { dataset: { kind: e.kind } },
      el("span", { class: "when mono" }, when(e.at)), el("span", {}, this.i18n.t(`ev_${e.kind}`)),
      el("span", { class: "mono" }, this.eventSubject(e)), el("span", { class: "when mono" }, e.ip ?? "")))
      : el("li", {}, this.i18n.t("noEvents")));
  }

  /** What an event is about: its key by label and prefix (the table's words; a key's id is internal), else its
   * detail. */
  eventSubject(e) {
    const key = e.keyId && this.view.keys.find((k) => k.id === e.keyId);
    return key ? this.keyName(key) : (e.keyId ? "" : e.detail ?? "");
  }

  renderAdmin() {
    const operator = this.me.role === "operator";
    $("admin").hidden = !operator;
    if (!operator) return;
    const t = (k) => this.i18n.t(k);
    const pending = this.view.requests.filter((s) => s.status === "pending");
    const rows = pending.map((s) => {
      const rate = s.plan === "enterprise" ? el("input", { type: "number", min: "1", placeholder: t("rate"),
        "aria-label": t("rate"), dataset: { testid: "approve-rate" } }) : null;
      return el("tr", { dataset: { id: s.id } }, el("td", {}, s.email ?? s.userId),
        el("td", {}, this.i18n.plan(s.plan)), el("td", { class: "opt wide" }, s.message ?? ""),
        el("td", { class: "mono" }, when(s.createdAt)),
        el("td", { class: "actions" }, rate,
          el("button", { type: "button", dataset: { act: "approve" }, onclick: () => this.act(() =>
            this.decide(s, true, rate ? Number(rate.value) : undefined), "decide") }, t("approve")),
          el("button", { type: "button", class: "ghost", dataset: { act: "reject" },
            onclick: () => this.act(() => this.decide(s, false), "decide") }, t("reject"))));
    });
    replaceChildren($("requests-body"), rows.length ? rows : el("tr", {}, el("td", { colspan: "5" }, t("noPending"))));
    const decided = this.view.requests.filter((s) => s.status !== "pending")
      .sort((a, b) => ((a.decidedAt ?? "") < (b.decidedAt ?? "") ? 1 : -1));
    replaceChildren($("decisions-body"), decided.length ? decided.map((s) => el("tr", { dataset: { id: s.id } },
      el("td", {}, s.email ?? s.userId), el("td", {}, this.i18n.plan(s.plan)),
      el("td", { class: `decision ${s.status}` }, t(`decision_${s.status}`)),
      el("td", { class: "mono opt" }, when(s.createdAt)), el("td", { class: "mono" }, when(s.decidedAt))))
      : el("tr", {}, el("td", { colspan: "5" }, t("noDecisions"))));
  }

  /** A key as the table shows it: its label and prefix ("desk (mk_3f9a…)"), never its internal id. */
  keyName(k) {
    return `${k.label || this.i18n.t("unlabelled")} (${k.prefix ?? ""}…)`;
  }

  async createKey() {
    const label = $("key-label").value.trim();
    const scope = $("key-scope-label").hidden ? undefined : $("key-scope").value;
    const created = await this.client.console.createKey(label || null, scope);
    $("key-label").value = "";
    this.showSecret(created.key);
    await this.loadKeys();
    this.say("keyCreated");
  }

  async renameKey(k) {
    const label = await this.ask("renamePrompt", { key: this.keyName(k) }, "rename", k.label ?? "");
    if (!label) return;
    await this.client.console.renameKey(k.id, label);
    await this.loadKeys();
    this.say("keyRenamed", { key: this.keyName({ ...k, label }) });
  }

  async rotateKey(k) {
    if (!(await this.ask("confirmRotate", { key: this.keyName(k) }, "rotate"))) return;
    const rotated = await this.client.console.rotateKey(k.id);
    this.showSecret(rotated.key);
    await this.loadKeys();
    this.say("keyRotated", { key: this.keyName(k) });
  }

  async revokeKey(k) {
    if (!(await this.ask("confirmRevoke", { key: this.keyName(k) }, "revoke"))) return;
    await this.client.console.revokeKey(k.id);
    await this.loadKeys();
    this.say("keyRevoked", { key: this.keyName(k) });
  }

  async requestPlan() {
    const message = $("plan-message").value.trim();
    const plan = $("plan-choice").value;
    await this.client.console.requestPlan(plan, message || null);
    $("plan-message").value = "";
    await this.loadPlan();
    this.say("requestSent", { plan: this.i18n.plan(plan) });
  }

  async decide(s, approve, rate) {
    if (approve) await this.client.console.approve(s.id, rate);
    else await this.client.console.reject(s.id);
    await this.loadPlan();
    this.say(approve ? "approved" : "rejected", { plan: this.i18n.plan(s.plan), email: s.email ?? s.userId });
  }

  showSecret(secret) {
    $("secret-value").value = secret;
    $("secret").scrollIntoView?.({ block: "nearest" });
    $("secret").hidden = false;
    $("secret-copy").textContent = this.i18n.t("copy");
  }

  async copySecret() {
    try {
      await navigator.clipboard.writeText($("secret-value").value);
    } catch {
      $("secret-value").select(); // no clipboard permission: selected for Ctrl+C
      return;
    }
    $("secret-copy").textContent = this.i18n.t("copied");
  }

  hideSecret() {
    $("secret-value").value = "";
    $("secret").hidden = true;
  }
}

new ConsolePage().start();
