"""The OpenAPI and AsyncAPI documents against a real server, on both runtimes: the documents do not lie.

(a) Every message type the stream sends (snapshot, tick, subscribed, pong, each error code), read
    from a real WebSocket, validates against its message schema in /asyncapi.json.
(b) Every REST response we can provoke (the 200 of every GET, 201s, 304s, and the 400/401/403/404/
    405/409/413/415/429 problems) has a status documented for its operation and validates against
    the schema documented for that status; no response carries a field the schema does not list.
    Every documented (path, method, status) is provoked, except the few listed in UNPROVOKED.
(c) The request rules: for every POST body field and every query parameter, candidate values are
    drawn from its own schema (bounds, lengths, enums, patterns' examples, null, wrong types); what
    the schema allows the server accepts, what the schema forbids is a 400 naming the field.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from server.api.docs.openapi import SECONDS
from tests.conftest import RUNTIMES, ServerProcess, run_cli

S = dict[str, Any]
MISSING = object()  # a candidate meaning "leave the field out"
VENUE_FILE = "/api/v1/flatfiles/{venue}/{dataset}/{file}"  # a venue's own file (tests/contract/test_flatfile_venues.py)
SOURCE_FILE = "/api/v1/flatfiles/source/{source}/{dataset}/{file}"  # SPEC 20 (tests/contract/test_source_files.py)
UNPROVOKED = {  # (path or "*", method or "*", status): documented answers a test cannot cause from outside
    ("*", "*", "500"),  # internal error
    ("/readyz", "get", "503"),  # feed or storage down
    # a flat file needs a live feed's durable history, which this module's demo hub keeps none of:
    # tests/contract/test_flatfile_routes.py checks these answers against the document on a hub that has files
    *((path, "get", status) for path in ("/api/v1/flatfiles/{dataset}/{file}", VENUE_FILE, SOURCE_FILE)
      for status in ("200", "206", "304", "416")),
    ("/api/v1/ingest", "post", "503"),  # a hub that does not hold the feed lease (Redis engine, several hubs)
}
RECEIPT = "WR-NB-000101"  # a demo receipt
_ips = itertools.count(1)


def next_ip() -> str:
    n = next(_ips)
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


@pytest.fixture(scope="module", params=RUNTIMES)
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """127.0.0.1 is trusted as a proxy and each request names its own client IP in X-Forwarded-For, so
    the per-IP limits (public 1/min here, login 10/min) are hit only where a test means to."""
    data_dir = tmp_path_factory.mktemp(f"schemas-{request.param}") / "data"
    srv = ServerProcess(data_dir, request.param, "--trusted-proxies", "127.0.0.1/32", "--public-rate", "1",
                        "--tick-interval-ms", "50")
    yield srv
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


@pytest.fixture(scope="module")
def http(api: ServerProcess) -> Iterator[httpx.Client]:
    def fresh_ip(req: httpx.Request) -> None:
        req.headers.setdefault("x-forwarded-for", next_ip())

    with httpx.Client(base_url=api.base, timeout=15.0, event_hooks={"request": [fresh_ip]}) as client:
        yield client


@pytest.fixture(scope="module")
def spec(http: httpx.Client) -> S:
    return http.get("/openapi.json").json()


# --- schema helpers ------------------------------------------------------------------------------


def resolve(doc: S, schema: S) -> S:
    while "$ref" in schema:
        node: Any = doc
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def closed(schema: Any) -> Any:
    """A copy in which every object schema that lists properties allows no others (responses only)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def validator(doc: S, schema: S, *, strict: bool, draft: type = Draft202012Validator) -> Any:
    """A validator for `schema` whose `#/components/...` references resolve inside `doc`."""
    components = closed(doc["components"]) if strict else doc["components"]
    root = {"allOf": [closed(schema) if strict else schema], "components": components}
    return draft(root, format_checker=draft.FORMAT_CHECKER)


def errors_of(v: Any, value: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300] for e in v.iter_errors(value)]


# --- (a) the stream against /asyncapi.json --------------------------------------------------------


def test_every_stream_message_validates_against_asyncapi(api: ServerProcess, http: httpx.Client) -> None:
    doc = http.get("/asyncapi.json").json()
    channel = doc["channels"]["quotes"]
    sent = {m["$ref"].rsplit("/", 1)[1] for m in doc["operations"]["receiveServerMessages"]["messages"]}
    by_type = {resolve(doc, channel["messages"][name]["payload"])["properties"]["type"]["const"]: name
               for name in sent}
    codes = set(resolve(doc, channel["messages"]["Error"]["payload"])["properties"]["code"]["enum"])
    validators = {t: validator(doc, channel["messages"][n]["payload"], strict=True, draft=Draft7Validator)
                  for t, n in by_type.items()}
    requests: list[str | bytes] = [
        json.dumps({"op": "subscribe", "ids": ["brent", "wti"], "candles": ["1m", "1d"], "reqId": "sub-1"}),
        json.dumps({"op": "unsubscribe", "ids": ["wti"], "reqId": 2}),
        json.dumps({"op": "ping"}),
        json.dumps({"op": "ping", "reqId": "p"}),
        "{not json",  # invalid_json
        json.dumps({"op": "subscribe", "ids": "brent"}),  # invalid_message
        json.dumps({"op": "dance", "reqId": 7}),  # unknown_op
        json.dumps({"op": "subscribe", "ids": ["brent", "nope"], "reqId": "u"}),  # unknown_ids
        b"\x00\x01",  # unsupported_binary
    ]

    async def capture() -> list[S]:
        got: list[S] = []
        async with connect(f"{api.ws_base}/ws/quotes?key={api.demo_key}", max_queue=None) as ws:
            for message in requests:
                await ws.send(message)
            # every request gets an answer; ticks keep arriving meanwhile (50 ms feed), candle frames (the current
            # ones after the ack) and a heartbeat (every 5 s)
            while sum(m["type"] in ("subscribed", "pong", "error") for m in got) < len(requests) \
                    or not {"tick", "candle", "heartbeat"} <= {m["type"] for m in got}:
                got.append(json.loads(await asyncio.wait_for(ws.recv(), 7.0)))
        return got

    messages = asyncio.run(asyncio.wait_for(capture(), 30.0))
    problems = []
    for msg in messages:
        kind = msg.get("type")
        if kind not in validators:
            problems.append(f"undocumented message type {kind!r}: {msg}")
            continue
        problems += [f"{kind}: {e}" for e in errors_of(validators[kind], msg)]
    assert problems == [], "\n".join(problems[:20])
    # a status frame needs a venue's window edge: test_a_status_frame_validates_against_asyncapi sees it; a roll
    # frame a product's new main: tests/contract/test_main_contract.py provokes it, but the demo's main contract may
    # also roll during this run (then the loop above has validated that frame): either is right
    unseen, maybe = {"status", "roll"}, {"roll"}
    assert {m["type"] for m in messages} - maybe == set(by_type) - unseen, "every documented server message was seen"
    assert {m["code"] for m in messages if m["type"] == "error"} == codes, "every documented error code was seen"


