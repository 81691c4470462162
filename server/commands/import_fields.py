"""Validating operator import files: every item is checked and every bad one reported by index.

Messages name the item and field, never the value (a receipt's holder must not
reach a terminal or a log).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from server.api.core.body import Fields
from server.market.timefmt import TZ
from server.store.site.content import Localised

T = TypeVar("T")
MAX_REPORTED = 50
EARLIEST = 946684800.0  # 2000-01-01T00:00:00Z
LATEST = 4102444800.0  # 2100-01-01T00:00:00Z


def timestamp(f: Fields, name: str, *, required: bool = True) -> float | None:
    """ISO 8601 date or date-time; without an offset it is Asia/Shanghai time."""
    value = f.data.get(name)
    if value is None:
        if required:
            f.error(name, "is required")
        return None
    if not isinstance(value, str):
        f.error(name, "must be an ISO 8601 date-time string")
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        f.error(name, "must be an ISO 8601 date-time, e.g. 2026-03-01T09:30:00+08:00")
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=TZ)
    if not EARLIEST <= parsed.timestamp() < LATEST:
        f.error(name, "must be between the years 2000 and 2099")
        return None
    return parsed.timestamp()


def localised(f: Fields, name: str, max_len: int) -> Localised | None:
    """`{"zh": ..., "en": ...}` (both non-empty) or a plain string used for both languages."""
    value = f.data.get(name)
    if isinstance(value, dict):
        inner = Fields(value)
        zh = inner.text("zh", max_len=max_len)
        en = inner.text("en", max_len=max_len)
        for err in inner.errors:
            f.error(f"{name}.{err['field']}", err["message"])
        return Localised(zh, en) if zh and en else None
    text = f.text(name, max_len=max_len)
    if value is not None and not isinstance(value, str):
        f.errors[-1]["message"] = "must be a string or an object {zh, en}"
    return Localised(text, text) if text else None


def string_list(f: Fields, name: str, *, max_items: int = 20, max_len: int = 50) -> tuple[str, ...]:
    value = f.data.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > max_items:
        f.error(name, f"must be a list of at most {max_items} strings")
        return ()
    if not all(isinstance(v, str) and 0 < len(v.strip()) <= max_len for v in value):
        f.error(name, f"every entry must be a non-empty string of at most {max_len} characters")
        return ()
    return tuple(v.strip() for v in value)


def parse_items(data: Any, parse: Callable[[Fields], T | None]) -> tuple[list[T], list[str]]:
    """Apply `parse` to every object of a JSON list; errors read "item 3: field: message"."""
    if not isinstance(data, list):
        return [], ["the file must contain a JSON list of objects"]
    items: list[T] = []
    errors: list[str] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, dict):
            errors.append(f"item {index}: must be a JSON object")
            continue
        f = Fields(raw)
        item = parse(f)
        if f.errors or item is None:
            errors.extend(f"item {index}: {e['field']}: {e['message']}" for e in f.errors)
            continue
        items.append(item)
    return items, errors


def report(errors: list[str], total: int) -> str:
    shown = errors[:MAX_REPORTED]
    more = f"\n  ... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
    return f"{len(errors)} problem(s) in {total} item(s); nothing was imported:\n  " + "\n  ".join(shown) + more
