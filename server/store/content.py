"""News and research items: bilingual text, newest first, paged with limit/offset.

An item's id is derived from its kind, title and publication time, so importing
the same file twice does not duplicate anything.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from server.market.timefmt import iso
from server.store.sqlite_tx import transaction


class ContentKind(StrEnum):
    NEWS = "news"
    RESEARCH = "research"


@dataclass(frozen=True, slots=True)
class Localised:
    zh: str
    en: str

    def view(self) -> dict[str, str]:
        return {"zh": self.zh, "en": self.en}


@dataclass(frozen=True, slots=True)
class ContentItem:
    kind: ContentKind
    title: Localised
    summary: Localised
    published_at: float
    source: str | None = None
    author: str | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        key = orjson.dumps([self.kind.value, self.title.zh, self.title.en, round(self.published_at, 3)])
        prefix = "news" if self.kind is ContentKind.NEWS else "rsch"
        return f"{prefix}_{hashlib.sha256(key).hexdigest()[:16]}"


CONTENT_COLUMNS = ("id, kind, title_zh, title_en, summary_zh, summary_en, source, author, category, published_at, "
            "tags, created_at")


def content_values(item: ContentItem, now: float) -> tuple[Any, ...]:
    """An item as the values of CONTENT_COLUMNS."""
    return (item.id, item.kind.value, item.title.zh, item.title.en, item.summary.zh, item.summary.en,
            item.source, item.author, item.category, item.published_at, orjson.dumps(list(item.tags)).decode(), now)


IMPORT_CHUNK = 1000  # items per write transaction: a live server keeps writing between chunks


def item_view(row: Any) -> dict[str, Any]:
    """The API shape of one row; research items add author and category."""
    out: dict[str, Any] = {
        "id": row["id"],
        "title": {"zh": row["title_zh"], "en": row["title_en"]},
        "summary": {"zh": row["summary_zh"], "en": row["summary_en"]},
        "source": row["source"],
        "publishedAt": iso(row["published_at"]),
        "tags": orjson.loads(row["tags"]),
    }
    if row["kind"] == ContentKind.RESEARCH.value:
        out["author"] = row["author"]
        out["category"] = row["category"]
    return out


class ContentRepo:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def page(self, kind: ContentKind, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Items newest first (ties by id) and the total count of that kind."""
        rows = self.conn.execute(
            f"SELECT {CONTENT_COLUMNS} FROM content_items WHERE kind = ? "
            "ORDER BY published_at DESC, id DESC LIMIT ? OFFSET ?",
            (kind.value, limit, offset),
        ).fetchall()
        (total,) = self.conn.execute("SELECT COUNT(*) FROM content_items WHERE kind = ?", (kind.value,)).fetchone()
        return [item_view(r) for r in rows], int(total)

    def add_many(self, items: Iterable[ContentItem], now: float | None = None) -> int:
        """Insert items not yet present (same id); returns how many were new. Caller owns the transaction."""
        now = time.time() if now is None else now
        added = 0
        for item in items:
            cur = self.conn.execute(
                f"INSERT OR IGNORE INTO content_items ({CONTENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                content_values(item, now),
            )
            added += cur.rowcount
        return added

    def import_items(self, items: list[ContentItem], chunk: int = IMPORT_CHUNK) -> int:
        """`add_many` in transactions of `chunk` items; returns how many were new."""
        added = 0
        for start in range(0, len(items), chunk):
            with transaction(self.conn):
                added += self.add_many(items[start:start + chunk])
        return added