def test_a_status_frame_validates_against_asyncapi(tmp_path_factory: pytest.TempPathFactory) -> None:
    """SPEC 16: on a clock 20 s before ZCE's 10:15 break (time enough to start), a session subscribed to methanol
    gets {"type": "status", "venue": "zce", "status": "break"} as the server clock crosses 10:15, and only then."""
    srv = ServerProcess(tmp_path_factory.mktemp("schemas-status") / "data", "granian",
                        "--clock-start", "2026-11-18T10:14:40+08:00")
    try:
        doc = httpx.get(srv.base + "/asyncapi.json").json()
        check = validator(doc, doc["channels"]["quotes"]["messages"]["Status"]["payload"], strict=True,
                          draft=Draft7Validator)

        async def first_status() -> dict[str, Any]:
            async with connect(f"{srv.ws_base}/ws/quotes?key={srv.demo_key}", max_queue=None) as ws:
                await ws.send(json.dumps({"op": "subscribe", "ids": ["methanol"], "reqId": 1}))
                while True:
                    msg = json.loads(await ws.recv())
                    if msg["type"] == "status":
                        return msg  # type: ignore[no-any-return]

        status = asyncio.run(asyncio.wait_for(first_status(), 60.0))
        assert errors_of(check, status) == []
        assert (status["venue"], status["status"]) == ("zce", "break")
        assert "2026-11-18T10:15:00" <= status["ts"] < "2026-11-18T10:15:03", status  # within a run of the clock
    finally:
        assert srv.stop() == 0, srv.output()


def test_handshake_refusal_is_the_documented_problem(api: ServerProcess, http: httpx.Client) -> None:
    doc = http.get("/asyncapi.json").json()
    refusals = doc["channels"]["quotes"]["x-handshake-refusals"]
    check = validator(doc, refusals["schema"], strict=True, draft=Draft7Validator)

    async def refused() -> InvalidStatus:
        try:
            async with connect(f"{api.ws_base}/ws/quotes?key=wrong"):
                pass
        except InvalidStatus as exc:
            return exc
        raise AssertionError("a wrong key was let in")

    exc = asyncio.run(asyncio.wait_for(refused(), 10.0))
    assert str(exc.response.status_code) in refusals["statuses"]
    assert errors_of(check, json.loads(exc.response.body or b"null")) == []


# --- (b) REST responses against /openapi.json -----------------------------------------------------


class Checker:
    """Checks answers against the document and records which (path, method, status) were seen."""

    def __init__(self, spec: S) -> None:
        self.spec = spec
        self.seen: set[tuple[str, str, str]] = set()
        self.problems: list[str] = []

    def __call__(self, resp: httpx.Response, path: str, method: str | None = None) -> httpx.Response:
        method = (method or resp.request.method).lower()
        ops = self.spec["paths"][path]
        op = ops.get(method) or next(iter(ops.values()))  # a 405 is documented on every operation of the path
        status = str(resp.status_code)
        where = f"{resp.request.method} {resp.request.url.raw_path.decode()[:80]} -> {status}"
        self.seen.add((path, method, status))
        documented = op["responses"].get(status)
        if documented is None:
            self.problems.append(f"{where}: status not documented ({resp.text[:200]})")
            return resp
        for header in documented.get("headers", {}):
            if header.lower() not in resp.headers:
                self.problems.append(f"{where}: documented header {header} missing")
        content = documented.get("content")
        ctype = resp.headers.get("content-type", "").split(";")[0]
        if status == "304" or not content:
            if status == "304" and resp.content:
                self.problems.append(f"{where}: a 304 with a body")
            return resp
        if ctype not in content:
            self.problems.append(f"{where}: content type {ctype!r}, documented {sorted(content)}")
        elif ctype.endswith("json"):
            check = validator(self.spec, content[ctype]["schema"], strict=True)
            self.problems += [f"{where}: {e}" for e in errors_of(check, resp.json())]
        return resp


def operations(spec: S) -> Iterator[tuple[str, str, S]]:
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            yield path, method, op


INCIDENT_ROUTES = ("/api/console/incidents", "/api/console/maintenances", "/api/console/notifications")


def _bearer(http: httpx.Client, email: str, api: ServerProcess | None = None) -> dict[str, str]:
    """A new account's Bearer header (an operator's when `api` is given: the CLI makes it)."""
    creds = {"email": email, "password": "correct horse"}
    if api is None:
        assert http.post("/api/auth/register", json=creds).status_code == 201
    else:
        assert run_cli(api.data_dir, "users", "create", "--email", email, "--password", creds["password"],
                       "--operator").returncode == 0
    return {"Authorization": "Bearer " + http.post("/api/auth/login", json=creds).json()["token"]}


