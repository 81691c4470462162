// The service console (SPEC 17): sign up or in, the account's keys (a new secret shown once), usage per day, the
// plan and its upgrade request, the activity list; operators decide pending requests. Built on the TypeScript
// client's browser build (market-client.js: `client.console`). The session token lives in this page's memory only:
// never in localStorage, sessionStorage or a URL, and a key's secret is in the DOM only until "I saved it".

import { el, replaceChildren } from "./dom.js";
import { ConsoleI18n } from "./console-i18n.js";
import { MarketClient, ProblemError } from "./market-client.js";

const LANG_STORAGE = "market.lang"; // the language only, shared with the dashboard

function savedLang() {
  try {
    return localStorage.getItem(LANG_STORAGE);
  } catch {
    return null;
  }
}

const $ = (id) => document.getElementById(id);
const when = (iso) => (iso ? iso.slice(0, 16).replace("T", " ") : "");

class ConsolePage {
  constructor() {
    const lang = savedLang() ?? ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en");
    this.i18n = new ConsoleI18n(lang);
    this.client = new MarketClient({ baseUrl: location.origin, retries429: 0, timeoutMs: 15000 });
    this.signUp = false;
    this.me = null;
    this.view = { keys: [], usage: null, events: [], requests: [] };
  }

  start() {
    this.i18n.apply();
    $("lang-toggle").addEventListener("click", () => this.toggleLang());
    $("auth-switch").addEventListener("click", () => this.switchAuth());
    $("auth-form").addEventListener("submit", (e) => { e.preventDefault(); this.act(() => this.authenticate()); });
    $("sign-out").addEventListener("click", () => this.signOut());
    $("key-create").addEventListener("submit", (e) => { e.preventDefault(); this.act(() => this.createKey()); });
    $("secret-copy").addEventListener("click", () => this.copySecret());
    $("secret-done").addEventListener("click", () => this.hideSecret());
    $("plan-form").addEventListener("submit", (e) => { e.preventDefault(); this.act(() => this.requestPlan()); });
    document.body.dataset.ready = "1";
  }

