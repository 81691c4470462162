"""Futures contracts as clients see them (SPEC 19): `GET /api/v1/instruments?product=|symbol=` and a contract id,
on a real server with a fixed clock (hidden --clock-start), and `--catalogue-file` through the CLI.

Dates are the exchanges' (docs/contracts.md): on Tuesday 2026-11-24 ZCE's MA611 has expired (13 Nov, the 10th
trading day of November) and MA612 is the front; on 2027-05-20 MA605 expired more than a year ago.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.market.catalogue import default_catalogue
from tests.conftest import ROOT, ServerProcess

ENGINE_NEUTRAL = "contract listing is reference data computed from the calendars"

RUBBER = ('[[product]]\nid = "rubber"\nvenue = "shfe"\ncode = "ru"\ntick = 5\nmultiplier = 10\nlimit_pct = 0.08\n'
          'settlement = "vwap-day"\nmonths = [1, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nlisted = 10\n'
          'last_trading_day = "calendar-day 15"\nlast_trading_month = 0\nsymbol_form = "yymm"\n')
FIELDS = {"id", "symbol", "product", "venue", "month", "firstTradingDay", "lastTradingDay", "provisional", "tickSize",
          "multiplier", "limitPct", "status"}


def _server(root: Path, clock: str, *extra: str) -> Iterator[httpx.Client]:
    srv = ServerProcess(root / "data", "granian", "--clock-start", clock, *extra)
    client = srv.client(headers={"X-SERVICE-Key": srv.demo_key})
    try:
        yield client
    finally:
        client.close()
        assert srv.stop() == 0, srv.output()


@pytest.fixture(scope="module")
def nov(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("contracts-nov")
    (root / "rubber.toml").write_text(RUBBER)
    yield from _server(root, "2026-11-24T10:00:00+08:00", "--catalogue-file", str(root / "rubber.toml"))


@pytest.fixture(scope="module")
def may(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    yield from _server(tmp_path_factory.mktemp("contracts-may"), "2027-05-20T10:00:00+08:00")


def _contracts(client: httpx.Client, **params: str) -> list[dict[str, object]]:
    resp = client.get("/api/v1/instruments", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["instruments"]  # type: ignore[no-any-return]


def test_a_product_lists_its_contracts_on_the_server_clock(nov: httpx.Client) -> None:
    rows = _contracts(nov, product="methanol")
    listed = [r for r in rows if r["status"] == "listed"]
    assert [r["symbol"] for r in listed] == ["MA612", *(f"MA7{m:02d}" for m in range(1, 12))]
    assert all(set(r) == FIELDS for r in rows)
    front = listed[0]
    assert front == {"id": "methanol-202612", "symbol": "MA612", "product": "methanol", "venue": "zce",
                     "month": "2026-12", "firstTradingDay": "2025-12-15", "lastTradingDay": "2026-12-14",
                     "provisional": False, "tickSize": 1.0, "multiplier": 10.0, "limitPct": 0.07, "status": "listed"}
    expired = [r for r in rows if r["status"] == "expired"]
    assert expired[-1]["id"] == "methanol-202611" and expired[-1]["lastTradingDay"] == "2026-11-13"
    assert listed[-1]["provisional"] is True  # November 2027: past the PRC calendar's known range
    brent = _contracts(nov, product="brent")
    assert brent[-1] == {**brent[-1], "symbol": "BM8", "limitPct": None}  # 18 listed: Jan 2027 .. Jun 2028


def test_an_operator_catalogue_file_adds_a_product(nov: httpx.Client) -> None:
    rows = [r for r in _contracts(nov, product="rubber") if r["status"] == "listed"]
    assert [r["symbol"] for r in rows] == ["ru2701", "ru2703", "ru2704", "ru2705", "ru2706", "ru2707", "ru2708",
                                           "ru2709", "ru2710", "ru2711"]  # SHFE rubber: no February or December


def test_a_symbol_resolves_to_its_contract(nov: httpx.Client) -> None:
    assert [r["id"] for r in _contracts(nov, symbol="MA605")] == ["methanol-202605"]  # expired within a year
    assert _contracts(nov, symbol="MA605")[0]["status"] == "expired"
    assert [r["id"] for r in _contracts(nov, symbol="pp2701")] == ["pp-202701"]
    assert [r["id"] for r in _contracts(nov, symbol="CLF7")] == ["wti-202701"]
    assert [r["id"] for r in _contracts(nov, symbol="sc2903")] == ["sc-202903"]  # INE's far quarterly months


def test_a_contract_id_answers_the_contract_and_an_instrument_is_unchanged(nov: httpx.Client) -> None:
    one = nov.get("/api/v1/instruments/methanol-202605")
    assert one.status_code == 200 and one.json()["lastTradingDay"] == "2026-05-19"  # after Labour Day (1-5 May)
    assert nov.get("/api/v1/instruments/methanol-202712").status_code == 404  # listed once MA612 expires
    assert nov.get("/api/v1/instruments/brent").json()["kind"] == "oil"
    everything = nov.get("/api/v1/instruments").json()
    assert list(everything) == ["instruments"]
    assert [i["id"] for i in everything["instruments"]] == [i.id for i in default_catalogue().instruments]


@pytest.mark.parametrize(("params", "status", "field"), [
    ({"product": "methanol", "symbol": "MA605"}, 400, "symbol"),
    ({"product": "Methanol!"}, 400, "product"),
    ({"product": ""}, 400, "product"),
    ({"symbol": "MA613"}, 400, "symbol"),
    ({"symbol": "605"}, 400, "symbol"),
    ({"product": "nope"}, 404, None),
    ({"product": "usdcny"}, 404, None),  # an instrument, not a futures product
    ({"symbol": "MA712"}, 404, None),  # not listed yet
    ({"symbol": "XX605"}, 404, None),
])
def test_bad_and_unknown_queries_are_problems(nov: httpx.Client, params: dict[str, str], status: int,
                                              field: str | None) -> None:
    resp = nov.get("/api/v1/instruments", params=params)
    assert resp.status_code == status and resp.headers["content-type"].startswith("application/problem+json")
    if field is not None:
        assert [e["field"] for e in resp.json()["errors"]] == [field]


def test_another_day_moves_the_list(may: httpx.Client) -> None:
    listed = [r for r in _contracts(may, product="methanol") if r["status"] == "listed"]
    assert listed[0]["id"] == "methanol-202706" and listed[-1]["id"] == "methanol-202805"  # MA705: 14 May
    assert listed[0]["provisional"] is True  # 2027: weekdays assumed until the State Council's notice is known
    assert may.get("/api/v1/instruments", params={"symbol": "MA605"}).status_code == 404  # over a year expired
    assert _contracts(may, symbol="MA705")[0]["id"] == "methanol-202705"


def test_a_bad_catalogue_file_stops_the_start_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(f"{RUBBER}\n{RUBBER.replace('rubber', 'sugar').replace('calendar-day 15', 'the 15th')}")
    cmd = [sys.executable, "-m", "server", "serve", "--data-dir", str(tmp_path / "data"), "--port", "0",
           "--ws-port", "0", "--catalogue-file", str(bad)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert f"--catalogue-file: {bad}: [[product]] 2: field 'last_trading_day'" in lines[0], lines[0]
