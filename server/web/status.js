// The status page (/status, SPEC 20): GET /api/v1/status and /api/v1/status/incidents (no key) every 15 s, and
// GET /api/v1/status/uptime (90 days of daily uptime per component, recomputed by the hub every 5 minutes) every
// 5 minutes, in English or Chinese. The hub answers all three while storage, Redis or the feed is down (from its
// copies).

import { el, replaceChildren } from "./dom.js";

const LANG_STORAGE = "market.lang"; // the language only, shared with the dashboard and the console
const REFRESH_MS = 15_000;
const UPTIME_MS = 300_000;
// a day's bar: green when it meets the enterprise target (99.9%), amber down to 99%, red below, grey without data
const GOOD = 99.9;
const FAIR = 99;
const STRINGS = {
  en: {
    title: "Service status", toDashboard: "Dashboard", langToggle: "中文", loading: "Loading…", checked: "Checked",
    components: "Components", colComponent: "Component", colStatus: "Status", colSince: "Since",
    uptime: "Uptime, last {days} days", uptimeNote: "One bar per day (Asia/Shanghai). Tap or point at a bar.",
    uptimePct: "{pct}% uptime", daysAgo: "{days} days ago", today: "Today", noData: "No data",
    dayUp: "{date} · {pct}% up · {down} min down", dayNone: "{date} · no data", uptimeLoading: "Not computed yet.",
    none: "All systems operational", minor: "Minor service outage", major: "Partial system outage",
    critical: "Major service outage", unreachable: "The service cannot be reached.",
    operational: "Operational", degraded_performance: "Degraded", partial_outage: "Partial outage",
    major_outage: "Major outage", rest: "REST API", stream: "WebSocket stream", storage: "Storage",
    notifications: "Notifications", redis: "Redis engine", feed: "Feed: {name}",
    incidents: "Incidents", noIncidents: "No open incidents.", pastIncidents: "Past incidents",
    noPast: "No incidents recorded.", maintenance: "Scheduled maintenance", automatic: "opened automatically",
    affects: "Affects", resolvedAt: "Resolved", investigating: "Investigating", identified: "Identified",
    monitoring: "Monitoring", resolved: "Resolved", impact_minor: "Minor", impact_major: "Major",
    impact_critical: "Critical", scheduled: "Scheduled", in_progress: "In progress", completed: "Completed",
  },
  zh: {
    title: "服务状态", toDashboard: "行情面板", langToggle: "English", loading: "加载中…", checked: "检查于",
    components: "组件", colComponent: "组件", colStatus: "状态", colSince: "自",
    uptime: "近 {days} 天可用率", uptimeNote: "每天一格（北京时间）。点按或指向一格查看。",
    uptimePct: "可用率 {pct}%", daysAgo: "{days} 天前", today: "今天", noData: "无数据",
    dayUp: "{date} · 可用率 {pct}% · 中断 {down} 分钟", dayNone: "{date} · 无数据", uptimeLoading: "尚未计算。",
    none: "所有系统运行正常", minor: "部分服务性能下降", major: "部分系统中断", critical: "服务严重中断",
    unreachable: "无法连接服务。",
    operational: "正常", degraded_performance: "性能下降", partial_outage: "部分中断", major_outage: "严重中断",
    rest: "REST 接口", stream: "WebSocket 推送", storage: "存储", notifications: "通知", redis: "Redis 引擎",
    feed: "行情源：{name}",
    incidents: "事件", noIncidents: "当前没有未解决的事件。", pastIncidents: "历史事件", noPast: "尚无事件记录。",
    maintenance: "计划维护", automatic: "系统自动创建", affects: "影响", resolvedAt: "解决于",
    investigating: "调查中", identified: "已定位", monitoring: "观察中", resolved: "已解决", impact_minor: "轻微",
    impact_major: "严重", impact_critical: "重大", scheduled: "已计划", in_progress: "进行中", completed: "已完成",
  },
};

let lang = savedLang() ?? ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en");
let last = null;
let history = null; // GET /api/v1/status/incidents: the resolved ones too
let uptime = null; // GET /api/v1/status/uptime
const PAST = 10; // past incidents shown

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
  renderIncidents();
  renderUptime();
}

function dayLevel(pct) {
  if (pct === null) return "none";
  if (pct >= GOOD) return "good";
  return pct >= FAIR ? "fair" : "poor";
}