def _provoke_incidents(check: Checker, http: httpx.Client, api: ServerProcess, disabled: dict[str, str]) -> None:
    """Every documented answer of SPEC 20's console routes: 401/403 without a token and for a disabled account, the
    rest from a customer and an operator of their own (each account's console bucket is 30 a minute)."""
    routes = (("/api/console/incidents", "GET"), ("/api/console/incidents", "POST"),
              ("/api/console/incidents/{id}/updates", "POST"), ("/api/console/incidents/{id}/resolve", "POST"),
              ("/api/console/maintenances", "GET"), ("/api/console/maintenances", "POST"),
              ("/api/console/notifications", "GET"), ("/api/console/notifications", "POST"))
    for path, method in routes:
        for headers in ({}, disabled):
            check(http.request(method, path.replace("{id}", "x"), headers=headers), path, method)
    customer = _bearer(http, "schema-incident-customer@example.com")
    mail = "/api/console/notifications"
    check(http.get(mail, headers=customer), mail)
    check(http.post(mail, json={"incidents": True}, headers=customer), mail)
    check(http.post(mail, json={"incidents": "yes"}, headers=customer), mail)  # 400
    check(http.post(mail, content=b"{}", headers={**customer, "content-type": "text/plain"}), mail)  # 415
    ops = _bearer(http, "schema-incident-ops@example.com", api)
    text = {**ops, "content-type": "text/plain"}
    base = "/api/console/incidents"
    one, done = f"{base}/{{id}}/updates", f"{base}/{{id}}/resolve"
    made = check(http.post(base, json={"title": "Delayed quotes", "impact": "minor"}, headers=ops), base).json()
    check(http.post(base, json={"title": "", "impact": "minor"}, headers=ops), base)  # 400
    check(http.post(base, content=b"{}", headers=text), base)  # 415
    check(http.get(base, headers=ops), base)
    update = {"status": "identified", "message": "Found it."}
    check(http.post(f"{base}/{made['id']}/updates", json=update, headers=ops), one)
    check(http.post(f"{base}/{made['id']}/updates", json={"status": "resolved"}, headers=ops), one)  # 400
    check(http.post(f"{base}/nope/updates", json=update, headers=ops), one)  # 404
    check(http.post(f"{base}/{made['id']}/updates", content=b"{}", headers=text), one)  # 415
    check(http.post(f"{base}/{made['id']}/resolve", json={"message": 5}, headers=ops), done)  # 400
    check(http.post(f"{base}/{made['id']}/resolve", content=b"{}", headers=text), done)  # 415
    check(http.post(f"{base}/{made['id']}/resolve", headers=ops), done)
    check(http.post(f"{base}/{made['id']}/resolve", headers=ops), done)  # 409
    check(http.post(f"{base}/nope/resolve", headers=ops), done)  # 404
    check(http.post(f"{base}/{made['id']}/updates", json=update, headers=ops), one)  # 409
    maint = "/api/console/maintenances"
    window = {"title": "Upgrade", "from": "2030-01-01T02:00:00+08:00", "to": "2030-01-01T03:00:00+08:00"}
    check(http.post(maint, json=window, headers=ops), maint)
    check(http.post(maint, json={**window, "to": "2030-01-01T01:00:00+08:00"}, headers=ops), maint)  # 400
    check(http.post(maint, content=b"{}", headers=text), maint)  # 415
    check(http.get(maint, headers=ops), maint)


def _provoke_tickets(check: Checker, http: httpx.Client, disabled: dict[str, str]) -> None:
    """Support tickets' answers (SPEC 20): 401 and 403 (a disabled account), then 201, 200, 400, 404 and 409 from an
    account of their own."""
    for path, method in (("", "GET"), ("", "POST"), ("/{id}", "GET"), ("/{id}/messages", "POST"),
                         ("/{id}/close", "POST"), ("/{id}/reopen", "POST")):
        for headers in ({}, disabled):
            url = "/api/console/tickets" + path
            check(http.request(method, url.replace("{id}", "x"), headers=headers), url, method)
    fresh = {"email": "schema-tickets@example.com", "password": "correct horse"}
    http.post("/api/auth/register", json=fresh)
    bearer = {"Authorization": "Bearer " + http.post("/api/auth/login", json=fresh).json()["token"]}
    base = "/api/console/tickets"
    one, msgs, close, reopen = base + "/{id}", base + "/{id}/messages", base + "/{id}/close", base + "/{id}/reopen"
    opened = check(http.post(base, json={"subject": "s", "body": "b", "severity": 2}, headers=bearer), base).json()
    tid = opened["id"]
    check(http.post(base, json={"subject": "s", "severity": 9}, headers=bearer), base)  # 400
    check(http.get(base, params={"status": "open"}, headers=bearer), base)
    check(http.get(base, params={"status": "nope"}, headers=bearer), base)  # 400
    check(http.get(f"{base}/{tid}", headers=bearer), one)
    check(http.post(f"{base}/{tid}/messages", json={"body": "more"}, headers=bearer), msgs)
    check(http.post(f"{base}/{tid}/messages", json={"body": ""}, headers=bearer), msgs)  # 400
    check(http.post(f"{base}/nope/messages", json={"body": "x"}, headers=bearer), msgs)  # 404
    check(http.post(f"{base}/{tid}/close", headers=bearer), close)
    check(http.post(f"{base}/{tid}/messages", json={"body": "x"}, headers=bearer), msgs)  # 409: closed
    check(http.post(f"{base}/nope/close", headers=bearer), close)  # 404
    check(http.post(f"{base}/{tid}/reopen", headers=bearer), reopen)
    check(http.post(f"{base}/nope/reopen", headers=bearer), reopen)  # 404


