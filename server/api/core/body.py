"""Reading JSON request bodies and validating their fields, with per-field errors."""

from __future__ import annotations

from typing import Any

import orjson

from server.api.core.types import Request
from server.core.errors import ApiError, field_errors


def json_object(req: Request) -> dict[str, Any]:
    """The body as a JSON object: 415 for a non-JSON content type, 400 for anything but an object."""
    ctype = (req.headers.get("content-type") or "").split(";")[0].strip().lower()
    if ctype and ctype != "application/json" and not ctype.endswith("+json"):
        raise ApiError("unsupported_media_type", "Send the body as application/json.")
    try:
        data = orjson.loads(req.body)
    except orjson.JSONDecodeError:
        raise ApiError("invalid_body", "The body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise ApiError("invalid_body", "The body must be a JSON object.")
    return data


# The whitespace a text field is trimmed of, and what a published pattern calls whitespace: the characters that
# Python's str.isspace, ECMAScript's \s and the regex crates' \s all count as whitespace, spelled out. A published
# pattern never uses \s itself: it means a different set in each validator a client may use (\x1c-\x1f and \x85
# for Python, U+FEFF for ECMAScript), and the schema and the server would disagree on those.
WHITESPACE = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
WS_CLASS = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"  # for a regex [...]: literal chars
NUL = "\x00"  # text that holds it cannot be stored in PostgreSQL: refused on every backend alike


def trimmed(value: str) -> str:
    return value.strip(WHITESPACE)


class Fields:
    """Collects field errors so one response names every bad field at once.

    A text field: a string of at most `max_len` characters as sent (the OpenAPI maxLength), without NUL
    (U+0000: PostgreSQL cannot store it, and SQLite would; refused alike on both), trimmed of WHITESPACE;
    required means not empty once trimmed, optional means empty or blank is not given."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.errors: list[dict[str, str]] = []

    def error(self, field: str, message: str) -> None:
        self.errors.append({"field": field, "message": message})

    def only(self, *names: str) -> None:
        """Names every field of the body this request does not define (an ignored field misleads)."""
        for name in sorted(set(self.data) - set(names)):
            self.error(name, "is not a field of this request")

    def text(self, name: str, *, required: bool = True, max_len: int = 200, min_len: int = 0) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                self.error(name, "is required")
            return None
        if not isinstance(value, str):
            self.error(name, "must be a string")
            return None
        if NUL in value:
            self.error(name, "must not contain the NUL character (U+0000)")
            return None
        if len(value) > max_len:
            self.error(name, f"must be at most {max_len} characters")
            return None
        value = trimmed(value)
        if required and not value:
            self.error(name, "must not be empty")
        elif len(value) < min_len:
            self.error(name, f"must be at least {min_len} characters")
        else:
            return value or None
        return None

    def number(self, name: str, *, required: bool = True, positive: bool = False) -> float | None:
        value = self.data.get(name)
        if value is None:
            if required:
                self.error(name, "is required")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(name, "must be a number")
            return None
        if positive and not value > 0:
            self.error(name, "must be greater than 0")
            return None
        return float(value)

    def choice(self, name: str, allowed: tuple[str, ...], *, default: str | None = None) -> str | None:
        value = self.data.get(name)
        if value is None:
            return default
        if value not in allowed:
            self.error(name, f"must be one of {', '.join(allowed)}")
            return None
        return str(value)

    def check(self) -> None:
        if self.errors:
            raise field_errors(self.errors)
