// The console's Support section's strings (SPEC 20), in English and Chinese; merged into console-i18n.js's.

export const SUPPORT_STRINGS = {
  en: {
    support: "Support", ticketFilter: "Status", filterAll: "all tickets", filterOpen: "open", filterClosed: "closed",
    supportHint: "Ask us anything about the service. Enterprise tickets get a first answer within 1 hour (severity 1) "
      + "or 8 business hours (09:00-17:00 UTC+8 on exchange trading days).",
    supportOperatorHint: "Every account's tickets: open one to answer; the customer is e-mailed each reply.",
    ticketSubject: "Subject", ticketSeverity: "Severity", ticketBody: "What happened (plain text)",
    sev1: "1 · service down", sev2: "2 · degraded", sev3: "3 · question", openTicket: "Open ticket",
    colSubject: "Subject", colSeverity: "Severity", colStatus: "Status", colFirstResponse: "First response",
    colUpdated: "Updated", st_open: "open", st_closed: "closed", noTickets: "No tickets.",
    targetDue: "due {t}", targetMet: "answered in time", targetMissed: "target missed",
    back: "Back to the list", replyLabel: "Reply", send: "Send", closeTicket: "Close ticket",
    reopenTicket: "Reopen ticket", author_customer: "Customer", author_operator: "Support",
    ticketOpened: "Ticket {id} opened: we will answer here and by e-mail.", ticketReplied: "Reply sent.",
    ticketClosed: "Ticket closed.", ticketReopened: "Ticket reopened.",
    err_ticket_conflict: "This ticket is closed: reopen it to write.",
    err_ticket_not_found: "No such ticket.",
  },
  zh: {
    support: "技术支持", ticketFilter: "状态", filterAll: "全部工单", filterOpen: "处理中", filterClosed: "已关闭",
    supportHint: "有任何服务问题请提交工单。企业套餐工单的首次响应：严重级别 1 为 1 小时内，其他为 8 个工作小时内"
      + "（交易日 09:00-17:00，UTC+8）。",
    supportOperatorHint: "所有账户的工单：打开即可回复，每条回复都会邮件通知客户。",
    ticketSubject: "主题", ticketSeverity: "严重级别", ticketBody: "问题描述（纯文本）",
    sev1: "1 · 服务中断", sev2: "2 · 服务降级", sev3: "3 · 咨询", openTicket: "提交工单",
    colSubject: "主题", colSeverity: "严重级别", colStatus: "状态", colFirstResponse: "首次响应",
    colUpdated: "更新时间", st_open: "处理中", st_closed: "已关闭", noTickets: "暂无工单。",
    targetDue: "应于 {t} 前", targetMet: "已按时响应", targetMissed: "未按时响应",
    back: "返回列表", replyLabel: "回复", send: "发送", closeTicket: "关闭工单",
    reopenTicket: "重新打开", author_customer: "客户", author_operator: "技术支持",
    ticketOpened: "工单 {id} 已提交：我们会在此处并通过邮件回复。", ticketReplied: "回复已发送。",
    ticketClosed: "工单已关闭。", ticketReopened: "工单已重新打开。",
    err_ticket_conflict: "该工单已关闭：请重新打开后再回复。",
    err_ticket_not_found: "工单不存在。",
  },
};
