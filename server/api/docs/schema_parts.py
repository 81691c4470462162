"""The building blocks of the service's JSON Schemas (server/api/docs/schemas.py): references, objects, the
primitive types, and the text and pattern rules every request schema follows (see schemas.py's docstring)."""

from __future__ import annotations

from typing import Any

from server.api.core.body import WS_CLASS
from server.api.core.query import RANGE_TEXT

# a date the API takes (server/api/core/query.py parse_day): YYYY-MM-DD only, within the service's range
DAY_PARAM: dict[str, Any] = {"type": "string", "format": "date", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                             "description": f"YYYY-MM-DD, {RANGE_TEXT}", "examples": ["2026-11-17"]}

S = dict[str, Any]
REF_PREFIX = "#/components/schemas/"


def ref(name: str) -> S:
    return {"$ref": REF_PREFIX + name}


def obj(required: list[str], **props: S) -> S:
    return {"type": "object", "required": required, "properties": props}


def nullable(schema: S, description: str = "optional: absent, null and \"\" all mean not given") -> S:
    return {**schema, "type": [schema["type"], "null"], "description": description}


def anchored(pattern: str) -> str:
    return f"^(?:{pattern})$"


STR: S = {"type": "string"}
NUM: S = {"type": "number"}
INT: S = {"type": "integer"}
BOOL: S = {"type": "boolean"}
TS: S = {"type": "string", "format": "date-time", "description": "ISO 8601 with offset (Asia/Shanghai, +08:00)"}
NULLTS: S = {**TS, "type": ["string", "null"]}
NULLNUM: S = {"type": ["number", "null"]}
HEX64: S = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
WS = f"[{WS_CLASS}]"  # one character the server trims
NOT_BLANK = f"[^{WS_CLASS}]"  # unanchored: at least one character that is not whitespace
NO_NUL = "^[^\x00]*$"  # no NUL (U+0000) anywhere: PostgreSQL cannot store it
TEXT_PARAM: S = {"type": "string", "pattern": NO_NUL}  # a free-text query parameter (query.py known_query)


def text(max_len: int, **extra: Any) -> S:
    """A required string: at most `max_len` characters as sent, no NUL, not blank."""
    return {"type": "string", "minLength": 1, "maxLength": max_len, "pattern": f"^{WS}*[^{WS_CLASS}\x00][^\x00]*$",
            **extra}


def optional_text(max_len: int) -> S:
    return nullable({"type": "string", "maxLength": max_len, "pattern": NO_NUL})


def padded(pattern: str) -> str:
    """`pattern` (which neither starts nor ends with whitespace), with the whitespace the server trims around it."""
    return f"^{WS}*(?:{pattern}){WS}*$"


def optional_pattern(pattern: str, max_len: int, what: str, example: str) -> S:
    """An optional string with a format: empty or blank means not given, anything else must match."""
    return nullable({"type": "string", "maxLength": max_len, "pattern": padded(f"(?:{pattern})?"),
                     "examples": [example]}, f"optional {what}: absent, null, \"\" or blank mean not given")
