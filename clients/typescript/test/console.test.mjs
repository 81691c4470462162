// The console's calls (SPEC 17) against a real server: sign in, a key shown once, rename, usage, a plan request an
// operator approves, rotation, revocation, the audit list; problem documents as typed errors.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConflictError, ForbiddenError, MarketClient, NotFoundError, UnauthorizedError } from "../dist/index.js";
import { Server, cli, havePython } from "./server.mjs";

const PASSWORD = "correct horse";

describe("console calls", { skip: !havePython() && "no Python server (.venv) to test against" }, () => {
  /** @type {Server} */
  let server;

  before(async () => {
    server = await new Server().start();
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.log);
  });

  test("a customer's keys and plan request, an operator's approval", async () => {
    const api = new MarketClient({ baseUrl: server.base });
    await assert.rejects(api.console.me(), UnauthorizedError);
    await api.register({ email: "ts@example.com", password: PASSWORD });
    await api.console.signIn("ts@example.com", PASSWORD);
    const me = await api.console.me();
    assert.deepEqual([me.plan, me.role, me.limits.rate], ["free", "customer", 60]);
    const key = await api.console.createKey("desk");
    assert.ok(key.key.startsWith("mk_"));
    await assert.rejects(api.console.createKey("second"), ConflictError);
    assert.equal((await api.console.renameKey(key.id, "main")).label, "main");
    assert.deepEqual((await api.console.keys()).map((k) => k.id), [key.id]);
    const usage = await api.console.usage({ key: key.id });
    assert.equal(usage.key, key.id);
    await assert.rejects(api.console.usage({ key: "key_nope" }), NotFoundError);
    const sub = await api.console.requestPlan("professional", "please");
    await assert.rejects(api.console.subscriptions(), ForbiddenError);

    cli(server.dataDir, "users", "create", "--email", "tsop@example.com", "--password", PASSWORD, "--operator");
    const ops = new MarketClient({ baseUrl: server.base });
    await ops.console.signIn("tsop@example.com", PASSWORD);
    assert.ok((await ops.console.subscriptions("pending")).some((s) => s.id === sub.id));
    assert.equal((await ops.console.approve(sub.id)).status, "approved");

    const rotated = await api.console.rotateKey(key.id);
    assert.equal(rotated.replaces, key.id);
    assert.equal(rotated.plan, "professional");
    assert.ok((await api.console.revokeKey(rotated.id)).revokedAt);
    assert.deepEqual((await api.console.events()).map((e) => e.kind).slice(0, 2), ["revoked", "rotated"]);
    api.console.signOut();
    await assert.rejects(api.console.keys(), UnauthorizedError);
  });

  test("a support ticket's thread, an operator's answer, close and reopen", async () => {
    const api = new MarketClient({ baseUrl: server.base });
    await api.register({ email: "ts-ticket@example.com", password: PASSWORD });
    await api.console.signIn("ts-ticket@example.com", PASSWORD);
    const opened = await api.console.openTicket("Brent is stale", "No ticks since 09:31.", 2);
    assert.deepEqual([opened.status, opened.thread[0].body], ["open", "No ticks since 09:31."]);
    cli(server.dataDir, "users", "create", "--email", "ts-desk@example.com", "--password", PASSWORD, "--operator");
    const ops = new MarketClient({ baseUrl: server.base });
    await ops.console.signIn("ts-desk@example.com", PASSWORD);
    assert.ok((await ops.console.tickets("open")).some((t) => t.id === opened.id));
    assert.equal((await ops.console.replyTicket(opened.id, "Restarted.")).message.author, "operator");
    assert.deepEqual((await api.console.ticket(opened.id)).thread.map((m) => m.body),
      ["No ticks since 09:31.", "Restarted."]);
    assert.equal((await api.console.closeTicket(opened.id)).status, "closed");
    await assert.rejects(api.console.replyTicket(opened.id, "again"), ConflictError);
    assert.equal((await api.console.reopenTicket(opened.id)).status, "open");
    const other = new MarketClient({ baseUrl: server.base });
    await other.register({ email: "ts-other@example.com", password: PASSWORD });
    await other.console.signIn("ts-other@example.com", PASSWORD);
    await assert.rejects(other.console.ticket(opened.id), NotFoundError);
  });

  test("a dedicated data source: a namespace, a declared instrument, an ingest key, a deletion", async () => {
    const api = new MarketClient({ baseUrl: server.base });
    await api.register({ email: "ts-source@example.com", password: PASSWORD });
    await api.console.signIn("ts-source@example.com", PASSWORD);
    await assert.rejects(api.console.instruments(), ForbiddenError); // the enterprise plan's
    cli(server.dataDir, "users", "plan", "ts-source@example.com", "enterprise", "--rate", "600");
    cli(server.dataDir, "users", "namespace", "ts-source@example.com", "tsdesk");
    assert.deepEqual((await api.console.instruments()).namespace, "tsdesk");
    const spec = { id: "tsdesk.basis", name: { zh: "基差", en: "Basis" }, unit: { zh: "元/吨", en: "CNY/t" },
      currency: "CNY", decimals: 1, venue: /** @type {const} */ ("zce") };
    const made = await api.console.declareInstrument(spec);
    assert.deepEqual([made.id, made.venue, made.decimals], ["tsdesk.basis", "zce", 1]);
    await assert.rejects(api.console.declareInstrument({ ...spec, id: "other.basis" }), ForbiddenError);
    assert.deepEqual((await api.console.instruments()).items.map((i) => i.id), ["tsdesk.basis"]);
    const publisher = await api.console.createKey("feed", "ingest");
    assert.equal(publisher.scope, "ingest");
    assert.equal((await api.console.createKey("reader")).scope, "read");
    await api.console.deleteInstrument("tsdesk.basis");
    assert.deepEqual((await api.console.instruments()).items, []);
    await assert.rejects(api.console.deleteInstrument("tsdesk.basis"), NotFoundError);
  });
});
