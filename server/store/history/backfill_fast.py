"""The fast path of a candle import (server/store/history/backfill.py): a clean CSV parsed by Arrow a block at a time.

Clean means: every row has 7 fields, `t` is integer epoch ms within the caller's bounds, the instrument is known,
0 < l <= o,c <= h with every number finite and v >= 0, and an intraday `t` starts its bucket. Checked per block
with Arrow's compute functions and numpy instead of per row in Python; the first block that is not clean raises
`NotClean`, and the caller parses the file row by row instead, to name the bad rows. Measured: bench/history.py import.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from server.store.history.candle_store import Bar

BLOCK = 1 << 22  # bytes of CSV per Arrow block (~80,000 rows of 1m bars)
INTRADAY_MS = {"1m": 60_000, "5m": 300_000, "15m": 900_000, "1h": 3_600_000}
NAMES = ("id", "t", "o", "h", "l", "c", "v")


class NotClean(Exception):
    """A row the fast path cannot take as it is (the row-by-row path will name it)."""


def _has_header(path: Path) -> bool:
    import gzip

    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return bool(fh.read(2).lower() == b"id")


def clean_bar_blocks(path: Path, interval: str, known: Collection[str], bucket_start: Callable[[str, int], int] | None,
                     bounds: tuple[float, float] = (-math.inf, math.inf)) -> Iterator[list[Bar]]:
    """The file's bars a block at a time, every `t` within `bounds` (ms, both included); raises NotClean at the
    first block that is not clean, OSError when the file cannot be read."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    types = {"id": pa.string(), "t": pa.int64(), **{c: pa.float64() for c in "ohlcv"}}
    header = _has_header(path)
    try:
        reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(column_names=list(NAMES),
                                                                       skip_rows=1 if header else 0,
                                                                       block_size=BLOCK),
                                convert_options=pacsv.ConvertOptions(column_types=types))
        known_ids = pa.array(sorted(known), type=pa.string())
        for block in reader:
            yield _bars_of_block(block, interval, known_ids, bucket_start, bounds)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise NotClean(str(exc)) from None


def _bars_of_block(block: Any, interval: str, known_ids: Any, bucket_start: Callable[[str, int], int] | None,
                   bounds: tuple[float, float]) -> list[Bar]:
    import pyarrow.compute as pc

    cols = [block.column(i) for i in range(7)]
    if any(c.null_count for c in cols):
        raise NotClean("empty field")
    inst, t, o, h, lo, c, v = cols
    good = pc.is_in(inst, value_set=known_ids)
    for cond in (pc.greater(lo, 0), pc.less_equal(lo, o), pc.less_equal(o, h), pc.less_equal(lo, c),
                 pc.less_equal(c, h), pc.greater_equal(v, 0), pc.is_finite(h), pc.is_finite(v)):
        good = pc.and_(good, cond)
    if not pc.all(good).as_py():
        raise NotClean("a row is not clean")
    starts = t.to_numpy()
    if len(starts) and not (bounds[0] <= starts.min() and starts.max() <= bounds[1]):
        raise NotClean("t out of bounds")
    if bucket_start is not None:
        fixed = [bucket_start(interval, x) for x in starts.tolist()]
        if interval != "1d" and fixed != starts.tolist():
            raise NotClean("t is not a bucket start")
        times = fixed
    else:
        if interval != "1d" and (starts % INTRADAY_MS[interval]).any():
            raise NotClean("t is not a bucket start")
        times = starts.tolist()
    return list(zip(inst.to_pylist(), times, o.to_pylist(), h.to_pylist(), lo.to_pylist(), c.to_pylist(),
                    v.to_pylist(), strict=True))
