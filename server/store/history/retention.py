"""How long history is kept, per kind (SPEC 18), and the pruning the root runs as a background job.

Defaults (days; 0 keeps forever):

| kind  | days  | why |
|-------|-------|-----|
| ticks | 30    | SPEC 18's floor; ~36 bytes a tick on SQLite (bench/README.md), the largest kind by far |
| 1m    | 366   | SPEC 18: a year of minute bars (a quant's usual backtest window) |
| 5m    | 730   | two years: 5x fewer rows than 1m, cheap to keep twice as long |
| 15m   | 1,095 | three years |
| 1h    | 1,830 | five years, as daily: 24 rows a day an instrument |
| 1d    | 3,660 | ten years (SPEC 18 asks at least five): 250 rows a year an instrument, nothing to save |

`prune(now)` deletes what is older than `now - days` for every kind and says how much went; each store does
it in short transactions (SQLite: an hour of one instrument's ticks at a time; PostgreSQL: whole day
partitions dropped), so the hub's writes wait at most one short step. Blocking: run it on a thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from server.store.history.archive import TickArchive
from server.store.history.candle_store import INTERVALS, CandleStore

DAY_MS = 86_400_000
KINDS = ("ticks", *INTERVALS)
DEFAULT_DAYS: Mapping[str, int] = {"ticks": 30, "1m": 366, "5m": 730, "15m": 1095, "1h": 1830, "1d": 3660}


@dataclass(frozen=True)
class Retention:
    days: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_DAYS))

    def __post_init__(self) -> None:
        for kind, n in self.days.items():
            if kind not in KINDS:
                raise ValueError(f"retention: unknown kind {kind!r} (one of {', '.join(KINDS)})")
            if n < 0:
                raise ValueError(f"retention: {kind} must be >= 0 days (0 keeps forever), got {n}")

    def cutoff_ms(self, kind: str, now: float) -> int | None:
        """Epoch ms before which `kind` is dropped at `now` (epoch seconds), or None to keep everything."""
        days = self.days.get(kind, DEFAULT_DAYS[kind])
        return None if days == 0 else int(now * 1000) - days * DAY_MS


def prune(archive: TickArchive, candles: CandleStore, now: float, retention: Retention | None = None) -> dict[str, int]:
    """Delete every kind's history older than its retention at `now` (epoch seconds); rows deleted per kind."""
    policy = retention or Retention()
    deleted: dict[str, int] = {}
    cut = policy.cutoff_ms("ticks", now)
    if cut is not None:
        deleted["ticks"] = archive.prune(cut)
    for interval in INTERVALS:
        cut = policy.cutoff_ms(interval, now)
        if cut is not None:
            deleted[interval] = candles.prune(interval, cut)
    return deleted


def earliest_all(archive: TickArchive, candles: CandleStore, inst: str) -> dict[str, int | None]:
    """The first tick and the first bucket of every interval held for `inst` (epoch ms; None: nothing held),
    for `GET /api/v1/instruments/{id}`'s `earliest`."""
    out: dict[str, int | None] = {"ticks": archive.earliest(inst)}
    for interval in INTERVALS:
        out[interval] = candles.earliest(interval, inst)
    return out