def _provoke_sources(check: Checker, http: httpx.Client, api: ServerProcess, disabled: dict[str, str]) -> None:
    """Every documented answer of a dedicated data source's routes (SPEC 20): the console's declared instruments and
    the ingest route, from an enterprise account with a namespace."""
    base, ingest = "/api/console/instruments", "/api/v1/ingest"
    for path, method in ((base, "GET"), (base, "POST"), (base + "/{id}", "DELETE")):
        for headers in ({}, disabled):  # 401, 403
            check(http.request(method, path.replace("{id}", "x"), headers=headers), path, method)
    creds = {"email": "schema-source@example.com", "password": "correct horse"}
    http.post("/api/auth/register", json=creds)
    assert run_cli(api.data_dir, "users", "plan", creds["email"], "enterprise", "--rate", "100000").returncode == 0
    assert run_cli(api.data_dir, "users", "namespace", creds["email"], "schema").returncode == 0
    bearer = {"Authorization": "Bearer " + http.post("/api/auth/login", json=creds).json()["token"]}
    declared = {"id": "schema.x", "name": {"zh": "甲", "en": "x"}, "unit": {"zh": "吨", "en": "t"}, "currency": "CNY",
                "decimals": 2, "venue": "zce"}
    check(http.post(base, json=declared, headers=bearer), base)  # 201
    check(http.post(base, json=declared, headers=bearer), base)  # 409
    check(http.get(base, headers=bearer), base)
    secret = check(http.post("/api/console/keys", json={"scope": "ingest"}, headers=bearer),
                   "/api/console/keys").json()["key"]
    lines = {"X-SERVICE-Key": secret, "content-type": "application/x-ndjson"}
    check(http.post(ingest, content=b'{"id": "schema.x", "price": 1}\nnot a tick', headers=lines), ingest)  # 200
    check(http.post(ingest, params={"x": "1"}, content=b"", headers=lines), ingest)  # 400
    once = {**lines, "Idempotency-Key": "schema-1"}
    assert check(http.post(ingest, content=b'{"id": "schema.x", "price": 2}', headers=once), ingest).status_code == 200
    assert check(http.post(ingest, content=b'{"id": "schema.x", "price": 3}', headers=once), ingest).status_code == 422
    check(http.post(ingest, content=b"x" * (1024 * 1024 + 1), headers=lines), ingest)  # 413
    check(http.post(ingest, content=b"{}", headers={**lines, "content-type": "text/plain"}), ingest)  # 415
    check(http.delete(base + "/schema.x", headers=bearer), base + "/{id}")  # 204
    check(http.delete(base + "/schema.x", headers=bearer), base + "/{id}")  # 404
    check(http.request("DELETE", base + "/x", content=b"x" * (70 * 1024), headers=bearer), base + "/{id}")  # 413
    check(http.put(base + "/x", headers=bearer), base + "/{id}", "delete")  # 405
    check(http.post(ingest, content=b"", headers={"content-type": "application/x-ndjson"}), ingest)  # 401


def _provoke_console(check: Checker, http: httpx.Client, api: ServerProcess, bearer: dict[str, str],
                     disabled: dict[str, str]) -> None:
    """Every documented answer of the console's routes (SPEC 17), each from its own cause; `bearer` (its console
    bucket spent by the loop above) only for the 401/403/405 answers, a fresh account for the rest."""
    fresh = {"email": "schema-console@example.com", "password": "correct horse"}
    http.post("/api/auth/register", json=fresh)
    bearer = {"Authorization": "Bearer " + http.post("/api/auth/login", json=fresh).json()["token"]}
    base, admin = "/api/console", "/api/console/admin/subscriptions"
    for path, method in (("/keys", "GET"), ("/keys", "POST"), ("/keys/{id}", "PATCH"), ("/keys/{id}", "DELETE"),
                         ("/keys/{id}/rotate", "POST"), ("/me", "GET"), ("/usage", "GET"), ("/events", "GET"),
                         ("/subscription", "POST"), ("/admin/subscriptions", "GET"), ("/sla", "GET"),
                         ("/admin/subscriptions/{id}/approve", "POST"), ("/admin/subscriptions/{id}/reject", "POST")):
        for headers in ({}, disabled):  # 401, 403
            check(http.request(method, base + path.replace("{id}", "x"), headers=headers), base + path, method)
    key = check(http.post(f"{base}/keys", json={"label": "a"}, headers=bearer), f"{base}/keys").json()
    check(http.post(f"{base}/keys", json={"label": "b"}, headers=bearer), f"{base}/keys")  # 409: free holds 1
    one, rotate = f"{base}/keys/{{id}}", f"{base}/keys/{{id}}/rotate"
    check(http.patch(f"{base}/keys/{key['id']}", json={"label": "c"}, headers=bearer), one)
    check(http.patch(f"{base}/keys/nope", json={"label": "c"}, headers=bearer), one)
    key = check(http.post(f"{base}/keys/{key['id']}/rotate", headers=bearer), rotate).json()
    check(http.post(f"{base}/keys/nope/rotate", headers=bearer), rotate)
    check(http.request("DELETE", f"{base}/keys/x", content=b"x" * (70 * 1024), headers=bearer), one)  # 413
    check(http.delete(f"{base}/keys/{key['id']}", headers=bearer), one)
    check(http.get(f"{base}/usage", params={"from": "2026-02-30"}, headers=bearer), f"{base}/usage")
    check(http.get(f"{base}/usage", params={"key": "nope"}, headers=bearer), f"{base}/usage")
    for plan in ("professional", "enterprise"):  # 201, then 409 (one open request)
        sub = check(http.post(f"{base}/subscription", json={"plan": plan}, headers=bearer), f"{base}/subscription")
    me = http.get(f"{base}/me", headers=bearer)
    assert me.status_code == 200, me.text
    sub = me.json()["subscription"]
    check(http.get(admin, headers=bearer), admin)  # 403: a customer
    email = "schema-operator@example.com"
    assert run_cli(api.data_dir, "users", "create", "--email", email, "--password", "correct horse",
                   "--operator").returncode == 0
    login = http.post("/api/auth/login", json={"email": email, "password": "correct horse"})
    ops = {"Authorization": "Bearer " + login.json()["token"]}
    check(http.get(admin, params={"status": "pending"}, headers=ops), admin)
    check(http.get(admin, params={"status": "nope"}, headers=ops), admin)
    for month in ("2026-03", "2026-13"):  # SPEC 20's SLA report: 200, 400 (the customer's 403 is above)
        check(http.get(f"{base}/sla", params={"month": month}, headers=ops), f"{base}/sla")
    for verb in ("approve", "reject"):
        doc = f"{admin}/{{id}}/{verb}"
        check(http.post(f"{admin}/nope/{verb}", headers=ops), doc)  # 404
        check(http.post(f"{admin}/{sub['id']}/{verb}", headers=bearer), doc)  # 403: a customer
    for verb in ("approve", "reject"):  # 400, 415 (the body is read once the operator is known)
        doc = f"{admin}/{{id}}/{verb}"
        as_json, as_text = {**ops, "content-type": "application/json"}, {**ops, "content-type": "text/plain"}
        check(http.post(f"{admin}/{sub['id']}/{verb}", content=b"[1]", headers=as_json), doc)
        check(http.post(f"{admin}/{sub['id']}/{verb}", content=b"{}", headers=as_text), doc)
    as_text = {**bearer, "content-type": "text/plain"}
    check(http.post(f"{base}/keys/x/rotate", content=b"{}", headers=as_text), rotate)
    check(http.get(f"{base}/keys/x", headers=bearer), one, "patch")  # 405
    check(http.get(f"{base}/keys/x", headers=bearer), one, "delete")  # 405
    check(http.post(f"{admin}/{sub['id']}/approve", headers=ops), f"{admin}/{{id}}/approve")
    for verb in ("approve", "reject"):
        check(http.post(f"{admin}/{sub['id']}/{verb}", headers=ops), f"{admin}/{{id}}/{verb}")  # 409
    other = {"email": "schema-reject@example.com", "password": "correct horse"}
    http.post("/api/auth/register", json=other)
    other_auth = {"Authorization": "Bearer " + http.post("/api/auth/login", json=other).json()["token"]}
    rejected = http.post(f"{base}/subscription", json={"plan": "professional"}, headers=other_auth).json()
    check(http.post(f"{admin}/{rejected['id']}/reject", headers=ops), f"{admin}/{{id}}/reject")


