"""Public-site API over real HTTP on both runtimes: market, news, research, receipts, verify-anchor (SPEC 8)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.conftest import ServerProcess, admin_repos, open_database, run_cli

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+08:00$")
SECRET_HOLDER = "绝密测试控股集团有限公司"  # imported below; must never appear in any answer


def _problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body = resp.json()
    assert body["status"] == status and body["code"] == code and {"type", "title", "detail"} <= body.keys()
    assert resp.headers["access-control-allow-origin"] == "*"
    return body


def _db(server: ServerProcess) -> sqlite3.Connection:
    return open_database(server.data_dir)


def _sha(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def rfc9162_root(leaf_hex: str, index: int, size: int, proof_hex: list[str]) -> bytes | None:
    """RFC 9162 2.1.3.2, written here independently of server/evidence: the root a proof leads to."""
    fn, sn, r = index, size - 1, _sha(b"\x00" + bytes.fromhex(leaf_hex))
    for p in (bytes.fromhex(x) for x in proof_hex):
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = _sha(b"\x01" + p + r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = _sha(b"\x01" + r + p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


# --- market -----------------------------------------------------------------------------------


def test_market_has_eight_categories_with_etag_and_max_age(http: httpx.Client) -> None:
    resp = http.get("/api/market")
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    body = resp.json()
    assert body.keys() == {"updated", "refreshSeconds", "demo", "categories"}
    assert ISO.match(body["updated"]) and body["refreshSeconds"] == 60 and body["demo"] is True
    cats = body["categories"]
    assert [c["id"] for c in cats] == ["crude", "refined", "gas-lpg", "methanol", "olefins", "aromatics",
                                       "chlor-alkali", "fx"]
    for c in cats:
        assert c.keys() == {"id", "name", "count", "quotes"} and set(c["name"]) == {"zh", "en"}
        assert c["count"] == len(c["quotes"]) > 0
    assert sum(c["count"] for c in cats) >= 40
    assert re.fullmatch(r'"[0-9a-f]{32}(-br|-gz)?"', resp.headers["etag"])  # -br/-gz: a compressed coding's tag
    max_age = int(re.fullmatch(r"public, max-age=(\d+)", resp.headers["cache-control"]).group(1))  # type: ignore[union-attr]
    assert 0 <= max_age <= 60
    assert resp.headers["x-ratelimit-limit"] == "100000"


def test_if_none_match_gives_304_with_cors_and_rate_headers(http: httpx.Client) -> None:
    first = http.get("/api/market")
    etag = first.headers["etag"]
    again = http.get("/api/market", headers={"If-None-Match": etag})
    if again.status_code == 200:  # the snapshot was rebuilt in between (once a minute): try once more
        etag = again.headers["etag"]
        again = http.get("/api/market", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag and again.headers["cache-control"].startswith("public, max-age=")
    assert again.headers["access-control-allow-origin"] == "*"
    assert "x-ratelimit-remaining" in again.headers and "ratelimit-policy" in again.headers
    assert "content-type" not in again.headers  # representation metadata stays with the 200 (RFC 9110 15.4.5)
    assert http.get("/api/market", headers={"If-None-Match": '"other"'}).status_code == 200
    assert http.get("/api/market", headers={"If-None-Match": f'"x", W/{etag}'}).status_code == 304


def test_market_category_and_unknown_category(http: httpx.Client) -> None:
    whole = http.get("/api/market").json()
    resp = http.get("/api/market/methanol")
    assert resp.status_code == 200 and resp.headers["etag"] != http.get("/api/market").headers["etag"]
    one = resp.json()
    assert one["id"] == "methanol" and one["count"] == len(one["quotes"])
    assert {"updated", "refreshSeconds", "demo", "name"} <= one.keys()
    if one["updated"] == whole["updated"]:
        assert one["quotes"] == next(c for c in whole["categories"] if c["id"] == "methanol")["quotes"]
    assert http.get("/api/market/methanol", headers={"If-None-Match": resp.headers["etag"]}).status_code in (200, 304)
    unknown = _problem(http.get("/api/market/metals"), 404, "not_found")
    ids = [c["id"] for c in whole["categories"]]
    assert len(ids) == 8 and "'metals'" in unknown["detail"]
    assert unknown["detail"].endswith("the categories are " + ", ".join(ids) + "."), unknown["detail"]
    _problem(http.get("/api/market/%27%20OR%201%3D1--"), 404, "not_found")
    _problem(http.post("/api/market", json={}), 405, "method_not_allowed")


# --- news and research ------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "minimum"), [("/api/news", 30), ("/api/research", 15)])
def test_content_is_seeded_bilingual_latest_first_and_pages(http: httpx.Client, path: str, minimum: int) -> None:
    first = http.get(path).json()
    assert first.keys() == {"items", "total", "limit", "offset"}
    assert first["total"] >= minimum and first["limit"] == 20 and first["offset"] == 0
    everything = http.get(path, params={"limit": 100}).json()["items"]
    assert len(everything) == first["total"] and everything[:20] == first["items"]
    times = [it["publishedAt"] for it in everything]
    assert times == sorted(times, reverse=True) and len(set(times)) > minimum // 2
    for it in everything:
        assert ISO.match(it["publishedAt"])
        assert set(it["title"]) == set(it["summary"]) == {"zh", "en"}
        assert all(it["title"].values()) and all(it["summary"].values())
        expected = {"id", "title", "summary", "source", "publishedAt", "tags"}
        if path == "/api/research":
            expected |= {"author", "category"}
            assert it["author"] and it["category"]
        assert it.keys() == expected and isinstance(it["tags"], list)
    page = http.get(path, params={"limit": 5, "offset": 7}).json()
    assert page["items"] == everything[7:12] and (page["limit"], page["offset"]) == (5, 7)
    beyond = http.get(path, params={"offset": 1000}).json()
    assert beyond["items"] == [] and beyond["total"] == first["total"]


@pytest.mark.parametrize(
    ("params", "fields"),
    [({"limit": "0"}, ["limit"]), ({"limit": "101"}, ["limit"]), ({"limit": "abc"}, ["limit"]),
     ({"limit": "1.5"}, ["limit"]), ({"limit": "-1"}, ["limit"]), ({"limit": ""}, ["limit"]),
     ({"limit": "1e1"}, ["limit"]), ({"offset": "-1"}, ["offset"]), ({"offset": "+3"}, ["offset"]),
     ({"offset": "1; DROP TABLE content_items"}, ["offset"]), ({"limit": "0", "offset": "x"}, ["limit", "offset"])],
)
def test_bad_paging_is_400_naming_the_parameters(http: httpx.Client, params: dict, fields: list[str]) -> None:
    for path in ("/api/news", "/api/research"):
        body = _problem(http.get(path, params=params), 400, "invalid_parameter")
        assert [e["field"] for e in body["errors"]] == fields


def test_content_import_shows_at_once_and_reports_bad_items(server: ServerProcess, http: httpx.Client,
                                                            tmp_path: Path) -> None:
    before = http.get("/api/news").json()["total"]
    good = [
        {"kind": "news", "title": {"zh": "导入测试快讯", "en": "Imported wire item"}, "summary": "plain summary",
         "source": "Ops", "publishedAt": "2099-06-01T09:00:00+08:00", "tags": ["ops"]},
        {"kind": "research", "title": "A plain-string research title", "summary": {"zh": "摘要", "en": "Abstract"},
         "author": "O'Brien", "category": "methanol", "publishedAt": "2099-05-01T10:00:00"},
    ]
    path = tmp_path / "content.json"
    path.write_text(json.dumps(good))
    out = run_cli(server.data_dir, "content", "import", str(path))
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + 1.0  # the content version is polled every 0.5 s (api/site/content.py)
    while (news := http.get("/api/news").json())["total"] == before:
        assert time.monotonic() < deadline, "the import did not show within 1 s"
    assert news["total"] == before + 1
    top = news["items"][0]
    assert top["title"] == {"zh": "导入测试快讯", "en": "Imported wire item"}
    assert top["summary"] == {"zh": "plain summary", "en": "plain summary"}
    assert top["publishedAt"] == "2099-06-01T09:00:00.000+08:00" and top["tags"] == ["ops"]
    research = http.get("/api/research", params={"limit": 1}).json()["items"][0]
    assert research["title"]["en"] == "A plain-string research title" and research["author"] == "O'Brien"
    assert research["publishedAt"] == "2099-05-01T10:00:00.000+08:00"  # no offset: Asia/Shanghai
    assert run_cli(server.data_dir, "content", "import", str(path)).returncode == 0  # idempotent
    assert http.get("/api/news").json()["total"] == before + 1
    research_before = research_total(http)

    bad = [good[0] | {"title": {"zh": "x"}, "publishedAt": "2099-06-02T09:00:00+08:00"},
           {"kind": "blog", "title": "t", "summary": "s", "publishedAt": "soon", "tags": "x"},
           "not an object", good[1] | {"publishedAt": "2099-07-01T00:00:00+08:00"}]
    path.write_text(json.dumps(bad))
    out = run_cli(server.data_dir, "content", "import", str(path))
    assert out.returncode == 1
    for line in ("item 0: title.en: is required", "item 1: kind:", "item 1: publishedAt:", "item 1: tags:",
                 "item 2: must be a JSON object"):
        assert line in out.stderr
    assert "item 3" not in out.stderr
    assert research_total(http) == research_before  # nothing imported
    assert http.get("/api/news").json()["total"] == before + 1


def research_total(http: httpx.Client) -> int:
    return int(http.get("/api/research", params={"limit": 1}).json()["total"])


# --- receipts and evidence --------------------------------------------------------------------


def test_demo_receipt_is_masked_and_anchored(http: httpx.Client) -> None:
    resp = http.get("/api/receipt/WR-NB-000101")
    assert resp.status_code == 200
    body = resp.json()
    assert body.keys() == {"receiptNo", "commodity", "grade", "quantity", "unit", "warehouse", "holder", "status",
                           "issuedAt", "expiresAt", "evidenceHash", "anchored"}
    assert body["holder"] == "上海******有限公司" and body["status"] == "active"
    assert ISO.match(body["issuedAt"]) and ISO.match(body["expiresAt"])
    assert re.fullmatch(r"[0-9a-f]{64}", body["evidenceHash"]) and body["anchored"] is True
    assert http.get("/api/receipt/WR-FJ-000108").json()["expiresAt"] is None
    statuses = {http.get(f"/api/receipt/WR-{p}").json()["status"] for p in ("ZJ-000102", "TJ-000105", "CQ-000109")}
    assert statuses == {"pledged", "frozen", "cancelled"}


@pytest.mark.parametrize(
    "number",
    ["ab", "-abc", "a" * 65, "abc_def", "abc%20def", "%27%20OR%201%3D1--", "%E4%B8%AD%E6%96%87%E7%BC%96%E5%8F%B7",
     "abc.def"],
)
def test_malformed_receipt_numbers_are_400(http: httpx.Client, number: str) -> None:
    body = _problem(http.get(f"/api/receipt/{number}"), 400, "invalid_parameter")
    assert body["errors"][0]["field"] == "receiptNo"


def test_a_nul_in_a_path_names_no_resource(http: httpx.Client) -> None:
    """Issue 45: a NUL anywhere in a path matches no route (it never reaches storage): 404 on every route."""
    for path in ("/api/receipt/abc%00def", "/api/v1/quotes/brent%00", "/api/console/keys/key_%00"):
        _problem(http.get(path), 404, "not_found")


def test_unknown_receipt_is_404(http: httpx.Client) -> None:
    _problem(http.get("/api/receipt/NOPE-000000"), 404, "not_found")
    _problem(http.get("/api/receipt/wr-nb-000101"), 404, "not_found")  # numbers are case-sensitive


@pytest.mark.parametrize(
    "value",
    [None, "", "abc", "a" * 63, "a" * 65, "g" * 64, " " + "a" * 63, "' OR 1=1 --" + "a" * 53, "0x" + "a" * 62],
)
def test_malformed_hashes_are_400(http: httpx.Client, value: str | None) -> None:
    params = {} if value is None else {"hash": value}
    body = _problem(http.get("/api/verify-anchor", params=params), 400, "invalid_parameter")
    assert body["errors"] == [{"field": "hash", "message": "hash must be 64 hexadecimal characters (a SHA-256)"}]


def test_unknown_hash_is_404(http: httpx.Client) -> None:
    _problem(http.get("/api/verify-anchor", params={"hash": secrets.token_hex(32)}), 404, "not_found")


def _anchored(http: httpx.Client, digest: str) -> dict[str, Any]:
    body = http.get("/api/verify-anchor", params={"hash": digest}).json()
    assert body["verified"] is True and body["status"] == "anchored", body
    return body


def test_verify_anchor_proof_recomputes_the_root_independently(http: httpx.Client) -> None:
    digest = http.get("/api/receipt/WR-GD-000106").json()["evidenceHash"]
    body = _anchored(http, digest.upper())  # hex is case-insensitive; answered in lower case
    assert body["hash"] == digest
    assert {"anchoredAt", "ledger", "blockHeight", "txHash", "merkleRoot", "leafIndex", "treeSize",
            "proof"} <= body.keys()
    assert ISO.match(body["anchoredAt"]) and body["ledger"] == "local" and body["blockHeight"] >= 1
    assert 0 <= body["leafIndex"] < body["treeSize"] and len(body["proof"]) >= 1
    root = rfc9162_root(body["hash"], body["leafIndex"], body["treeSize"], body["proof"])
    assert root is not None and root.hex() == body["merkleRoot"]
    wrong = [body["proof"][0][::-1], *body["proof"][1:]]
    assert rfc9162_root(body["hash"], body["leafIndex"], body["treeSize"], wrong).hex() != body["merkleRoot"]  # type: ignore[union-attr]


def test_submitted_hash_is_pending_then_anchored_by_the_hub(server: ServerProcess, http: httpx.Client) -> None:
    digest = secrets.token_hex(32)
    repos = admin_repos(server.data_dir)
    repos.evidence.submit(digest)  # a submission the hub has not anchored yet
    repos.close()
    first = http.get("/api/verify-anchor", params={"hash": digest}).json()
    assert first == {"hash": digest, "verified": False, "status": "pending"} or first["verified"] is True
    deadline = time.monotonic() + 8.0  # the hub anchors pending evidence every 5 s
    body = first
    while not body["verified"] and time.monotonic() < deadline:
        time.sleep(0.1)  # nothing to await from outside the server
        body = http.get("/api/verify-anchor", params={"hash": digest}).json()
    assert body["status"] == "anchored", body
    root = rfc9162_root(digest, body["leafIndex"], body["treeSize"], body["proof"])
    assert root is not None and root.hex() == body["merkleRoot"]


@pytest.mark.parametrize("column", ["root", "ts"])
def test_tampered_ledger_fails_verification(server: ServerProcess, http: httpx.Client, column: str) -> None:
    digest = secrets.token_hex(32)
    out = run_cli(server.data_dir, "evidence", "anchor", "--hash", digest)
    assert out.returncode == 0, out.stderr
    height = _anchored(http, digest)["blockHeight"]
    conn = _db(server)
    (original,) = conn.execute(f"SELECT {column} FROM evidence_blocks WHERE height = ?", (height,)).fetchone()
    forged = "ab" * 32 if column == "root" else original + 1.0
    try:
        with conn:
            conn.execute(f"UPDATE evidence_blocks SET {column} = ? WHERE height = ?", (forged, height))
        body = http.get("/api/verify-anchor", params={"hash": digest})
        assert body.status_code == 200
        assert body.json() == {"hash": digest, "verified": False, "status": "tampered"}
    finally:
        with conn:
            conn.execute(f"UPDATE evidence_blocks SET {column} = ? WHERE height = ?", (original, height))
        conn.close()
    _anchored(http, digest)  # detection is recomputed on every request, not a sticky flag


def test_imported_receipt_holder_never_leaves_the_database(server: ServerProcess, http: httpx.Client,
                                                           tmp_path: Path) -> None:
    receipts = [{"receiptNo": "TEST-SECRET-1", "commodity": "PTA", "grade": "优等品", "quantity": 12.5, "unit": "t",
                 "warehouse": "张家港保税区 7 号库", "holder": SECRET_HOLDER, "status": "active",
                 "issuedAt": "2026-01-05T09:00:00+08:00", "expiresAt": "2027-01-05T09:00:00+08:00"}]
    path = tmp_path / "receipts.json"
    path.write_text(json.dumps(receipts, ensure_ascii=False))
    out = run_cli(server.data_dir, "receipts", "import", str(path))
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["inserted"] == 1 and summary["anchored"] is not None
    bad = path.with_name("bad.json")
    bad.write_text(json.dumps([receipts[0] | {"holder": SECRET_HOLDER * 20, "status": "lost"}], ensure_ascii=False))
    failed = run_cli(server.data_dir, "receipts", "import", str(bad))
    assert failed.returncode == 1 and "item 0: holder" in failed.stderr and "item 0: status" in failed.stderr

    view = http.get("/api/receipt/TEST-SECRET-1")
    body = view.json()
    assert body["holder"] == "绝密******有限公司" and body["anchored"] is True and body["quantity"] == 12.5
    row = _db(server).execute("SELECT salt FROM receipts WHERE receipt_no = 'TEST-SECRET-1'").fetchone()
    canonical = {k: receipts[0][k] for k in ("receiptNo", "commodity", "grade", "quantity", "unit", "warehouse",
                                             "holder", "status")}
    canonical |= {"issuedAt": "2026-01-05T09:00:00.000+08:00", "expiresAt": "2027-01-05T09:00:00.000+08:00",
                  "salt": row[0]}
    assert body["evidenceHash"] == hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()
    assert body["evidenceHash"] == summary["receipts"][0]["evidenceHash"]

    answers = [view, http.get("/api/verify-anchor", params={"hash": body["evidenceHash"]}),
               http.get("/api/receipt/TEST-SECRET-2"), http.get("/api/receipt/TEST_SECRET"),
               http.get("/api/market"), http.get("/api/news", params={"limit": 100}),
               http.get("/api/research", params={"limit": 100})]
    texts = [out.stdout, out.stderr, failed.stdout, failed.stderr, server.output()]
    for blob in [a.content.decode() for a in answers] + texts:
        assert SECRET_HOLDER not in blob
        assert "绝密测试" not in blob and "测试控股" not in blob


def test_jwt_secret_is_generated_into_the_data_dir_with_mode_0600(server: ServerProcess) -> None:
    path = server.data_dir / "jwt-secret"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and len(path.read_bytes().strip()) >= 32
