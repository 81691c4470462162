"""A live (jsonl) feed: candles imported by CLI, ticks from a file, candles persisted across restarts."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.conftest import ServerProcess, run_cli


def _wait_for(predicate, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)  # the server applies file lines on its own schedule
    raise AssertionError("condition not met in time")


def test_jsonl_feed_with_imported_history_survives_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    csv = tmp_path / "c.csv"
    csv.write_text("id,t,o,h,l,c,v\nbrent,2026-11-19,70,71,69,70.5,1000\nbrent,2026-11-20,70.5,72,70,71.2,1200\n")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("brent,2026-11-21,70,71,69,70.5,1000\nnope,2026-11-20,1,1,1,1,1\n")
    assert run_cli(data, "candles", "import", str(csv)).returncode == 0
    bad = run_cli(data, "candles", "import", str(bad_csv))
    assert bad.returncode == 1 and "not a trading day" in bad.stderr and "unknown instrument" in bad.stderr

    ticks = tmp_path / "ticks.jsonl"
    lines = [{"id": "brent", "price": 72.5, "volume": 10}, "not json", {"id": "gold", "price": 1},
             {"id": "wti", "price": -1}, {"id": "brent", "price": 73.0, "ts": time.time(), "volume": 5}]
    ticks.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")

    srv = ServerProcess(data, "granian", "--feed", f"jsonl:{ticks}", "--no-demo-key")
    try:
        _, key = srv.create_key("free")
        h = {"X-SERVICE-Key": key}
        quote = _wait_for(lambda: (q := httpx.get(srv.base + "/api/v1/quotes/brent", headers=h).json())
                          and q["seq"] == 2 and q)
        assert quote["price"] == 73.0 and quote["prevClose"] == 71.2
        assert quote["change"] == round(73.0 - 71.2, 2)
        assert httpx.get(srv.base + "/api/v1/quotes", headers=h).json()["demo"] is False
        wti = httpx.get(srv.base + "/api/v1/quotes/wti", headers=h).json()
        assert wti["price"] is None and wti["seq"] == 0  # no data yet: null, never invented
        metrics = httpx.get(srv.base + "/metrics").text
        assert "market_feed_bad_lines 2" in metrics and "market_feed_unknown_ids 1" in metrics
        series = httpx.get(srv.base + "/api/v1/kline/brent", headers=h).json()["series"]
        assert [c["c"] for c in series] == [70.5, 71.2, 73.0]
        assert series[-1]["h"] == 73.0 and series[-1]["v"] == 15
    finally:
        assert srv.stop() == 0

    ticks.write_text("")
    again = ServerProcess(data, "granian", "--feed", f"jsonl:{ticks}", "--no-demo-key")
    try:
        series = httpx.get(again.base + "/api/v1/kline/brent", headers=h).json()["series"]
        assert [c["c"] for c in series] == [70.5, 71.2, 73.0]  # the live candle was persisted on stop
    finally:
        assert again.stop() == 0
