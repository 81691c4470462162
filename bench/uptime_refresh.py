"""The daily uptime's cost (docs/status.md, `GET /api/v1/status/uptime`): the background refresh over 90 days of
per-minute availability rows in a SQLite data dir, first read and the incremental ones after, and one answer's build.

    .venv/bin/python -m bench.uptime_refresh [--hubs N]

Writes 90 days of every minute's row for N hubs (22 components: rest, stream, storage and 19 feeds, every venue in
session so no minute is skipped by the feed rule), then times `UptimeApi.refresh()` three times (the first reads 90
days, the next ones the last 8) and `view(90)` (the answer before serialization, kept per copy by the route).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from server.api.ops.uptime import UptimeApi
from server.core.availability import MinuteRecord
from server.store.availability.store import AvailabilityStore
from server.store.sql.storage import SqliteStorage

NOW = 1773280800.0  # 2026-03-12T10:00+08:00
COMPONENTS = ["rest", "stream", "storage", *(f"feed:v{i}" for i in range(19))]


async def run(store: AvailabilityStore, hubs: int) -> None:
    end = int(NOW // 60)
    for h in range(hubs):
        rows = [MinuteRecord(f"h:{h}", m, 10, 0, [1] * 12, 5, [1] * 12, 60, {}) for m in range(end - 90 * 1440, end)]
        for i in range(0, len(rows), 20000):
            await store.add(rows[i:i + 20000])
    api = UptimeApi(store, COMPONENTS, lambda venue, minute: True, lambda: NOW)
    for label in ("first (90 days)", "next (8 days)", "next (8 days)"):
        wall, cpu = time.perf_counter(), time.process_time()
        await api.refresh()
        print(f"{hubs} hub(s), {label}: {time.perf_counter() - wall:.2f} s wall, "
              f"{time.process_time() - cpu:.2f} s CPU")
    wall = time.perf_counter()
    for _ in range(100):
        api.view(90)
    print(f"view(90): {(time.perf_counter() - wall) * 10:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hubs", type=int, default=1)
    args = parser.parse_args()
    storage = SqliteStorage(Path(tempfile.mkdtemp()) / "data")
    try:
        asyncio.run(run(AvailabilityStore(storage), args.hubs))
    finally:
        storage.close()


if __name__ == "__main__":
    main()
