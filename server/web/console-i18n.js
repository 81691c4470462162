// The service console's UI strings in English and Chinese.

import { SOURCE_STRINGS } from "./console-source-i18n.js";
import { SUPPORT_STRINGS } from "./console-support-i18n.js";

const STRINGS = {
  en: {
    title: "Service console", toDashboard: "Dashboard",
    langToggle: "中文", cancel: "Cancel", refresh: "Refresh", usageAt: "as of {t}", unlabelled: "no label",
    openDashboard: "Open the dashboard with this key",
    signedIn: "Signed in as {email}.", signedOut: "Signed out.",
    keyCreated: "Key created: copy it now, it is shown once.",
    keyRenamed: "Renamed: {key}.", keyRotated: "Rotated {key}: copy the new secret now.", keyRevoked: "Revoked {key}.",
    usageRefreshed: "Usage refreshed.", approved: "Approved: {email} is on the {plan} plan.",
    rejected: "Declined the {plan} plan request of {email}.",
    colAsked: "Asked", colDecided: "Decided", colDecision: "Decision", decisions: "Decisions",
    decision_approved: "approved", decision_rejected: "declined", noDecisions: "No decisions yet.",
    err_signIn_unauthorized: "Wrong e-mail or password.",
    err_signUp_conflict: "An account with this e-mail already exists: sign in instead.",
    err_signUp_validation_failed: "Check the e-mail address; the password needs at least 8 characters.",
    err_createKey_conflict: "Your plan's keys are all in use: revoke one, or ask for a bigger plan below.",
    err_requestPlan_conflict: "A request is already waiting, or you are on this plan already.",
    err_decide_conflict: "This request was decided already.",
    err_decide_validation_failed: "An enterprise approval needs a rate (requests a minute).",
    err_resume_unauthorized: "Your session has expired: sign in again.",
    err_unauthorized: "Your session has expired: sign in again.", err_forbidden: "This account may not do that.",
    err_not_found: "Not found: it may have been removed meanwhile.",
    err_conflict: "That conflicts with the current state.",
    err_validation_failed: "Some fields are not valid.", err_invalid_parameter: "Some fields are not valid.",
    err_rate_limited: "Too many requests (429): wait a minute and try again.",
    err_storage_unavailable: "The service's database is away: try again shortly.",
    err_network: "The server cannot be reached.", err_other: "The server refused ({status}).",
    signIn: "Sign in", signUp: "Create account", signOut: "Sign out",
    toSignUp: "New here? Create an account", toSignIn: "Have an account? Sign in",
    email: "E-mail", password: "Password (8+ characters)",
    authHint: "A new account starts on the free plan: one trial key at 60 requests a minute.",
    registered: "Account created: you are signed in.",
    keys: "API keys", keyLabel: "Label", keyLabelPlaceholder: "label, e.g. trading desk", createKey: "Create key",
    secretOnce: "Copy this key now: it is shown once and never stored in this browser.",
    copy: "Copy", copied: "Copied", saved: "I saved it",
    colLabel: "Label", colPrefix: "Key", colPlan: "Plan", colRate: "Rate/min", colCreated: "Created",
    colLastUsed: "Last used", colActions: "Actions", colDate: "Date", colRequests: "Requests", colRefused: "429",
    colErrors: "Other 4xx", colWs: "WebSocket", colWsMessages: "Messages", colEmail: "Account",
    colMessage: "Message",
    rename: "Rename", rotate: "Rotate", revoke: "Revoke", revoked: "revoked", never: "never",
    renamePrompt: "New label for {key}", confirmRotate: "Rotate {key}? Its current secret stops working at once.",
    confirmRevoke: "Revoke {key}? It stops working at once.",
    usage: "Usage per day (UTC+8)", usageEmpty: "No traffic in the last 30 days.",
    usageChart: "Requests per day; red: refused (429)",
    plan: "Plan", wantPlan: "Ask for", message: "Message (optional)", requestPlan: "Request upgrade",
    planFree: "free", planProfessional: "professional", planEnterprise: "enterprise",
    planNow: "You are on the {plan} plan: {rate} requests a minute, {n} keys, {ws} WebSocket connections per key.",
    planNow_one: "You are on the {plan} plan: {rate} requests a minute, 1 key, {ws} WebSocket connections per key.",
    requestPending: "Your request for the {plan} plan is waiting for an operator.",
    requestRejected: "Your request for the {plan} plan was declined.",
    requestSent: "Request for the {plan} plan sent: an operator will decide.",
    events: "Activity", noEvents: "Nothing yet.",
    ev_created: "key created", ev_rotated: "key rotated", ev_revoked: "key revoked", ev_relabelled: "key renamed",
    ev_plan_requested: "plan requested", ev_plan_changed: "plan changed", ev_plan_rejected: "plan request declined",
    ev_limits_changed: "data source limits changed",
    pending: "Pending requests (operators)", approve: "Approve", reject: "Reject", rate: "rate/min",
    noPending: "No pending requests.", operator: "operator",
    limits: "{rate}/min · {n} keys", limits_one: "{rate}/min · 1 key",
    foot: "Keys are stored only as hashes on the server. This tab keeps your session until you sign out or it expires.",
    sla: "Availability (SLA)", colComponent: "Component", colAvailability: "Availability", colTarget: "Target",
    colDownMinutes: "Down minutes", colDownRanges: "Down", csvRanges: "Down ranges (CSV)", csvDays: "Per day (CSV)",
    slaSummary: "{n} minutes counted · latency p50 {p50} ms, p99 {p99} ms · {frames} stream frames",
    slaNone: "No minute of this month counts yet (before the service's first start, or still to come).",
    slaChart: "Availability per day: the lowest component, 90% to 100%; red under the target",
    incidentMailTitle: "Incident e-mails", incidentMail: "E-mail me each update of an incident",
    mailDefaultOn: "Enterprise accounts get them by default.",
    mailDefaultOff: "Enterprise accounts get them by default; others can turn them on here.",
    mailOn: "You will be e-mailed each incident update.", mailOff: "No more incident e-mails.",
    incidentsAdmin: "Incidents (operators)", incidentTitle: "Title", impact: "Impact",
    incidentComponents: "Components (optional, comma-separated: stream, feed:ice-eu)", openIncident: "Open incident",
    impact_minor: "Minor", impact_major: "Major", impact_critical: "Critical", inc_investigating: "Investigating",
    inc_identified: "Identified", inc_monitoring: "Monitoring", inc_resolved: "Resolved", incidentStatus: "Status",
    updateMessage: "Update", postUpdate: "Post update", resolveIncident: "Resolve", noOpenIncidents: "No open incidents.",
    maintenanceAdmin: "Scheduled maintenance", maintenanceFrom: "From (Shanghai time)",
    maintenanceTo: "To (Shanghai time)", addMaintenance: "Schedule", noMaintenance: "No maintenance scheduled.",
    mnt_scheduled: "Scheduled", mnt_in_progress: "In progress", mnt_completed: "Completed",
    incidentOpened: "Incident opened: {title}.", incidentUpdated: "Update posted: {title}.",
    incidentResolved: "Resolved: {title}.", maintenanceAdded: "Maintenance scheduled: {title}.",
    err_incident_conflict: "This incident is resolved already.",
    err_incident_validation_failed: "Check the title, the components and the update's text.",
    err_maintenance_validation_failed: "Check the title and the times: the end must be after the start.",
  },
  zh: {
    title: "服务控制台", toDashboard: "行情看板",
    langToggle: "English", cancel: "取消", refresh: "刷新", usageAt: "截至 {t}", unlabelled: "未命名",
    openDashboard: "用此密钥打开行情看板",
    signedIn: "已登录：{email}。", signedOut: "已退出。", keyCreated: "密钥已创建：请立即复制，它只显示一次。",
    keyRenamed: "已改名：{key}。", keyRotated: "已轮换 {key}：请立即复制新密钥。", keyRevoked: "已吊销 {key}。",
    usageRefreshed: "用量已刷新。", approved: "已批准：{email} 现为{plan}套餐。",
    rejected: "已拒绝 {email} 的{plan}套餐申请。",
    colAsked: "申请时间", colDecided: "处理时间", colDecision: "结果", decisions: "处理记录",
    decision_approved: "已批准", decision_rejected: "已拒绝", noDecisions: "暂无处理记录。",
    err_signIn_unauthorized: "邮箱或密码错误。",
    err_signUp_conflict: "该邮箱已注册，请直接登录。",
    err_signUp_validation_failed: "请检查邮箱地址；密码至少 8 位。",
    err_createKey_conflict: "套餐的密钥数已用完：请吊销一个，或在下方申请更高套餐。",
    err_requestPlan_conflict: "已有申请在等待处理，或您已是该套餐。",
    err_decide_conflict: "该申请已处理。",
    err_decide_validation_failed: "批准企业套餐需要填写速率（每分钟请求数）。",
    err_resume_unauthorized: "登录已过期，请重新登录。",
    err_unauthorized: "登录已过期，请重新登录。", err_forbidden: "此账户无权执行该操作。",
    err_not_found: "未找到：可能已被删除。", err_conflict: "与当前状态冲突。",
    err_validation_failed: "部分字段无效。", err_invalid_parameter: "部分字段无效。",
    err_rate_limited: "请求过于频繁（429）：请一分钟后再试。",
    err_storage_unavailable: "服务数据库暂时不可用，请稍后再试。",
    err_network: "无法连接服务器。", err_other: "服务器拒绝了请求（{status}）。",
    signIn: "登录", signUp: "注册账户", signOut: "退出",
    toSignUp: "没有账户？注册", toSignIn: "已有账户？登录",
    email: "邮箱", password: "密码（至少 8 位）",
    authHint: "新账户为免费套餐：一个试用密钥，每分钟 60 次请求。",
    registered: "账户已创建，已登录。",
    keys: "API 密钥", keyLabel: "名称", keyLabelPlaceholder: "名称，例如 交易台", createKey: "创建密钥",
    secretOnce: "请立即复制此密钥：它只显示这一次，本浏览器不会保存。",
    copy: "复制", copied: "已复制", saved: "我已保存",
    colLabel: "名称", colPrefix: "密钥", colPlan: "套餐", colRate: "次/分钟", colCreated: "创建时间",
    colLastUsed: "最近使用", colActions: "操作", colDate: "日期", colRequests: "请求", colRefused: "429",
    colErrors: "其他 4xx", colWs: "WebSocket", colWsMessages: "消息", colEmail: "账户", colMessage: "留言",
    rename: "改名", rotate: "轮换", revoke: "吊销", revoked: "已吊销", never: "从未",
    renamePrompt: "{key} 的新名称", confirmRotate: "轮换 {key}？当前密钥立即失效。", confirmRevoke: "吊销 {key}？立即失效。",
    usage: "每日用量（UTC+8）", usageEmpty: "最近 30 天没有请求。", usageChart: "每日请求数；红色：被限流 (429)",
    plan: "套餐", wantPlan: "申请", message: "留言（可选）", requestPlan: "申请升级",
    planFree: "免费", planProfessional: "专业", planEnterprise: "企业",
    planNow: "当前为{plan}套餐：每分钟 {rate} 次请求，{n} 个密钥，每个密钥 {ws} 个 WebSocket 连接。",
    requestPending: "您的{plan}套餐申请正在等待运营人员处理。",
    requestRejected: "您的{plan}套餐申请未获批准。",
    requestSent: "{plan}套餐申请已提交，等待运营人员处理。",
    events: "操作记录", noEvents: "暂无记录。",
    ev_created: "创建密钥", ev_rotated: "轮换密钥", ev_revoked: "吊销密钥", ev_relabelled: "密钥改名",
    ev_plan_requested: "申请套餐", ev_plan_changed: "套餐变更", ev_plan_rejected: "套餐申请被拒",
    ev_limits_changed: "数据源限额变更",
    pending: "待处理申请（运营）", approve: "批准", reject: "拒绝", rate: "次/分钟",
    noPending: "没有待处理的申请。", operator: "运营",
    limits: "{rate} 次/分钟 · {n} 个密钥",
    foot: "服务器只保存密钥的哈希值。本标签页保留登录状态，直到退出或过期。",
    sla: "可用性（SLA）", colComponent: "组件", colAvailability: "可用性", colTarget: "目标",
    colDownMinutes: "不可用分钟", colDownRanges: "不可用时段", csvRanges: "不可用时段（CSV）", csvDays: "逐日数据（CSV）",
    slaSummary: "计入 {n} 分钟 · 延迟 p50 {p50} 毫秒、p99 {p99} 毫秒 · 推送 {frames} 帧",
    slaNone: "本月尚无计入的分钟（早于服务首次启动，或尚未到来）。",
    slaChart: "逐日可用性：当日最低的组件，90% 至 100%；低于目标为红色",
    incidentMailTitle: "故障通报邮件", incidentMail: "每次故障更新时给我发邮件",
    mailDefaultOn: "企业版账户默认接收。", mailDefaultOff: "企业版账户默认接收；其他账户可在此开启。",
    mailOn: "将通过邮件通知您每次故障更新。", mailOff: "不再发送故障通报邮件。",
    incidentsAdmin: "故障事件（运营）", incidentTitle: "标题", impact: "影响",
    incidentComponents: "组件（可选，逗号分隔：stream, feed:ice-eu）", openIncident: "创建事件",
    impact_minor: "轻微", impact_major: "严重", impact_critical: "重大", inc_investigating: "调查中",
    inc_identified: "已定位", inc_monitoring: "观察中", inc_resolved: "已解决", incidentStatus: "状态",
    updateMessage: "更新内容", postUpdate: "发布更新", resolveIncident: "标记解决", noOpenIncidents: "没有未解决的事件。",
    maintenanceAdmin: "计划维护", maintenanceFrom: "开始（上海时间）", maintenanceTo: "结束（上海时间）",
    addMaintenance: "安排维护", noMaintenance: "没有计划维护。", mnt_scheduled: "已计划", mnt_in_progress: "进行中",
    mnt_completed: "已完成", incidentOpened: "已创建事件：{title}。", incidentUpdated: "已发布更新：{title}。",
    incidentResolved: "已解决：{title}。", maintenanceAdded: "已安排维护：{title}。",
    err_incident_conflict: "该事件已解决。", err_incident_validation_failed: "请检查标题、组件和更新内容。",
    err_maintenance_validation_failed: "请检查标题和时间：结束须晚于开始。",
  },
};

