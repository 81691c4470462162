"""Query parameters of every route: one rule for all of them (docs/input-rules.md).

- A route names the parameters it defines; any other is a 400 ``unknown_parameter`` naming it.
- Dates, instants and numbers are read here and nowhere else, in their canonical forms only, and checked against
  the service's range (FIRST_DAY..LAST_DAY) before any calendar or storage call sees them:
  a date is ``YYYY-MM-DD``; an instant is ISO 8601 with an offset (or Z), a date (00:00 Asia/Shanghai) or
  integer epoch milliseconds; UDF's times are integer epoch seconds; a count is plain decimal digits.
  Anything else is a 400 ``invalid_parameter`` naming the field and what it takes.
- A text parameter never holds NUL (U+0000): PostgreSQL cannot store it.

The last day is 9999-12-30, not 9999-12-31: a night session, a venue's offset or the next day's open of the last
day would fall in year 10000, which no date type holds.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from server.api.core.types import Request
from server.core.errors import ApiError
from server.market.timefmt import day_start

FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(9999, 12, 30)
FIRST_S = 0
LAST_S = int(datetime(LAST_DAY.year, LAST_DAY.month, LAST_DAY.day, tzinfo=UTC).timestamp())  # 9999-12-30T00:00Z
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTEGER = re.compile(r"[0-9]{1,16}")
# ISO 8601 with an offset in its extended form: date, T, hh:mm[:ss[.fraction]], then Z or +hh[:mm] (a space for
# the + of an unencoded query string); the OpenAPI document publishes the same pattern (INSTANT_PATTERN)
TIMESTAMP = (r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?"
             r"([Zz]|[+ -][0-9]{2}(:?[0-9]{2})?)")
INSTANT_PATTERN = r"^\s*([0-9]{1,16}|[0-9]{4}-[0-9]{2}-[0-9]{2}|" + TIMESTAMP + r")\s*$"
_TIMESTAMP = re.compile(TIMESTAMP)
# "+08:00" sent unencoded in a query string arrives as " 08:00" (a "+" is a space in a query): read it as meant
_SPACE_OFFSET = re.compile(r"^(.*[0-9]) ([0-9]{2}(?::?[0-9]{2})?)$")
RANGE_TEXT = f"from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}"


def known_query(req: Request, allowed: frozenset[str]) -> dict[str, str]:
    """The query parameters; 400 ``unknown_parameter`` naming those the endpoint does not define, 400
    ``invalid_parameter`` for a value holding NUL."""
    query = req.query
    if not query:  # no query string: nothing parsed, nothing to check
        return query
    unknown = sorted(name for name in query if name not in allowed)  # one order on both runtimes
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        plural = "s" if len(unknown) > 1 else ""
        takes = f"takes only {', '.join(sorted(allowed))}" if allowed else "takes no query parameters"
        message = "not a parameter of this endpoint"
        raise ApiError("unknown_parameter", f"Unknown query parameter{plural} {names}: this endpoint {takes}.",
                       errors=[{"field": name, "message": message} for name in unknown])
    for name, value in query.items():
        if "\x00" in value:
            raise param_error(name, f"{name} must not contain the NUL character (U+0000)")
    return query


def param_error(field: str, message: str) -> ApiError:
    """The 400 of one bad parameter: ``invalid_parameter`` with the field named in ``errors``."""
    return ApiError("invalid_parameter", message, errors=[{"field": field, "message": message}])


def parse_day(field: str, raw: str) -> date:
    """A date: exactly ``YYYY-MM-DD`` (no week dates, no ordinals, no suffix), FIRST_DAY..LAST_DAY."""
    try:
        if not _DATE.fullmatch(raw):
            raise ValueError(raw)
        day = date.fromisoformat(raw)
    except ValueError:
        raise param_error(field, f"{field} must be a date YYYY-MM-DD") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise param_error(field, f"{field} must be a date {RANGE_TEXT}")
    return day


def parse_day_range(query: dict[str, str], today: date, default_days: int, max_days: int,
                    what: str) -> tuple[date, date]:
    """`from` and `to` of a listing by day: `to` defaults to `today`, `from` to `default_days` before `to`; `to` not
    before `from` and at most `max_days` days, both counted (else a 400 naming `to`; `what` names the listing)."""
    end = _optional_day(query, "to") or today
    start = _optional_day(query, "from") or end - timedelta(days=default_days)
    if end < start:
        raise param_error("to", "to is before from")
    if (end - start).days + 1 > max_days:
        raise param_error("to", f"{what} spans at most {max_days} days (from and to both included)")
    return start, end


def _optional_day(query: dict[str, str], field: str) -> date | None:
    raw = query.get(field)
    return None if raw is None else parse_day(field, raw)


def parse_instant(field: str, raw: str) -> float:
    """A range bound (SPEC 14) as epoch seconds: integer epoch milliseconds, a date YYYY-MM-DD (00:00
    Asia/Shanghai), or an ISO 8601 timestamp with an offset (or Z), FIRST_DAY..LAST_DAY; else a 400 naming it."""
    text = raw.strip()
    expected = (f"{field} must be an ISO 8601 timestamp with offset (2026-11-18T10:30:00+08:00), a date "
                f"(YYYY-MM-DD, 00:00 Asia/Shanghai) or integer epoch milliseconds, {RANGE_TEXT}")
    if _INTEGER.fullmatch(text):
        return _in_range(field, int(text) / 1000.0, expected)
    if _DATE.fullmatch(text):
        return day_start(parse_day(field, text))
    spaced = _SPACE_OFFSET.match(text)
    if spaced:
        text = f"{spaced.group(1)}+{spaced.group(2)}"
    if not _TIMESTAMP.fullmatch(text):
        raise param_error(field, expected)
    try:
        parsed = datetime.fromisoformat(text)
    except (ValueError, OverflowError):
        raise param_error(field, expected) from None
    if not FIRST_DAY <= parsed.date() <= LAST_DAY:
        raise param_error(field, expected)
    return _in_range(field, parsed.timestamp(), expected)


def parse_epoch_seconds(field: str, raw: str) -> int:
    """UDF's times: integer epoch seconds, FIRST_DAY..LAST_DAY."""
    text = raw.strip()
    message = f"{field} must be integer epoch seconds, {RANGE_TEXT}"
    if not _INTEGER.fullmatch(text):
        raise param_error(field, message)
    return int(_in_range(field, int(text), message))


def parse_count(field: str, raw: str | None, maximum: int, default: int) -> int:
    """A count: plain decimal digits, 1..maximum; ``default`` when not given."""
    if raw is None:
        return default
    if not _INTEGER.fullmatch(raw) or not 1 <= int(raw) <= maximum:
        raise param_error(field, f"{field} must be an integer from 1 to {maximum}")
    return int(raw)


def _in_range(field: str, seconds: float, message: str) -> float:
    if not FIRST_S <= seconds < LAST_S:
        raise param_error(field, message)
    return seconds