function dayText(d) {
  return d.availability === null ? t("dayNone", { date: d.date })
    : t("dayUp", { date: d.date, pct: d.availability, down: d.downMinutes });
}

function uptimeRow(c, known) {
  const name = componentName(known.get(c.id) ?? { id: c.id, name: c.id });
  const detail = el("p", { class: "hint uptime-detail" }, "");
  const show = (d) => { detail.textContent = dayText(d); };
  const bars = el("div", { class: "uptime-bars", role: "img", "aria-label": name },
    c.days.map((d) => el("span", {
      class: `bar ${dayLevel(d.availability)}`, title: dayText(d), dataset: { date: d.date },
      onclick: () => show(d), onmouseenter: () => show(d),
    })));
  const pct = c.availability === null ? t("noData") : t("uptimePct", { pct: c.availability });
  return el("div", { class: "uptime-row", dataset: { id: c.id } },
    el("div", { class: "uptime-head" }, el("span", {}, name), el("span", { class: "uptime-pct" }, pct)),
    bars,
    el("div", { class: "uptime-axis" },
      el("span", {}, t("daysAgo", { days: uptime.days })), el("span", {}, t("today"))),
    detail);
}

function renderUptime() {
  const days = uptime ? uptime.days : 90;
  document.getElementById("uptime-title").textContent = t("uptime", { days });
  const rows = document.getElementById("uptime-rows");
  if (!uptime || uptime.asOf === null) {
    replaceChildren(rows, el("p", { class: "hint" }, t("uptimeLoading")));
    return;
  }
  const known = new Map((last ? last.components : []).map((c) => [c.id, c]));
  replaceChildren(rows, uptime.components.map((c) => uptimeRow(c, known)));
}

async function refreshUptime() {
  try {
    const resp = await fetch("/api/v1/status/uptime", { cache: "no-store" });
    if (resp.ok) uptime = await resp.json();
  } catch {
    // the banner of refresh() says the service cannot be reached; the last bars stay
  }
  render();
}

function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 16) : "";
}

function incidentCard(inc) {
  const known = new Map((last ? last.components : []).map((c) => [c.id, c]));
  const names = inc.components.map((id) => (known.has(id) ? componentName(known.get(id)) : id));
  return el("article", { class: `incident impact-${inc.impact}`, dataset: { id: inc.id, status: inc.status } },
    el("h3", {}, el("span", { class: `impact ${inc.impact}` }, t(`impact_${inc.impact}`)), " ", inc.name),
    el("p", { class: "hint" }, `${t(inc.status)} · ${when(inc.createdAt)}`,
      inc.resolvedAt ? ` → ${t("resolvedAt")} ${when(inc.resolvedAt)}` : "",
      names.length ? ` · ${t("affects")}: ${names.join(", ")}` : "", inc.automatic ? ` · ${t("automatic")}` : ""),
    el("ol", { class: "updates" }, inc.updates.map((u) => el("li", {},
      el("strong", {}, t(u.status)), " ", el("time", {}, when(u.createdAt)), el("p", {}, u.body)))));
}

function renderIncidents() {
  const open = last ? last.incidents : [];
  replaceChildren(document.getElementById("incident-list"),
    open.length ? open.map(incidentCard) : el("p", { class: "hint" }, t("noIncidents")));
  const past = (history ? history.incidents : []).filter((i) => i.status === "resolved").slice(0, PAST);
  replaceChildren(document.getElementById("past-list"),
    past.length ? past.map(incidentCard) : el("p", { class: "hint" }, t("noPast")));
  const windows = last ? last.scheduledMaintenances : [];
  document.getElementById("maintenance").hidden = !windows.length;
  replaceChildren(document.getElementById("maintenance-list"), windows.map((m) => el("article",
    { class: "incident maintenance", dataset: { id: m.id, status: m.status } },
    el("h3", {}, m.name), el("p", { class: "hint" },
      `${t(m.status)} · ${when(m.scheduledFor)} – ${when(m.scheduledUntil)}`))));
}

async function refresh() {
  const banner = document.getElementById("banner");
  try {
    const resp = await fetch("/api/v1/status", { cache: "no-store" });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    last = await resp.json();
    const listed = await fetch("/api/v1/status/incidents", { cache: "no-store" });
    if (listed.ok) history = await listed.json();
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
refreshUptime();
setInterval(refresh, REFRESH_MS);
setInterval(refreshUptime, UPTIME_MS);
