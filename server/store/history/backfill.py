"""Backfill (SPEC 18): history loaded from files into a live data dir, in chunks, off the event loop.

`import_ticks` reads ticks from JSONL (`{"id","ts","seq"?,"price","volume"?}`, a feed's lines) or CSV
(`id,ts,seq,price,volume`, header optional) and `import_candles` bars of one interval from CSV (`id,t,o,h,l,c,v`,
header optional); either file may be gzipped (`.gz`). Bad rows are counted and named (`line N: reason`, the first
`MAX_NAMED`), good rows are kept and written `chunk` rows per transaction through the caller's own archive or store
connection, so the hub's writers wait at most one chunk. Blocking: the CLI runs them in its process, the hub on a
storage thread.

A tick's `ts` means what it means in the feed (docs/storage.md, "What `ts` means"): epoch seconds, fractions
allowed, or ISO 8601 (as the ticks' flat files write it; naive: Asia/Shanghai); a number past `MS_AS_SECONDS` is plainly
epoch milliseconds and a bad row, as is a tick the retention would delete or one ahead of the clock (`TimeWindow`).
A candle's `t` is as in `/kline`: integer epoch milliseconds, ISO 8601 with an offset, or a date `YYYY-MM-DD`,
read as 00:00 Asia/Shanghai (SPEC 14's `from`/`to`). Writes are idempotent: a re-run completes a cut-off import.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Callable, Collection, Container, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import IO

import orjson

from server.market.tick import MAX_FUTURE_S
from server.market.timefmt import iso
from server.store.history.archive import Tick, TickArchive
from server.store.history.backfill_fast import NotClean, clean_bar_blocks
from server.store.history.candle_store import Bar, CandleStore, check_interval

MAX_NAMED = 100
SHANGHAI = timezone(timedelta(hours=8))
INTRADAY_MS = {"1m": 60_000, "5m": 300_000, "15m": 900_000, "1h": 3_600_000}
MS_AS_SECONDS = 1e11  # seconds past it (the year 5138) are plainly ms; ms below it (before 1973-03) plainly seconds


@dataclass
class ImportReport:
    rows: int = 0  # good rows written
    bad: int = 0  # bad rows skipped
    errors: list[str] = field(default_factory=list)  # the first MAX_NAMED bad rows, "line N: reason"

    first_ms: int | None = None  # the span of the good rows' times (which days' flat files they change)
    last_ms: int | None = None

    def wrote(self, batch: Sequence[tuple]) -> None:
        """Count a written batch of ticks or bars (time in position 1, epoch ms) and widen the span."""
        self.rows += len(batch)
        if batch:
            times = [row[1] for row in batch]
            lo, hi = min(times), max(times)
            self.first_ms = lo if self.first_ms is None else min(self.first_ms, lo)
            self.last_ms = hi if self.last_ms is None else max(self.last_ms, hi)

    def skip(self, lineno: int, reason: str) -> None:
        self.bad += 1
        if len(self.errors) < MAX_NAMED:
            self.errors.append(f"line {lineno}: {reason}")


def parse_instant(text: str | int | float, dates: bool = False) -> int:
    """Epoch ms from an integer, an ISO 8601 timestamp with an offset or (dates=True) a date."""
    if isinstance(text, bool):
        raise ValueError("time must be epoch ms or ISO 8601")
    if isinstance(text, int | float):
        return _whole(text, "time")
    s = text.strip()
    if s.lstrip("-").isdigit():
        return int(s)
    if dates and len(s) == 10:
        d = date.fromisoformat(s)
        return int(datetime(d.year, d.month, d.day, tzinfo=SHANGHAI).timestamp() * 1000)
    return _iso_ms(s, "epoch ms")


def _iso_ms(s: str, numbers: str, naive: timezone | None = None) -> int:
    """Epoch ms of an ISO 8601 timestamp with an offset (or without one, read in `naive` if given); `numbers` says
    what a number would have been."""
    try:
        when = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"bad time {s[:40]!r} ({numbers} or ISO 8601 with offset)") from None
    if when.tzinfo is None and naive is None:
        raise ValueError(f"time {s[:40]!r} has no offset")
    return round(when.replace(tzinfo=when.tzinfo or naive).timestamp() * 1000)


def tick_ts(value: object) -> int:
    """Epoch ms of a tick's `ts` as the feed reads it: epoch seconds (a number or its text, fractions allowed) or
    ISO 8601 (without an offset: Asia/Shanghai)."""
    if isinstance(value, str) and not value.strip().lstrip("+-").replace(".", "", 1).isdigit():
        ms = _iso_ms(value.strip(), "epoch seconds", SHANGHAI)
    else:
        seconds = _number(value, "ts")
        if seconds >= MS_AS_SECONDS:
            raise ValueError(f"ts {value} is plainly epoch milliseconds: ts is epoch seconds")
        ms = round(seconds * 1000)
    if ms < 0:
        raise ValueError(f"ts {str(value)[:40]} is before 1970")
    return ms


@dataclass(frozen=True)
class TimeWindow:
    """The times a row may be imported with: none the retention of its kind would delete (`first_ms`, None: kept
    forever), none more than MAX_FUTURE_S ahead of the clock (`now`, epoch seconds), as the feed refuses them."""

    now: float
    first_ms: int | None = None

    def check(self, ms: int, name: str = "ts") -> None:
        if self.first_ms is not None and ms < self.first_ms:
            raise ValueError(f"{name} {iso(ms / 1000)} is older than the retention keeps "
                             f"(from {iso(self.first_ms / 1000)})")
        if ms > self.last_ms:
            raise ValueError(f"{name} {iso(ms / 1000)} is in the future (the clock reads {iso(self.now)})")

    @property
    def last_ms(self) -> float:
        return (self.now + MAX_FUTURE_S) * 1000


def _whole(x: object, name: str) -> int:
    if isinstance(x, str):
        if not x.strip().lstrip("-").isdigit():
            raise ValueError(f"{name} must be an integer")
        return int(x)
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) or x != int(x):
        raise ValueError(f"{name} must be an integer")
    return int(x)


def _number(x: object, name: str) -> float:
    if isinstance(x, str):
        try:
            x = float(x)
        except ValueError:
            raise ValueError(f"{name} is not a number") from None
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        raise ValueError(f"{name} is not a finite number")
    return float(x)


def tick_of(values: list[object], known: Container[str]) -> Tick:
    """A tick from its five fields (id, ts, seq, price, volume), validated; a seq of None is left 0 (to number)."""
    inst = str(values[0]).strip()
    if inst not in known and inst.lower() in known:  # the feed reads an id in any case
        inst = inst.lower()
    if inst not in known:
        raise ValueError(f"unknown instrument {inst[:40]!r}")
    ts = tick_ts(values[1])
    seq = 0 if values[2] is None else _whole(values[2], "seq")  # 0: numbered by `tick_rows`, as the feed does
    price, volume = _number(values[3], "price"), _number(values[4], "volume")
    if seq < 1 and values[2] is not None:
        raise ValueError("seq must be >= 1")
    if price <= 0 or volume < 0:
        raise ValueError("price must be > 0 and volume >= 0")
    return (inst, ts, seq, price, volume)


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _is_jsonl(path: Path) -> bool:
    name = path.name.removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return True
    if name.endswith(".csv"):
        return False
    with _open_text(path) as fh:
        return fh.read(64).lstrip().startswith("{")


def tick_rows(path: Path, known: Container[str], report: ImportReport, window: TimeWindow | None = None
              ) -> Iterator[Tick]:
    """The good ticks of a JSONL or CSV file (within `window`, if given); bad ones go to `report`. A JSON line
    without `seq` (the feed takes none: it numbers each instrument's ticks as it accepts them) gets the count of
    its instrument's good ticks so far in the file, 1, 2, ...: the numbers a hub started on the file would give
    them, and the same on a re-run (idempotent)."""
    jsonl = _is_jsonl(path)
    counts: dict[str, int] = {}
    with _open_text(path) as fh:
        lines = enumerate(fh, 1) if jsonl else enumerate(csv.reader(fh), 1)
        for lineno, line in lines:
            try:
                if jsonl:
                    tick = _json_tick(line, known)  # type: ignore[arg-type]
                elif _is_header(line, "id"):  # type: ignore[arg-type]
                    continue
                else:
                    tick = _csv_tick(line, known)  # type: ignore[arg-type]
                if tick is not None and window is not None:
                    window.check(tick[1])
            except (ValueError, TypeError) as exc:
                report.skip(lineno, str(exc))
                continue
            if tick is not None:
                n = counts[tick[0]] = counts.get(tick[0], 0) + 1
                yield tick if tick[2] else (tick[0], tick[1], n, tick[3], tick[4])


def _json_tick(line: str, known: Container[str]) -> Tick | None:
    if not line.strip():
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise ValueError("not JSON") from None
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    missing = [f for f in ("id", "ts", "price") if f not in obj]  # a feed's line without ts means "now": no time
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    if "seq" in obj and obj["seq"] is None:
        raise ValueError("seq must be an integer (or left out)")
    return tick_of([obj["id"], obj["ts"], obj.get("seq"), obj["price"], obj.get("volume", 0)], known)


def _csv_tick(row: list[str], known: Container[str]) -> Tick | None:
    if not row:
        return None
    if len(row) != 5:
        raise ValueError(f"expected 5 columns (id,ts,seq,price,volume), got {len(row)}")
    return tick_of(list(row), known)


def _is_header(row: list[str], first: str) -> bool:
    return bool(row) and row[0].strip().lower() == first


def import_ticks(archive: TickArchive, path: Path, known: Container[str], window: TimeWindow | None = None,
                 chunk: int = 50_000) -> ImportReport:
    """Append the file's good ticks to `archive`, `chunk` per transaction; raises OSError if unreadable."""
    report = ImportReport()
    batch: list[Tick] = []
    for tick in tick_rows(path, known, report, window):
        batch.append(tick)
        if len(batch) >= chunk:
            archive.append(batch)
            report.wrote(batch)
            batch = []
    if batch:
        archive.append(batch)
        report.wrote(batch)
    return report


def bar_of(row: list[str], interval: str, known: Container[str],
           bucket_start: Callable[[str, int], int] | None, window: TimeWindow | None = None) -> Bar:
    if len(row) != 7:
        raise ValueError(f"expected 7 columns (id,t,o,h,l,c,v), got {len(row)}")
    inst = row[0].strip()
    if inst not in known:
        raise ValueError(f"unknown instrument {inst[:40]!r}")
    text = row[1]
    t = int(text) if text.isdigit() else parse_instant(text, dates=True)  # epoch ms: the fast path of a big import
    if t < MS_AS_SECONDS and text.strip().lstrip("-").isdigit():
        raise ValueError(f"t {text} is plainly epoch seconds: t is epoch milliseconds")
    if window is not None:
        window.check(t, "t")
    try:
        o, h, lo, c, v = float(row[2]), float(row[3]), float(row[4]), float(row[5]), float(row[6])
    except ValueError:
        raise ValueError("o, h, l, c, v must be numbers") from None
    # NaN fails every comparison, so it is refused here too; inf fails h's finiteness check
    if not (0 < lo <= o <= h and lo <= c <= h and v >= 0 and h < math.inf and v < math.inf):
        raise ValueError("prices must satisfy 0 < l <= o,c <= h and v >= 0, all finite")
    return (inst, _bucket(interval, t, bucket_start), o, h, lo, c, v)


def _bucket(interval: str, t: int, bucket_start: Callable[[str, int], int] | None) -> int:
    """A daily bar's time names its day (its bucket start is the day's); an intraday one must be a bucket start."""
    if bucket_start is not None:
        start = bucket_start(interval, t)
        if interval != "1d" and start != t:
            raise ValueError(f"t is not the start of a {interval} bucket")
        return start
    if interval != "1d" and t % INTRADAY_MS[interval]:
        raise ValueError(f"t is not the start of a {interval} bucket")
    return t


def import_candles(store: CandleStore, interval: str, path: Path, known: Collection[str],
                   bucket_start: Callable[[str, int], int] | None = None, window: TimeWindow | None = None,
                   chunk: int = 10_000) -> ImportReport:
    """Upsert the CSV's good bars of `interval` into `store`, `chunk` per transaction.

    A clean file (epoch-ms times, every row good) is parsed by Arrow's CSV reader a block at a time
    (server/store/history/backfill_fast.py: ~2x faster); at the first block that is not clean the file is read again row
    by row, which names every bad row (the bars already written are written again: upserts, idempotent)."""
    check_interval(interval)
    report = ImportReport()
    try:
        bounds = (max(MS_AS_SECONDS, (window and window.first_ms) or 0), window.last_ms if window else math.inf)
        for batch in clean_bar_blocks(path, interval, known, bucket_start, bounds):
            store.put_closed(interval, batch)
            report.wrote(batch)
        return report
    except NotClean:
        pass
    return _import_candle_rows(store, interval, path, known, bucket_start, window, chunk)


def _import_candle_rows(store: CandleStore, interval: str, path: Path, known: Container[str],
                        bucket_start: Callable[[str, int], int] | None, window: TimeWindow | None,
                        chunk: int) -> ImportReport:
    report = ImportReport()
    batch: list[Bar] = []
    with _open_text(path) as fh:
        for lineno, row in enumerate(csv.reader(fh), 1):
            if not row or _is_header(row, "id"):
                continue
            try:
                batch.append(bar_of(row, interval, known, bucket_start, window))
            except ValueError as exc:
                report.skip(lineno, str(exc))
            if len(batch) >= chunk:
                store.put_closed(interval, batch)
                report.wrote(batch)
                batch = []
    if batch:
        store.put_closed(interval, batch)
        report.wrote(batch)
    return report