  toggleLang() {
    const lang = this.i18n.toggle();
    try {
      localStorage.setItem(LANG_STORAGE, lang);
    } catch { /* storage disabled: the choice lasts as long as the page */ }
    this.i18n.apply();
    this.syncAuthText();
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

  /** Run an action; a refusal or a network failure goes to the banner, nothing is thrown. */
  async act(fn) {
    this.notice(null);
    try {
      await fn();
    } catch (err) {
      this.notice(err instanceof ProblemError ? (err.problem?.detail ?? err.message) : this.i18n.t("errorNetwork"),
        err instanceof ProblemError ? err.status : 0);
    }
  }

  notice(text, status = 0) {
    const banner = $("banner");
    banner.hidden = !text;
    banner.dataset.status = text ? String(status) : "";
    replaceChildren(banner, text ? el("p", {}, text) : null);
  }

  async authenticate() {
    const email = $("auth-email").value.trim();
    const password = $("auth-password").value;
    if (this.signUp) await this.client.register({ email, password });
    await this.client.console.signIn(email, password);
    $("auth-password").value = "";
    this.signUp = false; // signing in again after a sign-out is a sign-in
    this.syncAuthText();
    await this.load(); // the account shows once it is filled: never an empty plan or key list
    $("auth").hidden = true;
    $("account").hidden = false;
  }

  signOut() {
    this.client.console.signOut();
    this.me = null;
    this.hideSecret();
    $("account").hidden = true;
    $("auth").hidden = false;
    this.notice(null);
  }

  async load() {
    const c = this.client.console;
    const [me, keys, usage, events] = await Promise.all([c.me(), c.keys(), c.usage(), c.events()]);
    this.me = me;
    this.view = { keys, usage, events, requests: me.role === "operator" ? await c.subscriptions("pending") : [] };
    this.render();
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

  render() {
    this.renderAccount();
    this.renderKeys();
    this.renderUsage();
    this.renderPlan();
    this.renderEvents();
    this.renderAdmin();
    document.body.dataset.loaded = String(Date.now());
  }

  renderAccount() {
    const { me, i18n } = this;
    $("account-email").textContent = me.account.email;
    const plan = $("account-plan");
    plan.textContent = i18n.plan(me.plan);
    plan.dataset.plan = me.plan;
    $("account-role").hidden = me.role !== "operator";
    $("account-role").textContent = i18n.t("operator");
    $("account-limits").textContent = i18n.t("limits", { rate: me.limits.rate, keys: me.limits.keys });
  }

  renderKeys() {
    const t = (k, v) => this.i18n.t(k, v);
    replaceChildren($("keys-body"), this.view.keys.map((k) => el("tr",
      { class: k.revokedAt ? "revoked" : null, dataset: { id: k.id } },
      el("td", {}, k.label ?? ""), el("td", { class: "mono" }, `${k.prefix ?? ""}…`),
      el("td", {}, this.i18n.plan(k.plan)), el("td", { class: "num" }, k.rate),
      el("td", { class: "opt" }, when(k.createdAt)), el("td", { class: "opt" }, when(k.lastUsedAt) || t("never")),
      el("td", { class: "actions" }, k.revokedAt ? t("revoked") : [
        el("button", { type: "button", class: "ghost", dataset: { act: "rename" },
          onclick: () => this.act(() => this.renameKey(k)) }, t("rename")),
        el("button", { type: "button", class: "ghost", dataset: { act: "rotate" },
          onclick: () => this.act(() => this.rotateKey(k)) }, t("rotate")),
        el("button", { type: "button", class: "ghost", dataset: { act: "revoke" },
          onclick: () => this.act(() => this.revokeKey(k)) }, t("revoke")),
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

  renderPlan() {
    const { me, i18n } = this;
    const lines = [i18n.t("planNow", { plan: i18n.plan(me.plan), rate: me.limits.rate, keys: me.limits.keys,
      ws: me.limits.wsConnections })];
    const sub = me.subscription;
    if (sub?.status === "pending") lines.push(i18n.t("requestPending", { plan: i18n.plan(sub.plan) }));
    if (sub?.status === "rejected") lines.push(i18n.t("requestRejected", { plan: i18n.plan(sub.plan) }));
    $("plan-status").textContent = lines.join(" ");
    $("plan-status").dataset.subscription = sub?.status ?? "";
    $("plan-form").hidden = sub?.status === "pending" || me.plan === "enterprise";
    const choice = $("plan-choice"); // only a plan above the current one can be asked for
    for (const option of choice.options) option.disabled = option.value === me.plan;
    if (choice.value === me.plan) choice.value = "enterprise";
  }

  renderEvents() {
    const items = this.view.events;
    replaceChildren($("events"), items.length ? items.map((e) => el("li", { dataset: { kind: e.kind } },
      el("span", { class: "when mono" }, when(e.at)), el("span", {}, this.i18n.t(`ev_${e.kind}`)),
      el("span", { class: "mono" }, e.keyId ?? e.detail ?? ""), el("span", { class: "when mono" }, e.ip ?? "")))
      : el("li", {}, this.i18n.t("noEvents")));
  }

  renderAdmin() {
    const operator = this.me.role === "operator";
    $("admin").hidden = !operator;
    if (!operator) return;
    const t = (k) => this.i18n.t(k);
    const rows = this.view.requests.map((s) => {
      const rate = s.plan === "enterprise" ? el("input", { type: "number", min: "1", placeholder: t("rate"),
        "aria-label": t("rate"), dataset: { testid: "approve-rate" } }) : null;
      return el("tr", { dataset: { id: s.id } }, el("td", {}, s.email ?? s.userId),
        el("td", {}, this.i18n.plan(s.plan)), el("td", { class: "opt wide" }, s.message ?? ""),
        el("td", { class: "actions" }, rate,
          el("button", { type: "button", dataset: { act: "approve" }, onclick: () => this.act(() =>
            this.decide(s, true, rate ? Number(rate.value) : undefined)) }, t("approve")),
          el("button", { type: "button", class: "ghost", dataset: { act: "reject" },
            onclick: () => this.act(() => this.decide(s, false)) }, t("reject"))));
    });
    replaceChildren($("requests-body"), rows.length ? rows : el("tr", {}, el("td", { colspan: "4" }, t("noPending"))));
  }

  async createKey() {
    const label = $("key-label").value.trim();
    const created = await this.client.console.createKey(label || null);
    $("key-label").value = "";
    this.showSecret(created.key);
    await this.loadKeys();
  }

  async renameKey(k) {
    const label = prompt(this.i18n.t("renamePrompt", { id: k.id }), k.label ?? "");
    if (!label || !label.trim()) return;
    await this.client.console.renameKey(k.id, label.trim());
    await this.loadKeys();
  }

  async rotateKey(k) {
    if (!confirm(this.i18n.t("confirmRotate", { id: k.id }))) return;
    const rotated = await this.client.console.rotateKey(k.id);
    this.showSecret(rotated.key);
    await this.loadKeys();
  }

  async revokeKey(k) {
    if (!confirm(this.i18n.t("confirmRevoke", { id: k.id }))) return;
    await this.client.console.revokeKey(k.id);
    await this.loadKeys();
  }

  async requestPlan() {
    const message = $("plan-message").value.trim();
    await this.client.console.requestPlan($("plan-choice").value, message || null);
    $("plan-message").value = "";
    await this.load();
  }

  async decide(s, approve, rate) {
    if (approve) await this.client.console.approve(s.id, rate);
    else await this.client.console.reject(s.id);
    await this.load();
  }

  showSecret(secret) {
    $("secret-value").value = secret;
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
