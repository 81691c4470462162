"""Issue 45's hardening for the console routes of issue 43 (SPEC 20, docs/ingest.md): `/api/console/instruments`
(POST, GET, DELETE) and `POST /api/console/keys {scope}` with extreme input on a real hub, both runtimes (the hub of
tests/contract/test_ingest_extremes.py, which also checks its log for ERROR and tracebacks).

Every bad declaration is a 400 naming its field (any account's: a body is checked before the plan, after the
account's console bucket, so the cases are spread over fresh accounts), every body that is not a JSON object a 400
`invalid_body`, every odd id to delete a 404 problem; the longest names and units that are allowed are kept as sent.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess
from tests.contract.test_ingest import INSTRUMENT, account, problem
from tests.contract.test_ingest_extremes import BIG, fresh_names, serving, shared_publisher, srv

__all__ = ["srv"]  # the module-scoped hub fixture, one per runtime here too


def _declare_cases(ns: str) -> list[tuple[dict[str, Any], str]]:
    """(a declaration, the field its 400 names)."""
    cases: list[tuple[dict[str, Any], str]] = []
    for iid in (f"{ns}.a.b", f"{ns}.é", f"{ns}./../x", f"{ns}.%2e", f"{ns}.", ".x", f"{ns}.x\x00", f"{ns}." + "a" * 49,
                f"{ns.upper()}.x", f"{ns}.x ", f" {ns}.x", f"{ns}.x/y", f"{ns}.x\\y", f"{ns}.-x", "a" * 10_000, "",
                1, None, [f"{ns}.x"], {"id": f"{ns}.x"}, f"{ns}.\u202ex", f"{ns}.x\n"):
        cases.append(({"id": iid}, "id"))
    for field, limit in (("name", 100), ("unit", 40)):
        for value in ({"zh": "中" * (limit + 1), "en": "x"}, {"zh": "中", "en": "x" * 10_000}, {"zh": "", "en": "x"},
                      {"zh": "中", "en": " \u3000 "}, {"zh": "中\x00", "en": "x"}, {"zh": "中"}, {"zh": 1, "en": "x"},
                      {"zh": "中", "en": "x", "fr": "y"}, "plain", ["中", "x"], None, 1, {"zh": ["中"], "en": "x"}):
            cases.append(({field: value}, field))
    for decimals in (-1, 9, 8.5, 1e300, -1e300, "2", True, None, [2], {"d": 2}, 2**64):
        cases.append(({"decimals": decimals}, "decimals"))
    for currency in ("usd", "US", "USDX", "€€€", "ＵＳＤ", "US\x00", " USD", 1, None, ["USD"], ""):
        cases.append(({"currency": currency}, "currency"))
    venue: Any
    for venue in ("ICE-EU", "ice-eu\x00", "../ice-eu", "ice-eu/", "", "x" * 10_000, 1, None, [], {"id": "ice-eu"}):
        cases.append(({"venue": venue}, "venue"))
    session: Any
    for session in ("", "nope", "cn-day\x00", 1, [], {}):
        cases.append(({"session": session}, "session"))
    cases.append(({"colour": "red", "名": 1, "\x00": 1}, "colour"))
    return cases


class Consoles:
    """Signed-in console clients of new accounts, a fresh one every 25 requests: each account may make 30 console
    requests a minute (CONSOLE_RATE), and a body is checked after that bucket (so any account's 400 is the same)."""

    def __init__(self, srv: ServerProcess) -> None:
        self.srv, self.used, self.client = srv, 0, httpx.Client()

    def __call__(self) -> httpx.Client:
        if self.used % 25 == 0:
            self.client = account(self.srv, f"c{next(fresh_names)}@example.com", enterprise=False)
        self.used += 1
        return self.client


def test_extreme_declarations_are_400_naming_the_field(srv: ServerProcess) -> None:
    pub, consoles = shared_publisher(srv), Consoles(srv)
    ns = pub["ns"]
    for change, field in _declare_cases(ns):
        body = {"id": f"{ns}.fine", **INSTRUMENT, **change}
        resp = consoles().post("/api/console/instruments", json=body)
        assert resp.status_code == 400, (str(change)[:80], resp.text)
        found = problem(resp, 400, "validation_failed")
        assert field in {e["field"] for e in found["errors"]}, (change, found)
    for raw in (b"[]", b'"x"', b"1", b"null", b"true", b"[{}]", b"", b"{", b"\xff\xfe", b"\x00", b"{}" * 2,
                b'{"decimals": ' + BIG.encode() + b"}", b'{"decimals": NaN}', b'{"decimals": 1e309}', b"[" * 60_000):
        resp = consoles().post("/api/console/instruments", content=raw, headers={"content-type": "application/json"})
        problem(resp, 400, "invalid_body")
    problem(consoles().post("/api/console/instruments", content=b"{}", headers={"content-type": "text/plain"}), 415,
            "unsupported_media_type")
    longest = {"id": f"{ns}." + "z" * 48, **INSTRUMENT, "name": {"zh": "中" * 100, "en": "x" * 100},
               "unit": {"zh": "单" * 40, "en": "u" * 40}, "decimals": 8.0, "currency": "XAU"}
    made = pub["console"].post("/api/console/instruments", json=longest)
    assert made.status_code == 201 and made.json()["decimals"] == 8, made.text
    listed = pub["console"].get("/api/console/instruments").json()["items"]
    assert next(i for i in listed if i["id"] == longest["id"])["name"] == longest["name"]
    serving(srv)


@pytest.mark.parametrize("raw", ["x.a.b", "x.%C3%A9", "..%2F..%2Fetc%2Fpasswd", "%00", "x.x%00", "a" * 4000,
                                 "%E2%80%AE", "x0.x%2F", "%2e%2e", "x0.x%20", "%FF%FE", "x0.X"])
def test_deleting_an_odd_id_is_a_404(srv: ServerProcess, raw: str) -> None:
    console = account(srv, f"{next(fresh_names)}@example.com")  # enterprise: the id is looked up
    resp = console.delete("/api/console/instruments/" + raw)
    assert resp.status_code in (400, 404) and resp.headers["content-type"] == "application/problem+json", resp.text
    assert console.get("/api/console/instruments").status_code == 200


def test_odd_key_scopes_and_labels_are_400(srv: ServerProcess) -> None:
    consoles = Consoles(srv)
    for body, field in (({"scope": "INGEST"}, "scope"), ({"scope": ""}, "scope"), ({"scope": " ingest"}, "scope"),
                        ({"scope": "write"}, "scope"), ({"scope": 1}, "scope"), ({"scope": ["ingest"]}, "scope"),
                        ({"scope": {"s": 1}}, "scope"), ({"scope": "ingest\x00"}, "scope"), ({"scope": "读"}, "scope"),
                        ({"label": "x" * 10_000}, "label"), ({"label": "a\x00"}, "label"), ({"label": 5}, "label"),
                        ({"scope": "ingest", "admin": True}, "admin")):
        found = problem(consoles().post("/api/console/keys", json=body), 400, "validation_failed")
        assert field in {e["field"] for e in found["errors"]}, (body, found)
    for raw in (b"[]", b'"ingest"', b"null", b"", b"\xff"):
        problem(consoles().post("/api/console/keys", content=raw, headers={"content-type": "application/json"}), 400,
                "invalid_body")
    serving(srv)