def keyed(op: S) -> bool:
    return any("ServiceKey" in s for s in op.get("security", []))


def test_every_documented_response_validates_against_openapi(api: ServerProcess, http: httpx.Client,
                                                             spec: S) -> None:
    check = Checker(spec)
    key = {"X-SERVICE-Key": api.demo_key}
    evidence = http.get(f"/api/receipt/{RECEIPT}").json()["evidenceHash"]
    # one request that answers 200 for each GET; a path with parameters needs an example here
    examples = {
        "/api/v1/quotes/{id}": "/api/v1/quotes/brent", "/api/v1/kline/{id}": "/api/v1/kline/brent?days=5",
        "/api/market/{id}": "/api/market/crude", "/api/receipt/{receiptNo}": f"/api/receipt/{RECEIPT}",
        "/api/verify-anchor": f"/api/verify-anchor?hash={evidence}", "/static/{file}": "/static/app.js",
        "/static/vendor/{file}": "/static/vendor/swagger-ui.css", "/problems/{code}": "/problems/not_found",
        "/api/v1/udf/symbols": "/api/v1/udf/symbols?symbol=brent",
        "/api/v1/udf/history": "/api/v1/udf/history?symbol=brent&resolution=60&to=2000000000&countback=5",
        "/api/v1/udf/timescale_marks": "/api/v1/udf/timescale_marks?symbol=methanol&from=1767225600&to=1798675200",
        "/api/v1/instruments/{id}": "/api/v1/instruments/sc",
        "/api/v1/instruments/{id}/rolls": "/api/v1/instruments/methanol/rolls",
        "/api/v1/curve/{product}": "/api/v1/curve/methanol",
        "/api/v1/venues/{id}/calendar": "/api/v1/venues/zce/calendar?from=2026-09-28&to=2026-10-09",
        # no durable history on the demo feed, so no flat file: the documented 404 (test_flatfile_routes.py: 200s)
        "/api/v1/flatfiles/{dataset}/{file}": "/api/v1/flatfiles/ticks/2026-11-17.csv.gz",
        "/api/v1/flatfiles": "/api/v1/flatfiles?dataset=ticks",
        VENUE_FILE: "/api/v1/flatfiles/zce/ticks/2026-11-17.csv.gz",
        SOURCE_FILE: "/api/v1/flatfiles/source/acme/ticks/2026-11-17.csv.gz",  # not the demo key's: 404
        "/api/console/tickets/{id}": "/api/console/tickets/tkt_none",  # the documented 404 (200s: _provoke_tickets)
    }
    not_found = {
        "/api/v1/quotes/{id}": "/api/v1/quotes/zzz", "/api/v1/kline/{id}": "/api/v1/kline/zzz",
        "/api/market/{id}": "/api/market/zzz", "/api/receipt/{receiptNo}": "/api/receipt/WR-XX-999999",
        "/api/verify-anchor": "/api/verify-anchor?hash=" + "ab" * 32, "/static/{file}": "/static/nope.js",
        "/static/vendor/{file}": "/static/vendor/nope.js", "/problems/{code}": "/problems/nope",
        "/api/v1/instruments/{id}": "/api/v1/instruments/zzz",
        "/api/v1/venues/{id}/calendar": "/api/v1/venues/zzz/calendar?from=2026-09-28&to=2026-10-09",
        "/api/v1/instruments": "/api/v1/instruments?product=zzz",  # SPEC 19: no such futures product
        VENUE_FILE: "/api/v1/flatfiles/zzz/ticks/2026-11-17.csv.gz",
        "/api/v1/flatfiles": "/api/v1/flatfiles?source=acme",  # SPEC 20: not the demo key's account's namespace
        "/api/v1/instruments/{id}/rolls": "/api/v1/instruments/methanol-ec/rolls",  # a spot assessment
        "/api/v1/curve/{product}": "/api/v1/curve/usdcny",
    }
    bad = {
        "/api/v1/quotes": "/api/v1/quotes?kind=metals", "/api/v1/kline/{id}": "/api/v1/kline/brent?days=0",
        "/api/news": "/api/news?limit=0", "/api/research": "/api/research?offset=-1",
        "/api/receipt/{receiptNo}": "/api/receipt/a_b", "/api/verify-anchor": "/api/verify-anchor?hash=xyz",
        # a query parameter the endpoint does not define (SPEC 6: 400 unknown_parameter)
        "/api/v1/quotes/{id}": "/api/v1/quotes/brent?days=5", "/api/v1/spreads": "/api/v1/spreads?kind=oil",
        "/api/v1/inventory": "/api/v1/inventory?interval=1h",
        # SPEC 14: a range query's bad bound; the UDF datafeed's errors (problem + s/errmsg)
        "/api/v1/udf/config": "/api/v1/udf/config?x=1", "/api/v1/udf/time": "/api/v1/udf/time?x=1",
        "/api/v1/udf/search": "/api/v1/udf/search?limit=0", "/api/v1/udf/symbols": "/api/v1/udf/symbols?symbol=zzz",
        "/api/v1/udf/history": "/api/v1/udf/history?symbol=brent&resolution=2&to=1",
        "/api/v1/udf/timescale_marks": "/api/v1/udf/timescale_marks?symbol=methanol&from=2&to=1",
        "/api/v1/venues/{id}/calendar": "/api/v1/venues/zce/calendar?from=2026-01-01&to=2027-06-30",
        "/api/v1/instruments": "/api/v1/instruments?kind=oil", "/api/v1/instruments/{id}": "/api/v1/instruments/sc?x=1",
        "/api/v1/venues": "/api/v1/venues?status=open",
        "/api/v1/instruments/{id}/rolls": "/api/v1/instruments/methanol/rolls?from=2026-11-01",
        "/api/v1/curve/{product}": "/api/v1/curve/methanol?day=2026-11-01",
        "/api/v1/flatfiles": "/api/v1/flatfiles?dataset=quotes",
        "/api/v1/quality": "/api/v1/quality?from=2026-13-01",  # SPEC 20: canonical dates only
        "/api/v1/status": "/api/v1/status?x=1", "/api/v1/status/incidents": "/api/v1/status/incidents?x=1",
        "/api/v1/status/uptime": "/api/v1/status/uptime?days=91",
        "/api/v1/flatfiles/{dataset}/{file}": "/api/v1/flatfiles/ticks/2026-11-17.csv.gz?x=1",
        VENUE_FILE: "/api/v1/flatfiles/zce/ticks/2026-11-17.csv.gz?x=1",
        SOURCE_FILE: "/api/v1/flatfiles/source/acme/ticks/2026-11-17.csv.gz?x=1",
    }
    creds = {"email": "schema-check@example.com", "password": "correct horse"}
    check(http.post("/api/auth/register", json={**creds, "name": "Li Lei", "company": None}), "/api/auth/register")
    token = check(http.post("/api/auth/login", json=creds), "/api/auth/login").json()["token"]
    bearer = {"Authorization": f"Bearer {token}"}
    other = {**creds, "email": "schema-check-tickets@example.com"}  # the ticket routes spend a console bucket of
    http.post("/api/auth/register", json=other)  # their own, so the other console routes still see a 200
    ticket_bearer = {"Authorization": "Bearer " + http.post("/api/auth/login", json=other).json()["token"]}
    # SPEC 20's incident routes take another account's bucket too (30 a minute each)
    incident_bearer = _bearer(http, "schema-incident-loop@example.com")
    for path, method, op in operations(spec):
        headers = key if keyed(op) else bearer if any("Bearer" in s for s in op.get("security", [])) else {}
        if path.startswith("/api/console/tickets"):
            headers = ticket_bearer
        if path.startswith(INCIDENT_ROUTES):
            headers = incident_bearer
        if method == "get":
            url = examples.get(path, path)
            if "{" in url:
                check.problems.append(f"no example request for {path}: add one to `examples`")
                continue
            ok = check(http.get(url, headers=headers), path)
            if "304" in op["responses"] and "etag" in ok.headers:
                check(http.get(url, headers={**headers, "If-None-Match": ok.headers["etag"]}), path)
            if path in not_found:
                check(http.get(not_found[path], headers=headers), path)
            if path in bad:
                check(http.get(bad[path], headers=headers), path)
            if keyed(op):
                check(http.get(url), path)  # no key: 401
        else:
            url = path
            as_json = {**headers, "content-type": "application/json"}
            check(http.request(method, url, content=b"[1]", headers=as_json), path)
            check(http.request(method, url, content=b"x" * (70 * 1024), headers=as_json), path)
            check(http.request(method, url, content=b"{}", headers={**headers, "content-type": "text/plain"}), path)
        check(http.request("DELETE", url, headers=headers), path, method)

    # accounts, inquiries and cooperation: 201, 401, 403, 409
    check(http.post("/api/auth/register", json=creds), "/api/auth/register")  # 409
    check(http.post("/api/auth/login", json={**creds, "password": "wrong password"}), "/api/auth/login")
    inquiry = {"product": "methanol", "quantity": 500, "unit": "t"}
    check(http.post("/api/submit-inquiry", json=inquiry, headers=bearer), "/api/submit-inquiry")
    check(http.post("/api/submit-inquiry", json=inquiry), "/api/submit-inquiry")  # 401
    check(http.post("/api/cooperation", json={"company": "Acme", "contactName": "Li", "phone": "+86 21 5555 0100"}),
          "/api/cooperation")
    disabled = {"email": "disabled@example.com", "password": "correct horse"}
    http.post("/api/auth/register", json=disabled)
    disabled_token = http.post("/api/auth/login", json=disabled).json()["token"]
    assert run_cli(api.data_dir, "users", "disable", disabled["email"]).returncode == 0
    check(http.post("/api/submit-inquiry", json=inquiry, headers={"Authorization": f"Bearer {disabled_token}"}),
          "/api/submit-inquiry")  # 403

    _provoke_console(check, http, api, bearer, {"Authorization": f"Bearer {disabled_token}"})
    _provoke_tickets(check, http, {"Authorization": f"Bearer {disabled_token}"})
    _provoke_incidents(check, http, api, {"Authorization": f"Bearer {disabled_token}"})
    _provoke_sources(check, http, api, {"Authorization": f"Bearer {disabled_token}"})
    _, free = api.create_key("free")  # SPEC 18: flat files are for the professional and enterprise plans
    for path in ("/api/v1/flatfiles", "/api/v1/flatfiles/{dataset}/{file}", VENUE_FILE, SOURCE_FILE):
        check(http.get(examples[path], headers={"X-SERVICE-Key": free}), path)

    # 429: a 1/min key is spent by its first request, and so is one client IP (public rate 1/min)
    _, slow_key = api.create_key("enterprise", "--rate", "1")
    http.get("/api/v1/spreads", headers={"X-SERVICE-Key": slow_key})
    busy = {"X-Forwarded-For": "192.0.2.77"}
    http.get("/api/news", headers=busy)
    for path, method, op in operations(spec):
        if "429" not in op["responses"]:
            continue
        headers = {"X-SERVICE-Key": slow_key} if keyed(op) else busy
        url = examples.get(path, path)
        check(http.request(method, url, headers=headers, json={} if method == "post" else None), path)

    assert check.problems == [], "\n".join(check.problems[:30])
    documented = {(p, m, s) for p, m, op in operations(spec) for s in op["responses"]}
    missing = {(p, m, s) for p, m, s in documented - check.seen
               if not {(p, m, s), ("*", "*", s), (p, m, "*")} & UNPROVOKED}
    assert missing == set(), f"documented but never provoked: {sorted(missing)}"


