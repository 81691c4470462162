"""Schemathesis hooks for tests/contract/test_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

Two rules of SPEC 14 relate query parameters to each other, which an OpenAPI parameter list cannot state:
on /api/v1/kline/{id}, `days` together with `from`/`to` is a 400 (a range query takes `limit`), and so is
`from >= to` (the range is half-open). A "schema-valid request rejected" failure is dropped for exactly
those: a kline request holding both parameters that answered 400 naming `days` (or `to`, the bound the
range check names). SPEC 16 adds two more: a venue calendar spans at most 366 days with `to` not before `from`
(400 naming `to`), and an instrument published once a day or month has no intraday candles (/kline's `interval`,
UDF history's `resolution`: 400 naming it); and SPEC 17's usage range has `from` not after `to` (400 naming
`from`), and SPEC 18's flat-file listing spans at most 366 days with `to` not before `from` (400 naming `to`), as
UDF's time-scale marks have `to` not before `from` (400 naming `to`); SPEC 19's /api/v1/instruments takes
`product` or `symbol`, not both (400 naming `symbol`), and a contract id has the form `{product}-{YYYYMM}` in the
document while only the months the hub shows are known (its listed contracts and those of its 90-day window: 400
naming `ids`, or `symbol` for UDF, as an unknown id); SPEC 20's quality report spans at most 366 days with `to`
not before `from` (400 naming `to`), and the flat-file listing takes a dedicated data source's `source` or a
`venue`, not both (400 naming `source`).
Issue 45: a date, instant or epoch time outside the service's years (server/api/core/query.py RANGE_TEXT, said
in each parameter's description) and a calendar date before the venue's `calendarKnownFrom` are 400s on any path.
Every other combination the document allows must be accepted.
"""

from __future__ import annotations

import json
import re
from typing import Any

import schemathesis

from server.api.core.query import RANGE_TEXT

KLINE = "/api/v1/kline/{id}"
CALENDAR = "/api/v1/venues/{id}/calendar"
UDF_HISTORY = "/api/v1/udf/history"
UDF_MARKS = "/api/v1/udf/timescale_marks"  # SPEC 14: to not before from
USAGE = "/api/console/usage"  # SPEC 17: from must not be after to
FLATFILES = "/api/v1/flatfiles"  # SPEC 18: at most 366 days, to not before from
QUALITY = "/api/v1/quality"  # SPEC 20: at most 366 days, to not before from
INSTRUMENTS = "/api/v1/instruments"  # SPEC 19: product or symbol, not both
PUBLISHED = "published once a"
CONTRACT_MONTH = re.compile(r"-[0-9]{6}\b")  # a contract id in a detail  # the detail of SPEC 16's daily-only refusal


@schemathesis.hook
def filter_failure(ctx: Any, failure: Any, case: Any, response: Any) -> bool:
    """True keeps the failure."""
    path = getattr(case.operation, "path", None)
    if response.status_code != 400 or "rejected" not in str(getattr(failure, "title", "")).lower():  # ST202 only
        return True
    query = case.query or {}
    try:
        problem = json.loads(response.content)
        named = {e["field"] for e in problem.get("errors", [])}
    except (ValueError, AttributeError, TypeError):
        return True
    detail = str(problem.get("detail", ""))
    if RANGE_TEXT in detail or "calendarKnownFrom" in detail:
        return False  # out of the service's years, or before the venue's calendar (issue 45)
    if named <= {"ids", "symbol"} and CONTRACT_MONTH.search(detail) and "nknown" in detail:
        return False  # a contract month the hub does not show (SPEC 19)
    if path not in (KLINE, CALENDAR, UDF_HISTORY, UDF_MARKS, USAGE, FLATFILES, QUALITY, INSTRUMENTS):
        return True
    if PUBLISHED in problem.get("detail", "") and named in ({"interval"}, {"resolution"}):
        return False  # an intraday interval of a once-a-day publication
    if path == FLATFILES and "source" in query and "venue" in query and named == {"source"}:
        return False  # SPEC 20: a dedicated data source's files or a venue's, not both
    if path in (CALENDAR, FLATFILES, QUALITY, UDF_MARKS):
        return named != {"to"}  # the span or the order of from and to
    if path == USAGE:
        return not ("from" in query and "to" in query and named == {"from"})
    if path == UDF_HISTORY:
        return True
    if path == INSTRUMENTS:
        return not ("product" in query and "symbol" in query and named == {"symbol"})
    if "days" in query and ("from" in query or "to" in query) and named == {"days"}:
        return False
    return not ("from" in query and "to" in query and named == {"to"})


@schemathesis.serializer("application/x-ndjson", "application/jsonl", "application/json-lines")
def json_lines(ctx: Any, value: Any) -> bytes:
    """SPEC 20's ingest route takes JSON lines (docs/ingest.md): a generated body (a string, as the document says) is
    sent as its UTF-8 bytes; anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text.encode("utf-8", "surrogatepass")
