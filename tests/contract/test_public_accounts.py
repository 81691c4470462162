"""Accounts, inquiries and cooperation over real HTTP on both runtimes (SPEC 5 and 8).

The server trusts 127.0.0.1 as a proxy, so each test picks its own client address
with X-Forwarded-For and the per-IP login bucket (10/min) of one test never
touches another's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import RUNTIMES, ServerProcess, open_database, run_cli

SQL = "'; DROP TABLE users; -- \" OR 1=1 /*"
_ips = itertools.count(1)


class Site:
    def __init__(self, server: ServerProcess, idp_key: rsa.RSAPrivateKey, idp_pem: bytes) -> None:
        self.server = server
        self.idp_key = idp_key
        self.idp_pem = idp_pem
        self.secret = (server.data_dir / "jwt-secret").read_bytes().strip()

    def client(self) -> httpx.Client:
        """A client with an address of its own (X-Forwarded-For through the trusted 127.0.0.1 proxy)."""
        n = next(_ips)
        return self.server.client(headers={"X-Forwarded-For": f"198.51.{n // 250}.{n % 250 + 1}"})

    def db(self) -> sqlite3.Connection:
        return open_database(self.server.data_dir)

    def account(self, c: httpx.Client, email: str, password: str = "correct horse") -> str:
        """Register and log in; returns the bearer token."""
        assert c.post("/api/auth/register", json={"email": email, "password": password}).status_code == 201
        resp = c.post("/api/auth/login", json={"email": email, "password": password})
        assert resp.status_code == 200, resp.text
        return str(resp.json()["token"])


@pytest.fixture(scope="module", params=RUNTIMES)
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp(f"accounts-{request.param}")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (root / "idp.pem").write_bytes(pem)
    srv = ServerProcess(root / "data", request.param, "--public-rate", "100000", "--trusted-proxies", "127.0.0.1",
                        "--jwt-public-key", str(root / "idp.pem"))
    yield Site(srv, key, pem)
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


def _problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert body["status"] == status and body["code"] == code
    assert resp.headers["access-control-allow-origin"] == "*"
    return body


def _fields(resp: httpx.Response) -> set[str]:
    return {e["field"] for e in _problem(resp, 400, "validation_failed")["errors"]}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256(claims: dict[str, Any], key: bytes, alg: str = "HS256") -> str:
    head = f"{_b64(json.dumps({'alg': alg, 'typ': 'JWT'}).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{head}.{_b64(hmac.new(key, head.encode(), hashlib.sha256).digest())}"


INQUIRY = {"product": "甲醇", "quantity": 500, "unit": "t", "message": "CFR 太仓, 下月船期",
           "deliveryPlace": "太仓港", "contactPhone": "+86 21 5555 0100"}


# --- register and login ------------------------------------------------------------------------


def test_register_then_login_issues_an_hs256_bearer_token(site: Site) -> None:
    with site.client() as c:
        resp = c.post("/api/auth/register", json={"email": " Trader.Li@Example.COM ", "password": "p" * 8,
                                                  "name": "李雷", "company": "上海某贸易有限公司"})
        assert resp.status_code == 201, resp.text
        created = resp.json()
        assert created.keys() == {"id", "email"} and created["email"] == "trader.li@example.com"
        _problem(c.post("/api/auth/register", json={"email": "TRADER.LI@example.com", "password": "q" * 9}),
                 409, "conflict")
        login = c.post("/api/auth/login", json={"email": "trader.li@EXAMPLE.com", "password": "p" * 8})
        assert login.status_code == 200 and login.headers["x-ratelimit-limit"] == "100000"
        body = login.json()
        assert body.keys() == {"token", "tokenType", "expiresIn"}
        assert body["tokenType"] == "Bearer" and body["expiresIn"] == 3600
        assert jwt.get_unverified_header(body["token"])["alg"] == "HS256"
        claims = jwt.decode(body["token"], site.secret, algorithms=["HS256"])
        assert claims["sub"] == created["id"] and claims["exp"] - claims["iat"] == 3600
    row = site.db().execute("SELECT password_hash, name FROM users WHERE id = ?", (created["id"],)).fetchone()
    assert row["password_hash"].startswith("$argon2id$") and "p" * 8 not in row["password_hash"]
    assert row["name"] == "李雷"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"email", "password"}),
        ({"email": "not-an-email", "password": "long enough"}, {"email"}),
        ({"email": "a@b", "password": "long enough"}, {"email"}),
        ({"email": "x@example.com", "password": "short"}, {"password"}),
        ({"email": "x@example.com", "password": 12345678}, {"password"}),
        ({"email": ["x@example.com"], "password": "long enough"}, {"email"}),
        ({"email": "x@example.com", "password": "long enough", "name": "n" * 101, "company": 7}, {"name", "company"}),
        ({"email": "x" * 250 + "@example.com", "password": "long enough"}, {"email"}),
        ({"email": "x@example.com", "password": "p" * 257}, {"password"}),
        # NUL cannot be stored in PostgreSQL: the same 400 naming the field on both backends (not a 500)
        ({"email": "x\x00@example.com", "password": "long enough", "name": "N\x00", "company": "\x00"},
         {"email", "name", "company"}),
        ({"email": " x@example.com ", "password": "long enough", "name": " " * 101}, {"name"}),  # length as sent
    ],
)
def test_register_validation_names_every_bad_field(site: Site, body: dict, fields: set[str]) -> None:
    with site.client() as c:
        assert _fields(c.post("/api/auth/register", json=body)) == fields


def test_bad_bodies_are_json_problems(site: Site) -> None:
    with site.client() as c:
        for path in ("/api/auth/register", "/api/auth/login", "/api/cooperation"):
            _problem(c.post(path, content=b'{"email": "a@example.com",', headers={"content-type": "application/json"}),
                     400, "invalid_body")
            _problem(c.post(path, json=["not", "an", "object"]), 400, "invalid_body")
            _problem(c.post(path, content=b""), 400, "invalid_body")
            _problem(c.post(path, content=b"\xff\xfe", headers={"content-type": "application/json"}),
                     400, "invalid_body")
            _problem(c.post(path, content=b"email=a", headers={"content-type": "application/x-www-form-urlencoded"}),
                     415, "unsupported_media_type")
            _problem(c.post(path, content=b'{"a":"' + b"x" * 70_000 + b'"}',
                            headers={"content-type": "application/json"}), 413, "payload_too_large")
            _problem(c.get(path), 405, "method_not_allowed")


def test_wrong_password_and_unknown_email_get_the_same_401(site: Site) -> None:
    with site.client() as c:
        site.account(c, "known@example.com")
        wrong = c.post("/api/auth/login", json={"email": "known@example.com", "password": "wrong password"})
        unknown = c.post("/api/auth/login", json={"email": "nobody@example.com", "password": "wrong password"})
        injected = c.post("/api/auth/login", json={"email": "' OR '1'='1", "password": "' OR '1'='1"})
        for resp in (wrong, unknown, injected):
            _problem(resp, 401, "unauthorized")
            assert resp.headers["www-authenticate"].startswith("Bearer")
        assert wrong.content == unknown.content == injected.content
        assert _fields(c.post("/api/auth/login", json={"email": "known@example.com"})) == {"password"}
        assert _fields(c.post("/api/auth/login", json={"email": 1, "password": 2})) == {"email", "password"}


def test_login_is_limited_to_10_per_minute_per_client_ip(site: Site) -> None:
    with site.client() as c, site.client() as other:
        # every request counts against the login bucket, even an invalid one; invalid bodies skip
        # the deliberately slow password check, so the burst stays well inside one 6 s refill slot
        for _ in range(10):
            _problem(c.post("/api/auth/login", json={"email": "z@example.com"}), 400, "validation_failed")
        limited = c.post("/api/auth/login", json={"email": "z@example.com", "password": "whatever1"})
        body = _problem(limited, 429, "rate_limited")
        assert int(limited.headers["retry-after"]) >= 1 and body["retryAfter"] >= 1
        assert limited.headers["x-ratelimit-limit"] == "10"
        _problem(other.post("/api/auth/login", json={"email": "z@example.com", "password": "whatever1"}),
                 401, "unauthorized")  # another client address has its own bucket
        assert c.get("/api/news", params={"limit": 1}).status_code == 200  # other public endpoints unaffected


# --- inquiries ----------------------------------------------------------------------------------


def test_inquiry_is_stored_with_every_field(site: Site) -> None:
    with site.client() as c:
        token = site.account(c, "buyer@example.com")
        body = INQUIRY | {"message": SQL, "deliveryPlace": SQL, "product": "PTA " + SQL}
        resp = c.post("/api/submit-inquiry", json=body, headers={"Authorization": f"Bearer {token}"})
        assert resp.status_code == 201, resp.text
        created = resp.json()
        assert created.keys() == {"id", "status", "createdAt"} and created["status"] == "received"
        assert created["id"].startswith("inq_") and created["createdAt"].endswith("+08:00")
    row = site.db().execute("SELECT * FROM inquiries WHERE id = ?", (created["id"],)).fetchone()
    assert (row["product"], row["quantity"], row["unit"], row["message"], row["delivery_place"],
            row["contact_phone"], row["user_email"]) == ("PTA " + SQL, 500, "t", SQL, SQL, "+86 21 5555 0100",
                                                         "buyer@example.com")
    assert site.db().execute("SELECT COUNT(*) FROM users").fetchone()[0] >= 1  # the table survived


def _inquiry_401(c: httpx.Client, headers: dict[str, str]) -> dict[str, Any]:
    resp = c.post("/api/submit-inquiry", json=INQUIRY, headers=headers)
    body = _problem(resp, 401, "unauthorized")
    assert resp.headers["www-authenticate"].startswith('Bearer realm="market"')
    return body


def test_inquiry_refuses_missing_bad_expired_forged_and_confused_tokens(site: Site) -> None:
    with site.client() as c:
        token = site.account(c, "tokens@example.com")
        user_id = jwt.decode(token, site.secret, algorithms=["HS256"])["sub"]
        now = int(time.time())
        good = {"sub": user_id, "iat": now, "exp": now + 600}
        none_head = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        none_token = f"{none_head}.{_b64(json.dumps(good).encode())}."
        cases = {
            "missing": {},
            "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
            "empty bearer": {"Authorization": "Bearer"},
            "garbage": {"Authorization": "Bearer not.a.jwt"},
            "expired": {"Authorization": "Bearer " + _hs256(good | {"iat": now - 7200, "exp": now - 3600},
                                                            site.secret)},
            "no exp": {"Authorization": "Bearer " + _hs256({"sub": user_id, "iat": now}, site.secret)},
            "forged": {"Authorization": "Bearer " + _hs256(good, b"f" * 48)},
            "alg none": {"Authorization": "Bearer " + none_token},
            "HS256 with the IdP public key": {"Authorization": "Bearer " + _hs256(good, site.idp_pem)},
            "HS512": {"Authorization": "Bearer " + _hs256(good, site.secret, alg="HS512")},
            "unknown account": {"Authorization": "Bearer " + _hs256(good | {"sub": "usr_nobody"}, site.secret)},
            "tampered": {"Authorization": "Bearer " + token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")},
        }
        for name, headers in cases.items():
            assert _inquiry_401(c, headers)["detail"], name
        assert _inquiry_401(c, {})["detail"] == "A bearer token is required."
        ok = c.post("/api/submit-inquiry", json=INQUIRY,
                    headers={"Authorization": "Bearer " + _hs256(good, site.secret)})
        assert ok.status_code == 201  # the same claims, properly signed, pass


def test_identity_provider_rs256_tokens_match_accounts_by_email(site: Site) -> None:
    with site.client() as c:
        site.account(c, "idp.user@example.com")
        now = int(time.time())
        claims = {"sub": "idp|42", "email": "idp.user@example.com", "iat": now, "exp": now + 300}
        idp_token = jwt.encode(claims, site.idp_key, algorithm="RS256")
        resp = c.post("/api/submit-inquiry", json=INQUIRY, headers={"Authorization": f"Bearer {idp_token}"})
        assert resp.status_code == 201, resp.text
        stranger = jwt.encode(claims | {"email": "stranger@example.com"}, site.idp_key, algorithm="RS256")
        _inquiry_401(c, {"Authorization": f"Bearer {stranger}"})
        other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _inquiry_401(c, {"Authorization": "Bearer " + jwt.encode(claims, other_key, algorithm="RS256")})


def test_disabled_account_gets_403(site: Site) -> None:
    with site.client() as c:
        token = site.account(c, "leaver@example.com")
        out = run_cli(site.server.data_dir, "users", "disable", "LEAVER@example.com")
        assert out.returncode == 0, out.stderr
        _problem(c.post("/api/submit-inquiry", json=INQUIRY, headers={"Authorization": f"Bearer {token}"}),
                 403, "forbidden")
        _problem(c.post("/api/auth/login", json={"email": "leaver@example.com", "password": "correct horse"}),
                 403, "forbidden")
        _problem(c.post("/api/auth/login", json={"email": "leaver@example.com", "password": "wrong horse"}),
                 401, "unauthorized")  # a wrong password never learns the account is disabled


def test_cli_created_user_can_log_in(site: Site) -> None:
    out = run_cli(site.server.data_dir, "users", "create", "--email", "ops@example.com", "--password", "from the cli")
    assert out.returncode == 0 and "ops@example.com" in out.stdout and "from the cli" not in out.stdout
    dup = run_cli(site.server.data_dir, "users", "create", "--email", "OPS@example.com", "--password", "another one")
    assert dup.returncode == 1 and "already exists" in dup.stderr
    with site.client() as c:
        login = c.post("/api/auth/login", json={"email": "ops@example.com", "password": "from the cli"})
        assert login.status_code == 200


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"product", "quantity"}),
        ({"product": "", "quantity": 1}, {"product"}),
        ({"product": "PP", "quantity": 0}, {"quantity"}),
        ({"product": "PP", "quantity": -5}, {"quantity"}),
        ({"product": "PP", "quantity": "5"}, {"quantity"}),
        ({"product": "PP", "quantity": True}, {"quantity"}),
        ({"product": "PP", "quantity": 1e13}, {"quantity"}),
        ({"product": 5, "quantity": 1, "unit": ["t"]}, {"product", "unit"}),
        ({"product": "PP", "quantity": 1, "message": "m" * 2001}, {"message"}),
        ({"product": "PP", "quantity": 1, "deliveryPlace": "d" * 201, "contactPhone": "call me"},
         {"deliveryPlace", "contactPhone"}),
        ({"product": "PP", "quantity": 1, "contactPhone": SQL}, {"contactPhone"}),
        ({"product": "p" * 201, "quantity": 1}, {"product"}),
        ({"product": "PP", "quantity": 5e-324}, {"quantity"}),  # at least a thousandth of the unit
        ({"product": "PP", "quantity": 0.0009}, {"quantity"}),
        ({"product": "PP\x00", "quantity": 1, "unit": "\x00t", "message": "a\x00", "deliveryPlace": "\x00",
          "contactPhone": "138\x0000000000"}, {"product", "unit", "message", "deliveryPlace", "contactPhone"}),
        ({"product": "\u3000", "quantity": 1, "contactPhone": "\x1f"}, {"product", "contactPhone"}),
        ({"product": "PP", "quantity": 1, "contactPhone": "12345 -"}, {"contactPhone"}),  # ends with a digit
    ],
)
def test_inquiry_validation_names_every_bad_field(site: Site, body: dict, fields: set[str]) -> None:
    with site.client() as c:
        token = inquiry_token(site, c)
        assert _fields(c.post("/api/submit-inquiry", json=body, headers={"Authorization": f"Bearer {token}"})) == fields


_tokens: dict[int, str] = {}


def inquiry_token(site: Site, c: httpx.Client) -> str:
    """One account for the validation cases (the per-user bucket is 30/min; invalid bodies count too)."""
    if id(site) not in _tokens:
        _tokens[id(site)] = site.account(c, "validation@example.com")
    return _tokens[id(site)]


def test_inquiries_are_limited_to_30_per_minute_per_user(site: Site) -> None:
    with site.client() as c:
        busy = {"Authorization": "Bearer " + site.account(c, "busy@example.com")}
        calm = {"Authorization": "Bearer " + site.account(c, "calm@example.com")}
        ids = []
        for _ in range(30):
            resp = c.post("/api/submit-inquiry", json=INQUIRY, headers=busy)
            assert resp.status_code == 201, resp.text
            ids.append(resp.json()["id"])
        limited = c.post("/api/submit-inquiry", json=INQUIRY, headers=busy)
        body = _problem(limited, 429, "rate_limited")
        assert int(limited.headers["retry-after"]) >= 1 and body["retryAfter"] >= 1
        assert c.post("/api/submit-inquiry", json=INQUIRY, headers=calm).status_code == 201
    stored = {r[0] for r in site.db().execute("SELECT id FROM inquiries WHERE user_email = 'busy@example.com'")}
    assert stored == set(ids)  # every accepted one, and not the refused one


# --- cooperation --------------------------------------------------------------------------------


def test_cooperation_needs_no_account_and_keeps_every_field(site: Site) -> None:
    body = {"company": SQL, "contactName": "O'Neil", "email": "o'neil@example.com", "phone": "+86 (10) 6666-0000",
            "type": "partnership", "message": SQL * 10}
    with site.client() as c:
        resp = c.post("/api/cooperation", json=body)
        assert resp.status_code == 201, resp.text
        created = resp.json()
        assert created["id"].startswith("coop_") and created["status"] == "received"
        phone_only = c.post("/api/cooperation", json={"company": "C", "contactName": "N", "phone": "13800138000"})
        assert phone_only.status_code == 201
    row = site.db().execute("SELECT * FROM cooperations WHERE id = ?", (created["id"],)).fetchone()
    assert (row["company"], row["contact_name"], row["email"], row["phone"], row["type"], row["message"]) == (
        SQL, "O'Neil", "o'neil@example.com", "+86 (10) 6666-0000", "partnership", SQL * 10)
    other = site.db().execute("SELECT type, email FROM cooperations WHERE id = ?",
                              (phone_only.json()["id"],)).fetchone()
    assert tuple(other) == ("other", None)


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"company", "contactName", "email", "phone"}),
        ({"company": "C", "contactName": "N"}, {"email", "phone"}),
        ({"company": "C", "contactName": "N", "email": "", "phone": "  "}, {"email", "phone"}),
        ({"company": "C", "contactName": "N", "email": "nope"}, {"email"}),
        ({"company": "C", "contactName": "N", "phone": "abc"}, {"phone"}),
        ({"company": "C", "contactName": "N", "email": "a@example.com", "type": "spam"}, {"type"}),
        ({"company": "C", "contactName": "N", "email": "a@example.com", "type": 3}, {"type"}),
        ({"company": "C", "contactName": "N", "email": "a@example.com", "message": "m" * 2001}, {"message"}),
        ({"company": "c" * 201, "contactName": {"n": 1}, "email": "a@example.com"}, {"company", "contactName"}),
        ({"company": "C\x00", "contactName": "\x00", "email": "a@example.com\x00", "phone": "\x00",
          "message": "\x00"}, {"company", "contactName", "email", "phone", "message"}),
        ({"company": "\u3000\u3000", "contactName": "N", "phone": "\u2003"}, {"company", "email", "phone"}),
        ({"company": "C", "contactName": "N", "phone": "\x85"}, {"phone"}),  # not whitespace to every validator
    ],
)
def test_cooperation_validation_names_every_bad_field(site: Site, body: dict, fields: set[str]) -> None:
    with site.client() as c:
        assert _fields(c.post("/api/cooperation", json=body)) == fields


# --- durability ---------------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_nothing_accepted_is_lost_on_kill_9(runtime: str, tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path / "data", runtime, "--public-rate", "100000")
    try:
        def submit(i: int) -> str:
            with srv.client() as c:
                resp = c.post("/api/cooperation", json={"company": f"公司 {i}", "contactName": "N",
                                                        "email": f"c{i}@example.com", "type": "data"})
                assert resp.status_code == 201, resp.text
                return str(resp.json()["id"])

        with ThreadPoolExecutor(8) as pool:
            accepted = list(pool.map(submit, range(40)))
    finally:
        srv.kill()  # SIGKILL: no shutdown, no flush
        srv.stop()
    conn = open_database(tmp_path / "data")
    rows = dict(conn.execute("SELECT id, company FROM cooperations").fetchall())
    assert set(accepted) <= rows.keys() and len(set(accepted)) == 40
    assert sorted(rows[i] for i in accepted) == sorted(f"公司 {i}" for i in range(40))
