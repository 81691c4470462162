"""News and research items: bilingual text, newest first, paged with limit/offset.

An item's id is derived from its kind, title and publication time, so importing
the same file twice does not duplicate anything.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from server.market.timefmt import iso


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
