// The service console's UI strings in English and Chinese.

const STRINGS = {
  en: {
    title: "Service console", toDashboard: "Dashboard", langToggle: "中文",
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
    renamePrompt: "New label for {id}", confirmRotate: "Rotate {id}? The current secret stops at once.",
    confirmRevoke: "Revoke {id}? It stops at once.",
    usage: "Usage per day (UTC+8)", usageEmpty: "No traffic in the last 30 days.",
    usageChart: "Requests per day; red: refused (429)",
    plan: "Plan", wantPlan: "Ask for", message: "Message (optional)", requestPlan: "Request upgrade",
    planFree: "free", planProfessional: "professional", planEnterprise: "enterprise",
    planNow: "You are on the {plan} plan: {rate} requests a minute, {keys} keys, {ws} WebSocket connections per key.",
    requestPending: "Your request for the {plan} plan is waiting for an operator.",
    requestRejected: "Your request for the {plan} plan was declined.",
    requestSent: "Request sent: an operator will decide.",
    events: "Activity", noEvents: "Nothing yet.",
    ev_created: "key created", ev_rotated: "key rotated", ev_revoked: "key revoked", ev_relabelled: "key renamed",
    ev_plan_requested: "plan requested", ev_plan_changed: "plan changed", ev_plan_rejected: "plan request declined",
    pending: "Pending requests (operators)", approve: "Approve", reject: "Reject", rate: "rate/min",
    noPending: "No pending requests.", operator: "operator",
    limits: "{rate}/min · {keys} keys",
    foot: "Keys are stored only as hashes on the server. This page keeps your session in memory only.",
    errorNetwork: "The server cannot be reached.",
  },
  zh: {
    title: "服务控制台", toDashboard: "行情看板", langToggle: "English",
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
    renamePrompt: "{id} 的新名称", confirmRotate: "轮换 {id}？当前密钥立即失效。", confirmRevoke: "吊销 {id}？立即失效。",
    usage: "每日用量（北京时间）", usageEmpty: "最近 30 天没有请求。", usageChart: "每日请求数；红色：被限流 (429)",
    plan: "套餐", wantPlan: "申请", message: "留言（可选）", requestPlan: "申请升级",
    planFree: "免费", planProfessional: "专业", planEnterprise: "企业",
    planNow: "当前为{plan}套餐：每分钟 {rate} 次请求，{keys} 个密钥，每个密钥 {ws} 个 WebSocket 连接。",
    requestPending: "您的{plan}套餐申请正在等待运营人员处理。",
    requestRejected: "您的{plan}套餐申请未获批准。",
    requestSent: "申请已提交，等待运营人员处理。",
    events: "操作记录", noEvents: "暂无记录。",
    ev_created: "创建密钥", ev_rotated: "轮换密钥", ev_revoked: "吊销密钥", ev_relabelled: "密钥改名",
    ev_plan_requested: "申请套餐", ev_plan_changed: "套餐变更", ev_plan_rejected: "套餐申请被拒",
    pending: "待处理申请（运营）", approve: "批准", reject: "拒绝", rate: "次/分钟",
    noPending: "没有待处理的申请。", operator: "运营",
    limits: "{rate} 次/分钟 · {keys} 个密钥",
    foot: "服务器只保存密钥的哈希值。本页面只在内存中保留登录状态。",
    errorNetwork: "无法连接服务器。",
  },
};

export class ConsoleI18n {
  constructor(lang) {
    this.lang = lang in STRINGS ? lang : "en";
  }

  toggle() {
    this.lang = this.lang === "en" ? "zh" : "en";
    return this.lang;
  }

  t(key, vars = {}) {
    const text = STRINGS[this.lang][key] ?? STRINGS.en[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
  }

  plan(name) {
    return this.t(`plan${name.charAt(0).toUpperCase()}${name.slice(1)}`);
  }

  /** Every element with data-i18n / data-i18n-placeholder, in the current language. */
  apply(root = document) {
    document.documentElement.lang = this.lang === "zh" ? "zh-CN" : "en";
    for (const n of root.querySelectorAll("[data-i18n]")) n.textContent = this.t(n.dataset.i18n);
    for (const n of root.querySelectorAll("[data-i18n-placeholder]")) n.placeholder = this.t(n.dataset.i18nPlaceholder);
  }
}
