"""Issue 45's listing figure: a year of flat-file listings (every dataset, Parquet) on a running hub, first call
and repeated calls, with few days holding rows (most of a year's trading days are empty for some dataset).

    taskset -c 0 .venv/bin/python -m bench.flatfile_listing [--runtime granian|robyn] [--calls 20]

A data dir gets, with the CLI's imports, Tuesday 2026-11-17's ticks and 1m bars and four daily candles; a hub
starts on it with its clock on Wednesday 2026-11-18 (hidden --clock-start, demo keys off). `GET /api/v1/flatfiles
?from=2025-11-18&to=2026-11-18&format=parquet` is asked once (it makes the files of the days with rows and reads
every other closed day's rows to find none), then `--calls` times; the figure is the median of those and the
first's time, as the client sees them (127.0.0.1, keep-alive). Then one `ticks import` of a tick on an empty day
(the data version moves): the next listing names that day, and its time is printed too.

`--every-day` also imports a daily brent candle for every trading day of the year: about 260 more listed files, each
carrying its day's data-quality condition (SPEC 20: the worst over every venue trading that date, each venue-day
read from the tick archive once, then kept), the worst case for the listing's `condition`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime
from pathlib import Path

import httpx

from server.market.timefmt import TZ
from server.market.venues.book import VenueBook
from tests.conftest import free_ports

NOW = "2026-11-18T14:20:00+08:00"
PARAMS = {"from": "2025-11-18", "to": "2026-11-18", "format": "parquet"}


def _ms(day: int, hour: int, minute: int) -> int:
    return int(datetime(2026, 11, day, hour, minute, tzinfo=TZ).timestamp() * 1000)


def cli(data: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "server", *args, "--data-dir", str(data), "--clock-start", NOW],
                   check=True, capture_output=True)


def fill(root: Path, data: Path, every_day: bool = False) -> None:
    ticks = root / "ticks.jsonl"
    ticks.write_text("".join(json.dumps({"id": inst, "ts": _ms(17, 10, k) / 1000, "price": 80 + k, "volume": 1})
                             + "\n" for inst in ("brent", "methanol") for k in range(30)))
    cli(data, "ticks", "import", str(ticks))
    bars = root / "bars.csv"
    bars.write_text("id,t,o,h,l,c,v\n" + "".join(f"brent,{_ms(17, 10, k)},80,81,79,80.5,6\n" for k in range(30)))
    cli(data, "candles", "import", "--interval", "1m", str(bars))
    daily = root / "daily.csv"
    daily.write_text("brent,2026-11-17,80,81,79,80.5,6\nbrent,2026-11-16,80,81,79,80.5,6\n"
                     "brent,2026-06-01,80,81,79,80.5,6\nbrent,2026-01-05,80,81,79,80.5,6\n"
                     + ("".join(f"brent,{d},80,81,79,80.5,6\n" for d in _weekdays()) if every_day else ""))
    cli(data, "candles", "import", str(daily))


def _weekdays() -> list[str]:
    """Every trading day of brent's venue from 2025-11-18 to 2026-11-13 (not the four days imported above)."""
    held = {"2026-11-17", "2026-11-16", "2026-06-01", "2026-01-05"}
    days = VenueBook.load().for_instrument("brent").trading_days(date(2025, 11, 18), date(2026, 11, 13))
    return [d.isoformat() for d in days if d.isoformat() not in held]


def listing(client: httpx.Client) -> tuple[float, int]:
    t = time.perf_counter()
    r = client.get("/api/v1/flatfiles", params=PARAMS)
    took = time.perf_counter() - t
    assert r.status_code == 200, r.text
    return took, len(r.json()["files"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runtime", default="granian", choices=["granian", "robyn"])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--every-day", action="store_true", help="a daily candle on every trading day of the year too")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="flat-listing-"))
    data = root / "data"
    data.mkdir()
    try:
        fill(root, data, args.every_day)
        (root / "feed.jsonl").write_text("")
        port, ws = free_ports(2)
        log = open(root / "hub.log", "w")  # noqa: SIM115  (closed below)
        hub = subprocess.Popen([sys.executable, "-m", "server", "serve", "--data-dir", str(data), "--port", str(port),
                                "--ws-port", str(ws), "--runtime", args.runtime, "--feed", f"jsonl:{root}/feed.jsonl",
                                "--clock-start", NOW, "--engine", "memory"], stdout=log, stderr=log, env=os.environ)
        try:
            run(f"http://127.0.0.1:{port}", data, root, args.calls, args.runtime)
        finally:
            hub.terminate()
            hub.wait(30)
            log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(base: str, data: Path, root: Path, calls: int, runtime: str) -> None:
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
    with httpx.Client(base_url=base, headers={"X-SERVICE-Key": key}, timeout=120) as client:
        first, n = listing(client)
        times = [listing(client)[0] for _ in range(calls)]
        again = root / "again.jsonl"
        again.write_text(json.dumps({"id": "brent", "ts": _ms(12, 10, 0) / 1000, "price": 80, "volume": 1}) + "\n")
        cli(data, "ticks", "import", str(again))
        after, m = listing(client)
        settled = statistics.median(listing(client)[0] for _ in range(calls))
    print(f"{runtime}: a year of listings (3 datasets, parquet), {n} files: first {first * 1000:.0f} ms, then median "
          f"{statistics.median(times) * 1000:.1f} ms (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}) "
          f"over {calls} calls; after an import into an empty day {after * 1000:.0f} ms ({m} files), then median "
          f"{settled * 1000:.1f} ms")


if __name__ == "__main__":
    main()