# --- (c) request rules: the schemas agree with the handlers ---------------------------------------


def candidates(schema: S) -> list[Any]:
    """Values at and beyond the edges of `schema`, plus wrong types; the schema decides which are allowed."""
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    out: list[Any] = [MISSING, None, True, {"x": 1}]
    out += schema.get("examples", []) + schema.get("enum", [])
    if "string" in types:
        out += ["", "   ", "x", "Acme 1", "not valid!", 12]
        # NUL (PostgreSQL refuses it), characters that are whitespace to some validators only (\x1f and \x85 to
        # Python, U+FEFF to ECMAScript), full-width space, and each example padded with whitespace (trimmed)
        out += ["a\x00b", "\x00", "\x1f", "\x85", "\ufeff", "\u3000", "\u3000x\u3000", "x\n", " x\t"]
        out += [f" {e}\u3000" for e in schema.get("examples", [])] + [f"{e}\x00" for e in schema.get("examples", [])]
        for bound in ("minLength", "maxLength"):
            if bound in schema:
                out += ["x" * (schema[bound] - 1), "x" * schema[bound], "x" * (schema[bound] + 1)]
    if "number" in types or "integer" in types:
        out += [0, 1, -1, 2.5, "1", "abc"]
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if bound in schema:
                out += [schema[bound] - 1, schema[bound], schema[bound] + 1]
        if "maximum" in schema:
            out += [schema["maximum"] * 10]
    if "array" in types:
        items = schema.get("items", {}).get("enum", ["x"])
        out += [[], items[:1], items[:2], ["nope"]]
        if "maxItems" in schema:
            out += [(items * schema["maxItems"])[:schema["maxItems"]], items[:1] * (schema["maxItems"] + 1)]
    return [c for i, c in enumerate(out) if not any(c is d or (type(c) is type(d) and c == d) for d in out[:i])]


