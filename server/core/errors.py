"""Every error the service can answer with, as data.

An `ApiError` carries its HTTP status and stable problem `code`; adapters and
the app pipeline turn it into an RFC 9457 problem body without knowing which
error it is. WebSocket close codes live here too, as an IntEnum.
"""

from __future__ import annotations

import sys
from enum import IntEnum
from typing import Any

import orjson

# `type` is the relative reference /problems/<code> (RFC 9457 3.1.1 allows a URI reference): it resolves
# against the URL that answered, so it points at this server's own page (server/api/docs/problem_pages.py)
# behind any host, port or proxy; an absolute URL built from the Host header would echo a client-chosen name.
PROBLEM_TYPE_BASE = "/problems/"


def problem_type(code: str) -> str:
    return PROBLEM_TYPE_BASE + code

# code -> (status, title)
ERROR_KINDS: dict[str, tuple[int, str]] = {
    "invalid_parameter": (400, "Invalid parameter"),
    "unknown_parameter": (400, "Unknown parameter"),
    "invalid_body": (400, "Invalid request body"),
    "validation_failed": (400, "Validation failed"),
    "unauthorized": (401, "Unauthorized"),
    "forbidden": (403, "Forbidden"),
    "plan_required": (403, "Plan required"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "bad_handshake": (400, "Invalid WebSocket handshake"),
    "conflict": (409, "Conflict"),
    "request_timeout": (408, "Request timeout"),
    "payload_too_large": (413, "Payload too large"),
    "range_not_satisfiable": (416, "Range not satisfiable"),
    "uri_too_long": (414, "URI too long"),
    "unsupported_media_type": (415, "Unsupported media type"),
    "idempotency_key_reused": (422, "Idempotency key reused"),
    "upgrade_required": (426, "Upgrade required"),
    "rate_limited": (429, "Too many requests"),
    "too_many_connections": (429, "Too many connections"),
    "too_many_uploads": (429, "Too many uploads in progress"),
    "internal_error": (500, "Internal server error"),
    "not_ready": (503, "Service not ready"),
    "shutting_down": (503, "Shutting down"),
    "storage_unavailable": (503, "Storage unavailable"),
}


class ApiError(Exception):
    """An error answered to the client as a problem document."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        errors: list[dict[str, str]] | None = None,
        headers: list[tuple[str, str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.status, self.title = ERROR_KINDS[code]
        self.detail = detail
        self.errors = errors
        self.headers = headers or []
        self.extra = extra or {}

    def problem(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "type": problem_type(self.code),
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if self.errors:
            doc["errors"] = self.errors
        doc.update(self.extra)
        return doc

    def body(self) -> bytes:
        """The problem document as JSON bytes (the HTTP layer makes the response: its status, this body,
        `application/problem+json` and `headers`)."""
        return orjson.dumps(self.problem())


UDF_PREFIX = "/api/v1/udf/"


def udf_fields(error: ApiError) -> ApiError:
    """A problem answered on the TradingView UDF datafeed (SPEC 14) also carries UDF's error fields."""
    if "s" not in error.extra:
        error.extra = {"s": "error", "errmsg": error.detail, **error.extra}
    return error


def field_errors(errors: list[dict[str, str]], detail: str = "The request body is not valid.") -> ApiError:
    return ApiError("validation_failed", detail, errors=errors)


class CloseCode(IntEnum):
    """WebSocket close codes used by /ws/quotes."""

    NORMAL = 1000
    GOING_AWAY = 1001
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    KEY_REVOKED = 4001
    PLAN_CHANGED = 4003
    SLOW_CONSUMER = 4008


class StorageTimeout(TimeoutError):
    """Storage gave no answer within a round's own deadline (`server.core.background.storage_deadline`)."""


def storage_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached or answer (PostgreSQL down, its pool out of connections for
    the pool's wait, or no answer within a round's deadline): the client gets a 503 to retry, not a 500.
    psycopg is only looked up if it is loaded."""
    if isinstance(exc, StorageTimeout):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.OperationalError)