for (const lang of Object.keys(STRINGS)) Object.assign(STRINGS[lang], SUPPORT_STRINGS[lang]); // SPEC 20's tickets
for (const lang of Object.keys(STRINGS)) Object.assign(STRINGS[lang], SOURCE_STRINGS[lang]); // a data source

export class ConsoleI18n {
  constructor(lang) {
    this.lang = lang in STRINGS ? lang : "en";
  }

  toggle() {
    this.lang = this.lang === "en" ? "zh" : "en";
    return this.lang;
  }

  /** A UI string with {name} placeholders; with a count `n`, its plural form (`key_one`) where one exists. */
  t(key, vars = {}) {
    const plural = "n" in vars ? `${key}_${new Intl.PluralRules(this.lang).select(vars.n)}` : null;
    const strings = STRINGS[this.lang];
    const text = (plural && strings[plural]) ?? strings[key] ?? STRINGS.en[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
  }

  /** A refusal in the page's words: by action and problem code, then by code alone (the API's `detail` stays
   * English and goes to the tooltip). */
  problem(action, code, status) {
    const strings = STRINGS[this.lang];
    const key = [`err_${action}_${code}`, `err_${code}`].find((k) => k in strings) ?? "err_other";
    return this.t(key, { status });
  }

  plan(name) {
    return this.t(`plan${name.charAt(0).toUpperCase()}${name.slice(1)}`);
  }

  /** Every element with data-i18n / data-i18n-placeholder, in the current language. */
  apply(root = document) {
    document.documentElement.lang = this.lang === "zh" ? "zh-CN" : "en";
    for (const n of root.querySelectorAll("[data-i18n]")) n.textContent = this.t(n.dataset.i18n);
    for (const n of root.querySelectorAll("[data-i18n-placeholder]")) n.placeholder = this.t(n.dataset.i18nPlaceholder);
    const toggle = root.getElementById?.("lang-toggle"); // names the other language, in it
    if (toggle) toggle.lang = this.lang === "zh" ? "en" : "zh-CN";
  }
}
