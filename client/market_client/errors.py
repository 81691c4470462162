"""Errors: every problem document (RFC 9457) the server answers becomes a typed exception.

One class per status family, chosen by ``status``; each carries the problem's
``type``, ``title``, ``status``, ``detail``, ``code``, the validation ``errors``
and the raw document (``problem``). Catch ``ProblemError`` for any refusal,
``MarketError`` for anything this package raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MarketError(Exception):
    """Base of every error this package raises."""


class TransportError(MarketError):
    """The server could not be reached, or the connection broke mid-request."""


class ChecksumMismatch(MarketError):
    """A downloaded flat file's sha256 is not the one the listing names (the partial file was deleted)."""


class ProblemError(MarketError):
    """An HTTP error answer (or a refused WebSocket handshake) with its problem document."""

    def __init__(self, problem: Mapping[str, Any], status: int, headers: Mapping[str, str] | None = None) -> None:
        self.problem: dict[str, Any] = dict(problem)
        self.status = status
        self.type: str = str(problem.get("type", "about:blank"))
        self.title: str = str(problem.get("title", ""))
        self.detail: str = str(problem.get("detail", ""))
        self.code: str = str(problem.get("code", ""))
        raw_errors = problem.get("errors")
        self.errors: list[dict[str, str]] = list(raw_errors) if isinstance(raw_errors, list) else []
        self.headers: dict[str, str] = dict(headers or {})
        super().__init__(f"{status} {self.code or self.title}: {self.detail}".rstrip(": "))


class BadRequest(ProblemError):
    """400: invalid_parameter, unknown_parameter, validation_failed, invalid_body, ..."""


class Unauthorized(ProblemError):
    """401: missing, unknown or revoked key; bad or expired token; wrong credentials."""


class Forbidden(ProblemError):
    """403: e.g. the free plan on the WebSocket, a disabled account."""


class NotFound(ProblemError):
    """404: unknown instrument, category, receipt, hash or path."""


class MethodNotAllowed(ProblemError):
    """405."""


class Conflict(ProblemError):
    """409: e.g. an e-mail address already registered."""


class PayloadTooLarge(ProblemError):
    """413."""


class UnsupportedMediaType(ProblemError):
    """415."""


class RateLimited(ProblemError):
    """429 after the client's retries ran out (or the wait was longer than it may wait)."""

    @property
    def retry_after(self) -> float:
        return retry_after_seconds(self.headers, self.problem) or 1.0


class ServerError(ProblemError):
    """5xx: internal_error, not_ready, shutting_down, ..."""


_BY_STATUS: dict[int, type[ProblemError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 413: PayloadTooLarge, 415: UnsupportedMediaType, 429: RateLimited,
}


def problem_error(status: int, problem: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> ProblemError:
    """The exception for an error answer: by status, 5xx all ServerError, any other ProblemError."""
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ProblemError)
    return cls(problem, status, headers)


def retry_after_seconds(headers: Mapping[str, str], problem: Mapping[str, Any] | None = None) -> float | None:
    """Seconds to wait from `Retry-After` (integer seconds; an HTTP date is not used by this server),
    else the problem's `retryAfter`; None when neither says."""
    raw = headers.get("retry-after") or headers.get("Retry-After")
    for value in (raw, (problem or {}).get("retryAfter")):
        try:
            seconds = float(value) if value is not None else None
        except (TypeError, ValueError):
            continue
        if seconds is not None and seconds >= 0:
            return seconds
    return None


class StreamError(MarketError):
    """The stream cannot go on: the server rejected the subscription, closed for a reason that
    reconnecting cannot fix (revoked key 4001, policy 1008/1009), or reconnects ran out."""

    def __init__(self, message: str, code: str | int | None = None) -> None:
        super().__init__(message)
        self.code = code
