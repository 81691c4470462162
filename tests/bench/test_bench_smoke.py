"""Smoke tests: each locust suite and `bench/run --quick` run end to end against real servers.

Small counts and seconds-long runs, so the suites cannot rot; the figures themselves live in
bench/README.md. Deselect with `-m "not bench"`.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, ServerProcess

pytestmark = pytest.mark.bench
LOCUST_DIR = ROOT / "bench" / "locust"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The server with the default limits (the shared fixture raises the public rate)."""
    data = tmp_path_factory.mktemp("bench-smoke") / "data"
    server = ServerProcess(data, "granian", "--public-rate", "60")
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def enterprise_key(srv: ServerProcess) -> str:
    return srv.create_key("enterprise", "--rate", "100000000")[1]


def locust(suite: str, host: str, csv_prefix: Path, env: dict[str, str], *args: str,
           timeout: float = 90) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MARKET_")}
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUST_DIR / suite), "--headless", "--only-summary",
           "--host", host, "--csv", str(csv_prefix), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env={**clean, **env})


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_ratelimits_suite_passes_against_default_limits(srv: ServerProcess, tmp_path: Path) -> None:
    _, free = srv.create_key("free")
    _, pro = srv.create_key("professional")
    out = locust("ratelimits.py", srv.base, tmp_path / "rl", {"MARKET_FREE_KEY": free, "MARKET_PRO_KEY": pro},
                 "-u", "1", "-r", "1", "--run-time", "60s")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OVERALL: PASS" in out.stdout
    verdicts = read_csv(tmp_path / "rl_verdicts.csv")
    assert [v["check"] for v in verdicts] == [
        f"{bucket}: {check}"
        for bucket in ("free key", "professional key", "public per IP")
        for check in ("limit header", "burst", "429 response", "Retry-After honoured")
    ]
    assert {v["verdict"] for v in verdicts} == {"PASS"}, verdicts
    burst = {v["check"]: v for v in verdicts}
    for bucket in ("free key", "public per IP"):
        # PASS above means 60 allowed, plus one per second the burst lasted (a refill): exactly "60 x 200" only
        # when it took under a second, which a loaded machine does not promise
        v = burst[f"{bucket}: burst"]
        allowed = re.fullmatch(r"(\d+) x 200 then 429 \(\d+ requests in \d+ ms\)", v["measured"])
        assert allowed, v
        assert int(allowed.group(1)) == 60 or v["expected"].startswith("60.."), v
    stats = {row["Name"]: row for row in read_csv(tmp_path / "rl_stats.csv")}
    assert int(stats["free key burst"]["Request Count"]) > 60


def test_ratelimits_suite_fails_when_the_limit_differs(srv: ServerProcess, tmp_path: Path) -> None:
    _, free = srv.create_key("free")
    out = locust("ratelimits.py", srv.base, tmp_path / "rl", {"MARKET_FREE_KEY": free},
                 "-u", "1", "-r", "1", "--run-time", "60s", "--plan-rate", "free=30", "--public-paths", "")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "OVERALL: FAIL" in out.stdout
    verdicts = {v["check"]: v for v in read_csv(tmp_path / "rl_verdicts.csv")}
    assert verdicts["free key: limit header"]["verdict"] == "FAIL"
    assert verdicts["free key: burst"]["verdict"] == "FAIL"  # 60 allowed where 30 were claimed
    assert verdicts["professional key"]["verdict"] == "SKIP"
    assert verdicts["public per IP"]["verdict"] == "SKIP"


def test_throughput_suite(srv: ServerProcess, enterprise_key: str, tmp_path: Path) -> None:
    # bounded by count (400 requests: each endpoint's share is at least 2 in 21, so none is left out), with
    # --run-time only as the upper bound: a loaded machine takes longer, it does not send fewer
    out = locust("throughput.py", srv.base, tmp_path / "tp", {"MARKET_KEY": enterprise_key},
                 "-u", "4", "-r", "4", "--run-time", "60s", "--max-requests", "400")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OVERALL: PASS" in out.stdout
    # the suite's own verdict rows, written when it quits (locust's stats CSV is rewritten once a second, so a
    # run that ends sooner leaves it empty)
    verdicts = {row["check"]: row for row in read_csv(tmp_path / "tp_verdicts.csv")}
    for name in ("/api/v1/quotes", "/api/v1/quotes/[id]", "/api/v1/kline/[id]", "/api/v1/spreads",
                 "/api/v1/inventory"):
        sent = re.match(r"([\d,]+) req,", verdicts[name]["measured"])
        assert sent and int(sent.group(1).replace(",", "")) > 0, verdicts[name]
        assert verdicts[name]["verdict"] == "PASS", verdicts[name]  # no failures
    total = re.match(r"([\d,]+) req,", verdicts["total"]["measured"])
    assert total and int(total.group(1).replace(",", "")) >= 400, verdicts["total"]


