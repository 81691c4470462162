// The dashboard's entry point: language, the key (kept in this browser's local storage only),
// the error banner, and the two views (public market, keyed session).

import { HANDOVER_STORAGE, makeClient, settle } from "./calls.js";
import { el, replaceChildren } from "./dom.js";
import { I18n } from "./i18n.js";
import { KeyedSession } from "./keyed.js";
import { PublicView } from "./public.js";

const KEY_STORAGE = "market.apiKey";
const LANG_STORAGE = "market.lang";

/** Messages shown in the banner, by source; each is a function so it follows the language. */
class Notices {
  constructor(node, i18n) {
    this.node = node;
    this.i18n = i18n;
    this.items = new Map();
  }

  set(id, text, status) {
    this.items.set(id, { text, status });
    this.render();
  }

  clear(id) {
    if (this.items.delete(id)) this.render();
  }

  render() {
    this.node.hidden = this.items.size === 0;
    // "cannot reach the server" once, however many parts of the page found it out (status 0); while it cannot be
    // reached, what it answered before it went (a 503 "stopping", a 5xx) is no longer news: only the key's own
    // refusals (4xx) stay beside it
    const all = [...this.items.entries()];
    const unreachable = all.findIndex(([, m]) => m.status === 0);
    const shown = all.filter(([, n], i) => n.status === 0 ? i === unreachable : !(unreachable >= 0 && n.status >= 500));
    this.node.dataset.status = shown.map(([, n]) => n.status).join(" ");
    replaceChildren(this.node, shown.map(([id, n]) =>
      el("p", { dataset: { source: id, status: String(n.status) } }, n.text())));
  }
}

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null; // storage disabled: the key lasts as long as the page
  }
}

/** The key the console handed over in this tab's sessionStorage ("Open the dashboard with this key"): read once,
 * then removed, so it never travels in a URL, the server's logs or the history. */
function handedOver() {
  try {
    const key = window.sessionStorage.getItem(HANDOVER_STORAGE);
    window.sessionStorage.removeItem(HANDOVER_STORAGE);
    return key || null;
  } catch {
    return null;
  }
}

function initialLang() {
  const saved = storage()?.getItem(LANG_STORAGE);
  if (saved) return saved;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}

function maskKey(key) {
  return key.length <= 8 ? "••••" : `${key.slice(0, 3)}…${key.slice(-4)}`;
}

class Dashboard {
  constructor() {
    this.i18n = new I18n(initialLang());
    this.notices = new Notices(document.getElementById("banner"), this.i18n);
    this.config = { wsPort: 8001, wsPath: "/ws/quotes" };
    this.session = null;
    this.publicView = new PublicView({
      i18n: this.i18n,
      notices: this.notices,
      onDemo: (demo) => { document.getElementById("demo-badge").hidden = !demo; },
    });
  }

  async start() {
    this.applyText();
    document.getElementById("lang-toggle").addEventListener("click", () => this.toggleLang());
    document.getElementById("key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.useKey(document.getElementById("key-input").value.trim(), { fromForm: true });
    });
    document.getElementById("forget-key").addEventListener("click", () => this.forgetKey());
    this.publicView.start();
    const cfg = await settle(makeClient(), "/api/config");
    if (cfg.ok) this.config = cfg.data;
    const saved = handedOver() ?? storage()?.getItem(KEY_STORAGE);
    if (saved) this.useKey(saved, { fromForm: false });
  }

  /** Where the stream listens (its own port); the stream client adds the key (`?key=`: a browser cannot set headers). */
  wsUrl() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${location.hostname}:${this.config.wsPort}${this.config.wsPath}`;
  }

  async useKey(key, { fromForm }) {
    if (!key) return;
    this.endSession();
    this.notices.clear("key");
    this.showKeyActive(key, true);
    const session = new KeyedSession(key, {
      i18n: this.i18n,
      notices: this.notices,
      wsUrl: () => this.wsUrl(),
      heartbeatMs: (this.config.heartbeatS ?? 5) * 1000, // the stream learns the server's from its heartbeats
      onRejected: (status) => this.rejected(session, status),
      // the Markets cards follow the same quotes as the live table while a session has them
      onQuotes: (book) => { if (session === this.session) this.publicView.setLive(book); },
      onQuote: (row) => { if (session === this.session) this.publicView.updateLive(row); },
    });
    this.session = session;
    const outcome = await session.start();
    if (outcome !== "ok" || session !== this.session) return;
    storage()?.setItem(KEY_STORAGE, key);
    if (fromForm) document.getElementById("key-input").value = "";
  }

  /** The server said 401: the key is wrong or was revoked. Sign out and say why. */
  rejected(session, status) {
    if (session !== this.session) return;
    this.endSession();
    storage()?.removeItem(KEY_STORAGE);
    this.showKeyActive(null, false);
    this.notices.set("key", () => this.i18n.t(status === 403 ? "err403" : "err401"), status);
  }

  forgetKey() {
    this.endSession();
    storage()?.removeItem(KEY_STORAGE);
    this.notices.clear("key");
    this.showKeyActive(null, false);
    document.getElementById("key-input").value = "";
    document.getElementById("key-input").focus();
  }

  endSession() {
    this.session?.stop();
    this.session = null;
    this.publicView.setLive(null);
    document.getElementById("keyed").hidden = true;
    document.getElementById("status").hidden = true;
  }

  showKeyActive(key, active) {
    document.getElementById("key-form").hidden = active;
    document.getElementById("key-hint").hidden = active;
    document.getElementById("key-help").hidden = active; // where keys come from: for those without one
    document.getElementById("key-active").hidden = !active;
    document.getElementById("key-masked").textContent = key ? this.i18n.t("keyInUse", { masked: maskKey(key) }) : "";
    if (!active) document.getElementById("plan-badge").textContent = "";
  }

  toggleLang() {
    const lang = this.i18n.toggle();
    storage()?.setItem(LANG_STORAGE, lang);
    this.applyText();
    this.publicView.render();
    this.session?.render();
    this.notices.render();
  }

  /** Fill every [data-i18n] element and attribute in the current language. */
  applyText() {
    const { i18n } = this;
    document.documentElement.lang = i18n.lang === "zh" ? "zh-CN" : "en";
    document.title = i18n.t("title");
    for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = i18n.t(node.dataset.i18n);
    for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
      node.placeholder = i18n.t(node.dataset.i18nPlaceholder);
    }
    for (const node of document.querySelectorAll("[data-i18n-title]")) node.title = i18n.t(node.dataset.i18nTitle);
    const toggle = document.getElementById("lang-toggle");
    toggle.textContent = i18n.t("langToggle");
    toggle.lang = i18n.lang === "zh" ? "en" : "zh-CN";
    const masked = document.getElementById("key-masked");
    if (this.session) masked.textContent = i18n.t("keyInUse", { masked: maskKey(this.session.key) });
  }
}

new Dashboard().start();
