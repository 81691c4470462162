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


class Fields:
    """Collects field errors so one response names every bad field at once."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.errors: list[dict[str, str]] = []

    def error(self, field: str, message: str) -> None:
        self.errors.append({"field": field, "message": message})

    def text(self, name: str, *, required: bool = True, max_len: int = 200, min_len: int = 0) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                self.error(name, "is required")
            return None
        if not isinstance(value, str):
            self.error(name, "must be a string")
            return None
        value = value.strip()
        if required and not value:
            self.error(name, "must not be empty")
        elif len(value) > max_len:
            self.error(name, f"must be at most {max_len} characters")
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
