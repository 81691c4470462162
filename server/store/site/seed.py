"""The demo content of a new database, as an explicit ordered list of steps, the same on every backend.

Each backend runs `seed(target, now)` once, inside the transaction that creates its database (SQLite:
`open_db`; PostgreSQL: `migrate`), and records `meta.seeded`; the target writes in its own dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from server.store.site.content import ContentItem
from server.store.site.content_demo import demo_items
from server.store.site.receipts import ReceiptData, demo_receipts


class SeedTarget(Protocol):
    """What seeding writes through; runs in the caller's transaction."""

    def add_content(self, items: Iterable[ContentItem], now: float) -> int: ...

    def add_receipts(self, receipts: Iterable[ReceiptData], now: float) -> None:
        """New receipts, their evidence hashes submitted (pending: the hub anchors them at start)."""
        ...


@dataclass(frozen=True, slots=True)
class SeedStep:
    name: str
    run: Callable[[SeedTarget, float], object]


SEED_STEPS: tuple[SeedStep, ...] = (
    SeedStep("demo news and research", lambda t, now: t.add_content(demo_items(now), now)),
    SeedStep("demo receipts and their evidence hashes", lambda t, now: t.add_receipts(demo_receipts(now), now)),
)


def seed(target: SeedTarget, now: float) -> None:
    for step in SEED_STEPS:
        step.run(target, now)