def example(schema: S) -> Any:
    """A value the schema allows, for the fields not under test."""
    for c in schema.get("examples", []) + [e for e in schema.get("enum", []) if e is not None]:
        return c
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types
    if "number" in types:
        return 1
    if "string" in types and ("pattern" not in schema or re.search(schema["pattern"], "x")):
        return "x" * max(1, schema.get("minLength", 1))
    raise AssertionError(f"no example for {schema}: give it `examples`")


def as_query_value(text: str, schema: S) -> Any:
    """What a query string value means for its schema: a decimal literal is a number, a list is split at commas."""
    if schema.get("type") == "array":
        return text.split(",") if text else []
    if schema.get("type") in ("integer", "number") and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", text):
        return json.loads(text)
    return text


class Poster:
    """Sends one body to a POST endpoint, with what it needs: a fresh e-mail, a fresh client IP, a token."""

    def __init__(self, http: httpx.Client, operator: Callable[[], dict[str, str]] | None = None) -> None:
        self.http = http
        self.n = itertools.count()
        self.token = ""
        self.used = 30
        self.make_operator = operator or dict
        self.ops: dict[str, str] = {}
        self.ops_used = 30

    @property
    def operator(self) -> dict[str, str]:
        """An operator's token (a new operator before its console bucket, 30 a minute, is spent)."""
        if self.ops_used >= 25:
            self.ops, self.ops_used = self.make_operator(), 0
        self.ops_used += 1
        return self.ops

    def fresh_email(self) -> str:
        return f"c{next(_ips)}@example.com"  # unique in the module: two tests' posters share one server

    def bearer(self) -> dict[str, str]:
        if self.used >= 25:  # 30 inquiries a minute per user: a new user before that
            creds = {"email": self.fresh_email(), "password": "correct horse"}
            assert self.http.post("/api/auth/register", json=creds).status_code == 201
            self.token = self.http.post("/api/auth/login", json=creds).json()["token"]
            self.used = 0
        self.used += 1
        return {"Authorization": f"Bearer {self.token}"}

    def headers(self, path: str) -> dict[str, str]:
        """What a route needs: a user's token (inquiries, the console), an operator's (the console's admin routes;
        a new operator once the console bucket, 30 a minute, is nearly spent)."""
        if path.startswith(("/api/console/admin/", "/api/console/incidents", "/api/console/maintenances")):
            return self.operator
        return self.bearer() if path == "/api/submit-inquiry" or path.startswith("/api/console/") else {}

    def post(self, path: str, body: S) -> httpx.Response:
        headers = self.headers(path)
        return self.http.post(path, content=json.dumps(body), headers={**headers, "content-type": "application/json"})


