"""Validation shared by the public-site handlers: strict query integers, e-mail, phone, passwords."""

from __future__ import annotations

import re

from server.api.auth.passwords import MAX_PASSWORD, MIN_PASSWORD
from server.api.core.body import WS_CLASS, Fields
from server.core.errors import ApiError

MAX_EMAIL = 254
_DIGITS = re.compile(r"[0-9]{1,12}")
MAX_PHONE = 32
# Pragmatic: one @, no whitespace or control characters, a dotted domain of letters/digits/hyphens.
# The OpenAPI request schemas (server/api/docs/schemas.py) publish these patterns, anchored and with the whitespace
# the server trims allowed around them. Neither starts or ends with whitespace (so trimming and the pattern agree).
EMAIL_PATTERN = ("[^@" + WS_CLASS + r"\x00-\x1f]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                 "[A-Za-z]{2,63}")
# digits, spaces, parentheses and hyphens after an optional +, from a digit to a digit: 5 to 32 characters
PHONE_PATTERN = r"\+?[0-9][0-9 ()-]{3,29}[0-9]"
_EMAIL = re.compile(EMAIL_PATTERN)
_PHONE = re.compile(PHONE_PATTERN)


def int_params(query: dict[str, str], **specs: tuple[int, int, int]) -> dict[str, int]:
    """Decimal integers by name -> (default, low, high); signs, spaces, fractions and exponents are refused.

    Every bad parameter is named in one 400 answer.
    """
    values: dict[str, int] = {}
    errors: list[dict[str, str]] = []
    for name, (default, low, high) in specs.items():
        raw = query.get(name)
        if raw is None:
            values[name] = default
        elif _DIGITS.fullmatch(raw) and low <= int(raw) <= high:
            values[name] = int(raw)
        else:
            errors.append({"field": name, "message": f"{name} must be an integer from {low} to {high}"})
    if errors:
        raise ApiError("invalid_parameter", "; ".join(e["message"] for e in errors), errors=errors)
    return values


def email(f: Fields, name: str = "email", *, required: bool = True) -> str | None:
    value = f.text(name, required=required, max_len=MAX_EMAIL)
    if value is not None and not _EMAIL.fullmatch(value):
        f.error(name, "must be an e-mail address")
        return None
    return value


def phone(f: Fields, name: str, *, required: bool = False) -> str | None:
    value = f.text(name, required=required, max_len=MAX_PHONE)
    if value is not None and not _PHONE.fullmatch(value):
        f.error(name, "must be a phone number (digits, spaces, +, -, parentheses)")
        return None
    return value


def password(f: Fields, name: str = "password") -> str | None:
    """Passwords are taken verbatim (no trimming)."""
    value = f.data.get(name)
    if value is None:
        f.error(name, "is required")
    elif not isinstance(value, str):
        f.error(name, "must be a string")
    elif len(value) < MIN_PASSWORD:
        f.error(name, f"must be at least {MIN_PASSWORD} characters")
    elif len(value) > MAX_PASSWORD:
        f.error(name, f"must be at most {MAX_PASSWORD} characters")
    else:
        return value
    return None
