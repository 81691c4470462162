"""How to keep a futures tick's detail in the tick archive (issue 39)? Bytes a tick in `history.sqlite3` for
200,000 ticks of one contract (a random walk on the tick, 2 ticks a second) with each encoding of `TickDetail` in
the archive's `detail` column, written through `SqliteTickArchive.append` in 50,000-tick transactions, measured
after a WAL checkpoint. Two feeds: a book and open interest (bid, ask, sizes, oi: the JSON-lines feed), and a CTP
record's (the same plus the day's cumulative volume and turnover).

    .venv/bin/python -m bench.archive_detail
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import tempfile
from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path

from server.market.tick import TickDetail, detail_compact, detail_text
from server.store.history.archive_sqlite import SqliteTickArchive, file_bytes

Row = tuple[str, int, int, float, float, TickDetail]
T0_MS = 1795589400000  # 2026-11-25 14:50 in Shanghai
KEYS = ("bid", "ask", "bidSize", "askSize", "oi", "cumVolume", "turnover", "settle", "limitUp", "limitDown")


def feed(n: int, ctp: bool, seed: int = 7) -> list[Row]:
    rng = random.Random(seed)
    price, oi, cum, turnover = 2400.0, 150_000.0, 0.0, 0.0
    out: list[Row] = []
    for k in range(n):
        price += rng.choice((-1.0, 0.0, 1.0))
        volume = float(rng.randint(1, 40))
        oi += rng.randint(-10, 10)
        cum += volume
        turnover += price * volume * 10
        detail = TickDetail(price - 1, price + 1, float(rng.randint(1, 80)), float(rng.randint(1, 80)), oi,
                            cum if ctp else None, turnover if ctp else None)
        out.append(("methanol-202605", T0_MS + k * 500, k + 1, price, volume, detail))
    return out


def as_json(d: TickDetail) -> str:
    return json.dumps({k: v for k, v in zip(KEYS, astuple(d), strict=True) if v is not None}, separators=(",", ":"))


def as_binary(d: TickDetail) -> bytes:
    values = astuple(d)
    mask = sum(1 << i for i, v in enumerate(values) if v is not None)
    return struct.pack("<H", mask) + b"".join(struct.pack("<d", v) for v in values if v is not None)


ENCODINGS: dict[str, Callable[[TickDetail], object]] = {
    "none (NULL)": lambda d: None, "detail_compact (the archive's)": detail_compact,
    "detail_text (the Redis token)": detail_text, "binary (mask + float64s)": as_binary, "json": as_json,
}


def size(rows: list[Row], encode: Callable[[TickDetail], object]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        archive = SqliteTickArchive(Path(tmp))
        for at in range(0, len(rows), 50_000):
            archive.append([(i, ts, seq, p, v, encode(d)) for i, ts, seq, p, v, d in rows[at:at + 50_000]])  # type: ignore[misc]
        archive.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        total = file_bytes(Path(tmp))
        archive.close()
        return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=200_000)
    n = parser.parse_args().ticks
    for name, ctp in (("book + oi", False), ("CTP: + cumVolume, turnover", True)):
        rows = feed(n, ctp)
        base = size(rows, ENCODINGS["none (NULL)"])
        print(f"{name} (example: {detail_compact(rows[-1][5])})")
        for label, encode in ENCODINGS.items():
            total = size(rows, encode)
            print(f"  {label:32s} {total / n:6.1f} B/tick  (+{(total - base) / n:.1f})")


if __name__ == "__main__":
    main()