def disagreements(cases: Iterator[tuple[str, Any, bool, Callable[[], httpx.Response]]]) -> list[str]:
    out = []
    for field, value, allowed, send in cases:
        resp = send()
        shown = "<missing>" if value is MISSING else repr(value)[:60]
        if allowed and resp.status_code == 400:
            out.append(f"{field}={shown}: the schema allows it, the server says 400 {resp.text[:200]}")
        elif not allowed and resp.status_code != 400:
            out.append(f"{field}={shown}: the schema forbids it, the server says {resp.status_code}")
        elif not allowed and field not in {e["field"] for e in resp.json().get("errors", [])}:
            out.append(f"{field}={shown}: the 400 does not name the field: {resp.text[:200]}")
    return out


def operator_auth(api: ServerProcess, http: httpx.Client) -> dict[str, str]:
    """A new operator account's bearer header (each call a new account: a fresh console bucket)."""
    email = f"op{next(_ips)}@example.com"
    assert run_cli(api.data_dir, "users", "create", "--email", email, "--password", "correct horse",
                   "--operator").returncode == 0
    login = http.post("/api/auth/login", json={"email": email, "password": "correct horse"})
    return {"Authorization": "Bearer " + login.json()["token"]}


def test_post_bodies_agree_with_their_request_schemas(api: ServerProcess, http: httpx.Client, spec: S) -> None:
    poster = Poster(http, lambda: operator_auth(api, http))
    problems: list[str] = []
    for path, method, op in operations(spec):
        if method != "post" or "application/json" not in op.get("requestBody", {}).get("content", {}):
            continue  # no body, or not JSON (the ingest route's JSON lines: tests/contract/test_ingest.py)
        schema = resolve(spec, op["requestBody"]["content"]["application/json"]["schema"])
        check = validator(spec, schema, strict=False)
        base = {name: example(prop) for name, prop in schema["properties"].items()}
        assert check.is_valid(base), (path, base, errors_of(check, base))

        def cases(path: str = path, schema: S = schema, check: Any = check, base: S = base) -> Iterator[Any]:
            for name, prop in schema["properties"].items():
                for value in candidates(prop):
                    body = copy.deepcopy(base)  # register: the same e-mail again is a 409, which is not a 400
                    body.pop(name) if value is MISSING else body.__setitem__(name, value)
                    yield name, value, check.is_valid(body), lambda b=body: poster.post(path, b)
            for branches in [schema["anyOf"]] if "anyOf" in schema else []:  # e.g. neither email nor phone
                names = [n for branch in branches for n in branch.get("required", [])]
                body = {k: v for k, v in base.items() if k not in names}
                yield names[0], MISSING, check.is_valid(body), lambda b=body: poster.post(path, b)

        problems += [f"POST {path} {p}" for p in disagreements(cases())]
    assert problems == [], "\n".join(problems[:40])


def test_query_parameters_agree_with_their_schemas(api: ServerProcess, http: httpx.Client, spec: S) -> None:
    # a key whose rate no number of probes reaches: the professional demo key's 600 a minute was spent once the
    # contracts, curve, rolls, venue files and status routes added their parameters (429 for the rest)
    key = {"X-SERVICE-Key": api.create_key("enterprise", "--rate", "1000000000")[1]}
    poster = Poster(http, lambda: operator_auth(api, http))
    paths = {"/api/v1/kline/{id}": "/api/v1/kline/brent", "/api/v1/venues/{id}/calendar": "/api/v1/venues/zce/calendar"}
    # a parameter that applies only together with another (kline's limit: intraday intervals only)
    # and one bounded by another (UDF history and time-scale marks: from <= to, so any from the schema allows is
    # tried with the latest to it allows, any to with the earliest from)
    context = {("/api/v1/kline/{id}", "limit"): {"interval": "5m"},
               ("/api/v1/udf/history", "from"): {"to": str(SECONDS["maximum"])},
               ("/api/v1/udf/timescale_marks", "from"): {"to": str(SECONDS["maximum"])},
               ("/api/v1/udf/timescale_marks", "to"): {"from": str(SECONDS["minimum"])}}
    problems: list[str] = []
    for path, method, op in operations(spec):
        params = [p for p in op.get("parameters", []) if p["in"] == "query"]
        if method != "get" or not params:
            continue
        base = {p["name"]: example(p["schema"]) for p in params if p.get("required")}

        def cases(path: str = path, params: list[S] = params, base: S = base) -> Iterator[Any]:
            for p in params:
                check = validator(spec, p["schema"], strict=False)
                for value in candidates(p["schema"]):
                    if isinstance(value, dict | bool):
                        continue  # not expressible in a query string
                    query = {**base, **context.get((path, p["name"]), {})}
                    if value is MISSING:
                        query.pop(p["name"], None)
                        allowed = not p.get("required")
                    elif value is None:
                        continue  # a query parameter is absent or a string, never null
                    else:
                        text = ",".join(value) if isinstance(value, list) else str(value)
                        query[p["name"]] = text
                        allowed = check.is_valid(as_query_value(text, p["schema"]))
                    url = paths.get(path, path)
                    headers = key if path.startswith("/api/v1/") else poster.headers(path)
                    yield p["name"], value, allowed, lambda u=url, q=query, h=headers: http.get(u, params=q, headers=h)

        problems += [f"GET {path} {p}" for p in disagreements(cases())]
    assert problems == [], "\n".join(problems[:40])
