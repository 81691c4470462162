// The status page (/status, SPEC 20): GET /api/v1/status (no key) every 15 s, in English or Chinese.
// It needs nothing but that one route, which the hub answers while storage, Redis or the feed is down.

import { el, replaceChildren } from "./dom.js";

const LANG_STORAGE = "market.lang"; // the language only, shared with the dashboard and the console
const REFRESH_MS = 15_000;
const STRINGS = {
  en: {
    title: "Service status", toDashboard: "Dashboard", langToggle: "中文", loading: "Loading…", checked: "Checked",
    components: "Components", colComponent: "Component", colStatus: "Status", colSince: "Since",
    uptimeNote: "Daily uptime history is not recorded yet (docs/status.md).",
    none: "All systems operational", minor: "Minor service outage", major: "Partial system outage",
    critical: "Major service outage", unreachable: "The service cannot be reached.",
    operational: "Operational", degraded_performance: "Degraded", partial_outage: "Partial outage",
    major_outage: "Major outage", rest: "REST API", stream: "WebSocket stream", storage: "Storage",
    notifications: "Notifications", redis: "Redis engine", feed: "Feed: {name}",
  },
  zh: {
    title: "服务状态", toDashboard: "行情面板", langToggle: "English", loading: "加载中…", checked: "检查于",
    components: "组件", colComponent: "组件", colStatus: "状态", colSince: "自",
    uptimeNote: "尚未记录每日可用率历史（见 docs/status.md）。",
    none: "所有系统运行正常", minor: "部分服务性能下降", major: "部分系统中断", critical: "服务严重中断",
    unreachable: "无法连接服务。",
    operational: "正常", degraded_performance: "性能下降", partial_outage: "部分中断", major_outage: "严重中断",
    rest: "REST 接口", stream: "WebSocket 推送", storage: "存储", notifications: "通知", redis: "Redis 引擎",
    feed: "行情源：{name}",
  },
};

let lang = savedLang() ?? ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en");
let last = null;

function savedLang() {
  try {
    return localStorage.getItem(LANG_STORAGE);
  } catch {
    return null;
  }
}

function t(key, vars = {}) {
  const text = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

function componentName(c) {
  if (c.id.startsWith("feed:")) return t("feed", { name: c.name.replace(/^Feed: /, "") });
  return STRINGS[lang][c.id] ? t(c.id) : c.name;
}

function render() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const n of document.querySelectorAll("[data-i18n]")) n.textContent = t(n.dataset.i18n);
  document.getElementById("lang-toggle").textContent = t("langToggle");
  if (!last) return;
  const overall = document.getElementById("overall");
  overall.dataset.indicator = last.status.indicator;
  overall.textContent = t(last.status.indicator);
  replaceChildren(document.getElementById("component-rows"), last.components.map((c) => el("tr",
    { dataset: { id: c.id } },
    el("td", {}, componentName(c)),
    el("td", {}, el("span", { class: `component-status ${c.status}` }, t(c.status))),
    el("td", { class: "since" }, c.updatedAt.replace("T", " ").slice(0, 19)))));
}

async function refresh() {
  const banner = document.getElementById("banner");
  try {
    const resp = await fetch("/api/v1/status", { cache: "no-store" });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    last = await resp.json();
    banner.hidden = true;
    document.getElementById("checked").textContent = new Date().toLocaleTimeString(lang === "zh" ? "zh-CN" : "en");
  } catch {
    banner.textContent = t("unreachable");
    banner.hidden = false;
  }
  render();
}

document.getElementById("lang-toggle").addEventListener("click", () => {
  lang = lang === "zh" ? "en" : "zh";
  try {
    localStorage.setItem(LANG_STORAGE, lang);
  } catch {
    // private mode: the choice lasts for this page only
  }
  render();
});
refresh();
setInterval(refresh, REFRESH_MS);
