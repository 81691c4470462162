// The service console's calls (SPEC 17): an account's keys, usage, plan requests and audit list, and the
// operators' decisions; a dedicated data source's instruments, support tickets and SPEC 20's incidents and maintenance (operators) and each account's
// incident e-mail choice. Bearer-authenticated: `client.token` (set by `signIn()`, or given in the options) goes
// with every /api/console request. Keep the token in memory: never in localStorage or a URL.

import type { BodyOf, CallOptions, TypedClient } from "./http.js";

type Q<T> = { [K in keyof T]?: T[K] | undefined };

/** The console namespace of a client (`client.console`). */
export function consoleCalls(c: TypedClient) {
  const base = "/api/console";
  return {
    /** Sign in (POST /api/auth/login) and keep the token on the client for the console's calls. */
    signIn: async (email: string, password: string, call?: CallOptions) => {
      const t = await c.login({ email, password }, call);
      c.token = t.token;
      return t;
    },
    /** Forget the token (sign out on this side; the token itself expires on its own). */
    signOut: () => { c.token = null; },
    me: (call?: CallOptions) => c.get(`${base}/me`, { ...call }),
    keys: async (call?: CallOptions) => (await c.get(`${base}/keys`, { ...call })).items,
    /** A new key: `key` in the answer is its secret, shown this once. `scope`: "read" (the default) or "ingest"
     * (an enterprise account's dedicated data source: publishes to its own instruments, reads nothing). */
    createKey: (label?: string | null, scope?: "read" | "ingest", call?: CallOptions) =>
      c.post(`${base}/keys`, {
        body: { ...(label === undefined ? {} : { label }), ...(scope === undefined ? {} : { scope }) }, ...call }),
    /** A new secret (and id) for the key; the old secret stops at once and its streams close with 4001. */
    rotateKey: (id: string, call?: CallOptions) => c.post(`${base}/keys/{id}/rotate`, { params: { id }, ...call }),
    renameKey: async (id: string, label: string, call?: CallOptions) =>
      (await c.request("patch", `${base}/keys/{id}`, { params: { id }, body: { label }, ...call })).data,
    revokeKey: async (id: string, call?: CallOptions) =>
      (await c.request("delete", `${base}/keys/{id}`, { params: { id }, ...call })).data,
    /** Usage per key per day (Asia/Shanghai dates YYYY-MM-DD; default the last 30 days). */
    usage: (query: Q<{ from: string; to: string; key: string }> = {}, call?: CallOptions) =>
      c.get(`${base}/usage`, { query, ...call }),
    events: async (call?: CallOptions) => (await c.get(`${base}/events`, { ...call })).items,
    /** The month's SLA report (`YYYY-MM`, Asia/Shanghai; default this month): enterprise accounts, operators. */
    sla: (month?: string, call?: CallOptions) => c.get(`${base}/sla`, { query: { month }, ...call }),
    requestPlan: (plan: "professional" | "enterprise", message?: string | null, call?: CallOptions) =>
      c.post(`${base}/subscription`, { body: message ? { plan, message } : { plan }, ...call }),
    /** Operators: the subscription requests (optionally of one status). */
    subscriptions: async (status?: "pending" | "approved" | "rejected", call?: CallOptions) =>
      (await c.get(`${base}/admin/subscriptions`, { query: { status }, ...call })).items,
    /** Operators: approve (`rate` in requests/minute for an enterprise plan). */
    approve: (id: string, rate?: number, call?: CallOptions) =>
      c.post(`${base}/admin/subscriptions/{id}/approve`,
        { params: { id }, body: rate === undefined ? {} : { rate }, ...call }),
    reject: (id: string, call?: CallOptions) =>
      c.post(`${base}/admin/subscriptions/{id}/reject`, { params: { id }, ...call }),
    /** Support tickets (SPEC 20), newest first: the account's own; an operator's: every account's. */
    tickets: async (status?: "open" | "closed", call?: CallOptions) =>
      (await c.get(`${base}/tickets`, { query: { status }, ...call })).items,
    /** Open a ticket: `body` is its first message (plain text); severity 1 (down), 2 (degraded), 3 (a question). */
    openTicket: (subject: string, body: string, severity: 1 | 2 | 3, call?: CallOptions) =>
      c.post(`${base}/tickets`, { body: { subject, body, severity }, ...call }),
    /** A ticket and its thread (another account's ticket is a NotFoundError). */
    ticket: (id: string, call?: CallOptions) => c.get(`${base}/tickets/{id}`, { params: { id }, ...call }),
    replyTicket: (id: string, body: string, call?: CallOptions) =>
      c.post(`${base}/tickets/{id}/messages`, { params: { id }, body: { body }, ...call }),
    closeTicket: (id: string, call?: CallOptions) =>
      c.post(`${base}/tickets/{id}/close`, { params: { id }, ...call }),
    reopenTicket: (id: string, call?: CallOptions) =>
      c.post(`${base}/tickets/{id}/reopen`, { params: { id }, ...call }),
    /** A dedicated data source (SPEC 20, enterprise): the account's namespace and its declared instruments. */
    instruments: (call?: CallOptions) => c.get(`${base}/instruments`, { ...call }),
    /** Declare an instrument `{namespace}.{name}` (name zh/en, unit zh/en, currency, decimals, venue). */
    declareInstrument: (body: BodyOf<"/api/console/instruments", "post">, call?: CallOptions) =>
      c.post(`${base}/instruments`, { body, ...call }),
    /** Delete a declared instrument: its id is never reused, its data answers nobody any more. */
    deleteInstrument: async (id: string, call?: CallOptions) =>
      (await c.request("delete", `${base}/instruments/{id}`, { params: { id }, ...call })).data,
    /** Whether this account is e-mailed each incident update (SPEC 20: enterprise by default). */
    incidentMail: (call?: CallOptions) => c.get(`${base}/notifications`, { ...call }),
    setIncidentMail: (incidents: boolean, call?: CallOptions) =>
      c.post(`${base}/notifications`, { body: { incidents }, ...call }),
    /** Operators: the newest 50 incidents and every unresolved one. */
    incidents: async (call?: CallOptions) => (await c.get(`${base}/incidents`, { ...call })).items,
    openIncident: (body: BodyOf<"/api/console/incidents", "post">, call?: CallOptions) =>
      c.post(`${base}/incidents`, { body, ...call }),
    updateIncident: (id: string, status: "identified" | "monitoring", message: string, call?: CallOptions) =>
      c.post(`${base}/incidents/{id}/updates`, { params: { id }, body: { status, message }, ...call }),
    resolveIncident: (id: string, message?: string | null, call?: CallOptions) =>
      c.post(`${base}/incidents/{id}/resolve`, { params: { id }, body: message ? { message } : {}, ...call }),
    /** Operators: maintenance not over yet and the newest 50 others; `from`/`to` ISO 8601 (no offset: Shanghai). */
    maintenances: async (call?: CallOptions) => (await c.get(`${base}/maintenances`, { ...call })).items,
    addMaintenance: (title: string, from: string, to: string, call?: CallOptions) =>
      c.post(`${base}/maintenances`, { body: { title, from, to }, ...call }),
  };
}

export type ConsoleCalls = ReturnType<typeof consoleCalls>;
