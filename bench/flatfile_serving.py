"""Issue 31's flat-file memory figure on a running hub: a day of ticks for 40 instruments served with < 50 MiB of
extra RSS, on each runtime.

    taskset -c 0 .venv/bin/python -m bench.flatfile_serving [--runtime granian|robyn] [--ticks-per-s 4]

A data dir's history gets 40 catalogue instruments' ticks, N a second each over Tuesday 2026-11-17 09:00-15:00 in
Shanghai (every venue's trading day 2026-11-17); a hub starts on it with its clock on the Wednesday (hidden
--clock-start), so Tuesday's files exist. Once the listing names both formats (made by the hub's flat-file job
or the listing itself), the hub's peak RSS is reset (/proc/PID/clear_refs) and each file is downloaded whole, then
as a resumed download (`Range: bytes=size/3-`), by two clients at once; the extra RSS is the hub's peak
(VmHWM) over its RSS before. Only 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx

from server.market.catalogue import default_catalogue
from server.market.timefmt import TZ
from server.store.history.archive_sqlite import SqliteTickArchive
from tests.conftest import free_ports

START = int(datetime(2026, 11, 17, 9, 0, tzinfo=TZ).timestamp() * 1000)
HOURS = 6
NOW = "2026-11-18T14:20:00+08:00"


def fill(data: Path, per_s: int) -> int:
    archive = SqliteTickArchive(data)
    rng = random.Random(7)
    n = HOURS * 3600 * per_s
    ids = [inst.id for inst in default_catalogue().instruments][:40]
    for inst in ids:
        price = 100.0
        for at in range(0, n, 200_000):
            chunk = []
            for k in range(at, min(n, at + 200_000)):
                price = max(1.0, price + rng.choice((-0.01, 0.0, 0.01)))
                chunk.append((inst, START + k * 1000 // per_s, k + 1, round(price, 2), float(rng.randint(1, 9))))
            archive.append(chunk)
    archive.close()
    return n * len(ids)


def status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def download(base: str, key: str, url: str, headers: dict[str, str]) -> int:
    got = 0
    with httpx.stream("GET", base + url, headers={"X-SERVICE-Key": key, **headers}, timeout=120) as r:
        assert r.status_code in (200, 206), r.status_code
        for piece in r.iter_bytes():
            got += len(piece)
    return got


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runtime", default="granian", choices=["granian", "robyn"])
    p.add_argument("--ticks-per-s", type=int, default=4)
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="flat-serving-"))
    data = root / "data"
    data.mkdir()
    try:
        t = time.perf_counter()
        total = fill(data, args.ticks_per_s)
        print(f"{total:,} ticks archived in {time.perf_counter() - t:.0f} s; {platform.processor() or ''} "
              f"{_cpu()}, runtime {args.runtime}")
        (root / "feed.jsonl").write_text("")
        port, ws = free_ports(2)
        log = open(root / "hub.log", "w")  # noqa: SIM115  (closed below)
        env = {**os.environ, "MARKET_DEMO_HOURS": "always"}
        hub = subprocess.Popen([sys.executable, "-m", "server", "serve", "--data-dir", str(data), "--port", str(port),
                                "--ws-port", str(ws), "--runtime", args.runtime, "--feed", f"jsonl:{root}/feed.jsonl",
                                "--clock-start", NOW, "--engine", "memory"], stdout=log, stderr=log, env=env)
        try:
            run(hub, f"http://127.0.0.1:{port}", data)
        finally:
            hub.terminate()
            hub.wait(30)
            log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(hub: subprocess.Popen[bytes], base: str, data: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/readyz").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)  # not listening yet: nothing to await
    key = json.loads(subprocess.run([sys.executable, "-m", "server", "keys", "create", "--plan", "professional",
                                     "--json", "--data-dir", str(data)], capture_output=True, text=True,
                                    check=True).stdout)["key"]
    files = {}
    t = time.perf_counter()
    for fmt in ("csv.gz", "parquet"):
        r = httpx.get(base + "/api/v1/flatfiles", params={"dataset": "ticks", "from": "2026-11-17",
                                                          "to": "2026-11-17", "format": fmt},
                      headers={"X-SERVICE-Key": key}, timeout=600)
        files[fmt] = r.json()["files"][0]
    print(f"both files listed (made) after {time.perf_counter() - t:.1f} s")
    for fmt, entry in files.items():
        Path(f"/proc/{hub.pid}/clear_refs").write_text("5")
        base_rss = status(hub.pid, "VmRSS")
        got = [0, 0]

        def client(i: int, entry: dict = entry, got: list[int] = got) -> None:
            got[i] = download(base, key, entry["url"], {})
            got[i] += download(base, key, entry["url"], {"Range": f"bytes={entry['bytes'] // 3}-"})

        threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        took = time.perf_counter() - t
        extra = (status(hub.pid, "VmHWM") - base_rss) / 1024
        print(f"{fmt:8} {entry['rows']:,} rows, {entry['bytes'] / 2**20:.1f} MiB: 2 clients x (whole + 2/3 resumed) "
              f"= {sum(got) / 2**20:.0f} MiB in {took:.2f} s; hub RSS {base_rss / 1024:.0f} MiB, extra peak "
              f"{extra:.1f} MiB")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return ""


if __name__ == "__main__":
    main()
