"""The demo market's term structure (SPEC 19, issue 39 item 4): a futures product's contracts as one curve.

Every contract row's price is its product's walk (the product row's unrounded price) times a curve factor
`exp(slope * years to expiry)`: `slope` per product, drawn from the seed (> 0 contango, < 0 backwardation), so
the whole curve moves as one and keeps its shape. A contract's open interest follows a smooth function of the
business days to its last trading day that rises from listing, peaks `OI_PEAK_DAYS` before expiry and falls to
almost nothing on the last day, times a weight per contract (from the seed and its id): open interest migrates to
later months by itself and the main contract rolls a few times in the 90-day history (server/market/contracts/
main.py decides it from the data, as for any feed). Pure: numbers in, numbers out, deterministic for a seed.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import date

import numpy as np

from server.market.catalogue import Catalogue

YEAR_S = 365.25 * 86400.0
SLOPE_RANGE = (-0.12, 0.12)  # per year: from 12% backwardation to 12% contango
OI_PEAK_DAYS = 30.0  # business days before expiry where a contract's open interest peaks
OI_RISE_DAYS = 45.0  # how wide the rise before the peak is (business days)
OI_FALL_DAYS = 12.0  # how fast it falls after the peak
OI_FLOOR = 0.01  # a listed contract always has some open interest (of the peak)


def oi_shape(days_left: np.ndarray) -> np.ndarray:
    """The open interest profile by business days to expiry (1 at the peak); 0 once expired (< 0)."""
    x = np.asarray(days_left, dtype=np.float64)
    width = np.where(x > OI_PEAK_DAYS, OI_RISE_DAYS, OI_FALL_DAYS)
    shape = OI_FLOOR + (1 - OI_FLOOR) * np.exp(-(((x - OI_PEAK_DAYS) / width) ** 2))
    return np.where(x >= 0, shape, 0.0)


class CurveModel:
    """The term structure of every futures product with contract rows in `catalogue`."""

    def __init__(self, catalogue: Catalogue, seed: int) -> None:
        insts = catalogue.instruments
        n = len(insts)
        self.is_contract = np.array([bool(i.product) for i in insts])
        self.rows = np.flatnonzero(self.is_contract)
        self.base = np.array([catalogue.product_of(r) for r in range(n)], dtype=np.intp)  # a row's product row
        self.first = np.array([_ordinal(i.first_trading_day) for i in insts], dtype=np.int64)
        self.last = np.array([_ordinal(i.last_trading_day) for i in insts], dtype=np.int64)
        self.expiry_ts = np.full(n, np.inf)  # the close of the last trading day (set from the venue clocks)
        self.expiry_ts[self.rows] = [(int(self.last[r]) - 719163 + 1) * 86400.0 for r in self.rows]  # UTC midnight
        rng = np.random.default_rng(np.random.SeedSequence([seed, 19]))
        slopes = {p: rng.uniform(*SLOPE_RANGE) for p in sorted({insts[r].product for r in self.rows})}
        self.slope = np.array([slopes.get(i.product, 0.0) for i in insts])
        self.weight = np.ones(n)
        for r in self.rows:  # a contract's own weight: the same for a seed whatever else is listed
            self.weight[r] = np.random.default_rng([seed, zlib.crc32(insts[r].id.encode())]).lognormal(0.0, 0.12)

    def set_expiries(self, close_ts: Sequence[float]) -> None:
        """Each contract's last trading day's close (epoch seconds), from its venue clock."""
        self.expiry_ts[self.rows] = np.asarray(close_ts, dtype=np.float64)

    def factor(self, rows: np.ndarray, ts: float) -> np.ndarray:
        """The curve factor of contract ``rows`` at ``ts``: their price over their product's walk."""
        years = np.maximum(self.expiry_ts[rows] - ts, 0.0) / YEAR_S
        return np.exp(self.slope[rows] * years)

    def factor_days(self, rows: np.ndarray, days: np.ndarray) -> np.ndarray:
        """(len(rows), len(days)) curve factors at the close of each day (ordinals)."""
        years = np.maximum(self.last[rows][:, None] - days[None, :], 0) / 365.25
        return np.exp(self.slope[rows][:, None] * years)

    def oi_days(self, rows: np.ndarray, days: np.ndarray) -> np.ndarray:
        """(len(rows), len(days)) open interest profile (times the contract's weight) at each day's close; 0 before
        listing and after expiry."""
        start = np.array([date.fromordinal(int(d)) for d in days], dtype="datetime64[D]")
        end = np.array([date.fromordinal(int(d)) for d in self.last[rows]], dtype="datetime64[D]")
        left = np.busday_count(start[None, :], end[:, None]).astype(np.float64)
        shape = oi_shape(left) * self.weight[rows][:, None]
        listed = (days[None, :] >= self.first[rows][:, None]) & (days[None, :] <= self.last[rows][:, None])
        return np.where(listed, shape, 0.0)

    def oi_now(self, rows: np.ndarray, ts: float) -> np.ndarray:
        """The open interest profile of ``rows`` at ``ts`` (fractional business days, smooth within a day)."""
        left = (self.expiry_ts[rows] - ts) / 86400.0 * 5.0 / 7.0
        return oi_shape(left) * self.weight[rows]

    def traded(self, days: np.ndarray) -> np.ndarray:
        """(n, len(days)): whether each row trades on each day (a contract between its first and last trading day;
        every other row: always)."""
        inside = (days[None, :] >= self.first[:, None]) & (days[None, :] <= self.last[:, None])
        return np.where(self.is_contract[:, None], inside, True)


def _ordinal(text: str) -> int:
    return date.fromisoformat(text).toordinal() if text else 0