def test_ws_stream_suite(srv: ServerProcess, enterprise_key: str, tmp_path: Path) -> None:
    out = locust("ws_stream.py", srv.base, tmp_path / "ws", {"MARKET_KEY": enterprise_key},
                 "--ws-url", f"{srv.ws_base}/ws/quotes", "--ping-s", "0.5", "-u", "3", "-r", "3", "--run-time", "3s")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OVERALL: PASS" in out.stdout
    stats = {row["Name"]: row for row in read_csv(tmp_path / "ws_stats.csv")}
    assert int(stats["connect"]["Request Count"]) == 3
    assert int(stats["tick"]["Request Count"]) > 0
    assert int(stats["pong"]["Request Count"]) > 0
    gaps = read_csv(tmp_path / "ws_ws_gaps.csv")
    assert sum(int(g["ticks"]) for g in gaps) > 0
    assert all(g["gaps"] == "0" for g in gaps)


def test_ws_stream_suite_reports_a_refused_handshake(srv: ServerProcess, tmp_path: Path) -> None:
    _, free = srv.create_key("free")  # WebSocket push is not for the free plan: 403
    out = locust("ws_stream.py", srv.base, tmp_path / "ws", {"MARKET_KEY": free},
                 "--ws-url", f"{srv.ws_base}/ws/quotes", "-u", "1", "-r", "1", "--run-time", "2s",
                 "--stop-timeout", "20")  # a handshake still in flight when the 2 s end is finished and counted
    assert out.returncode == 1, out.stdout + out.stderr
    verdicts = {v["check"]: v for v in read_csv(tmp_path / "ws_verdicts.csv")}
    assert verdicts["connections"]["verdict"] == "FAIL"
    assert "403: 1" in verdicts["connections"]["note"]


@pytest.mark.timeout(300)  # the suite-wide 120 s is tight under load
def test_bench_run_quick_prints_its_table(tmp_path: Path) -> None:
    # Granian's rows, the FastAPI baseline, the Litestar peer and the fan-out harness: the whole `--quick`
    # run (Robyn, callgrind, the other engineers' scripts) takes over 5 minutes, half the suite's budget
    out = subprocess.run([str(ROOT / "bench" / "run"), "--quick", "--no-setup", "--runtimes", "granian",
                          "--no-instructions", "--no-others", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    table = (tmp_path / "table.md").read_text()
    for row in ("granian: static-bytes ceiling", "granian: GET /api/v1/quotes |", "granian: GET /api/v1/kline/brent",
                "granian vs FastAPI+uvicorn: quotes", "granian vs FastAPI+uvicorn: kline",
                "granian: p99 at 50% of peak, quotes"):
        assert row in table, row
        assert row in out.stdout, row
    if (ROOT / "bench" / "ws_fanout.py").exists():
        assert "ws fan-out" in table
    assert (tmp_path / "results.json").exists()
    assert list(tmp_path.glob("wrk-granian-quotes-r1.txt"))


def test_ws_deflate_bench_counts_smaller_compressed_bytes() -> None:
    """bench/ws_deflate.py end to end (1 connection, 2 s each way): the compressed snapshot is smaller, and the
    deflate run's frames carry RSV1 while the raw run's do not."""
    out = subprocess.run([sys.executable, "bench/ws_deflate.py", "--conns", "1", "--seconds", "2", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    raw, dfl = json.loads(out.stdout)
    assert (raw["mode"], dfl["mode"]) == ("raw", "deflate")
    assert not raw["snapshot_compressed"] and dfl["snapshot_compressed"]
    assert dfl["snapshot_bytes"] < raw["snapshot_bytes"] / 2
    assert raw["compressed_frames_pct"] == 0 and dfl["compressed_frames_pct"] > 50


def test_robyn_instruction_harness_answers_from_the_hot_path(tmp_path: Path) -> None:
    """bench.instructions --runtime robyn without valgrind: each endpoint's calls are answered by the sync hot
    handler with a kept response (a call handed to the loop would wait forever there, so a miss would hang: the
    harness checks serve_hot answers before measuring), and the pipeline counts each of them."""
    script = f"""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r})
from bench.instructions import build, robyn_requester
hub, runtime, secret = build(Path({str(tmp_path)!r}), runtime="robyn")
for endpoint in ("quotes", "kline", "news", "static"):
    one = robyn_requester(runtime, endpoint, secret)
    for _ in range(50):
        one()
before = sum(h.count_ok[0] for q in runtime.app.answers.by_path.values() for h in q.values())
one = robyn_requester(runtime, "quotes", secret)
for _ in range(100):
    one()
after = sum(h.count_ok[0] for q in runtime.app.answers.by_path.values() for h in q.values())
print(after - before)
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert int(out.stdout.split()[-1]) >= 100  # every call (and the harness's own check) went through serve_hot


def test_process_instructions_reads_a_callgrind_dump(tmp_path: Path) -> None:
    """The dump parser: a function's own cost lines count, a call's inclusive cost line does not, and the copy
    routines' share is reported apart."""
    from bench.process_instructions import _self_costs

    dump = tmp_path / "cg.out.1"
    dump.write_text("events: Ir\nsummary: 160\n\nfn=handler\n1 40\ncfn=__memcpy_avx_unaligned_erms\ncalls=1 0\n"
                    "2 100\n3 10\n\nfn=__memcpy_avx_unaligned_erms\n0 100\n\nfn=other\n+1 10\n")
    assert _self_costs(dump) == (160, 100)
