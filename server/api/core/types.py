"""Framework-neutral HTTP values.

Runtime adapters (server/http/) build a `Request` from whatever their server
hands them and write the returned `Response` back. Handlers never see a
framework object, so both runtimes run the same code and pass the same tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl

from server.core.errors import ApiError


class Headers(Protocol):
    """Read access to request headers by lower-case name (a dict, or a runtime's own header map)."""

    def get(self, key: str, default: Any = None) -> Any: ...


@dataclass(slots=True)
class Request:
    method: str
    path: str  # percent-decoded, as Granian's RSGI scope gives it
    query_string: str = ""  # raw
    # looked up by lower-case name; adapters pass their runtime's header map when it allows that
    headers: Headers = field(default_factory=dict)  # type: ignore[assignment]
    body: bytes = b""
    client_ip: str = ""
    # filled by the router
    path_params: dict[str, str] = field(default_factory=dict)
    # set by the pipeline after authentication (an ApiKey for keyed routes)
    auth: Any = None
    # the matched route's name once routing found one (the metrics label of a refusal after routing)
    route_name: str = "unmatched"
    _query: dict[str, str] | None = None

    @property
    def query(self) -> dict[str, str]:
        """Query parameters; the last value wins for a repeated name. A pair with neither name nor value (`?=`) is
        no parameter, as on Robyn, which gives `?=` and `?&&` alike as ("", "") and drops them (robyn_app.py)."""
        if self._query is None:
            pairs = parse_qsl(self.query_string, keep_blank_values=True) if self.query_string else ()
            self._query = {k: v for k, v in pairs if k or v}
        return self._query

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    @property
    def owner(self) -> str | None:
        """The account of the request's key: whose declared instruments it sees (SPEC 20); None: nobody's."""
        return getattr(self.auth, "owner", None)


@dataclass(frozen=True, slots=True)
class FileBody:
    """A body the runtime streams from a file: `length` bytes from `start` (a flat file, SPEC 18). The response's
    headers carry its Content-Length; the adapter reads the file in bounded pieces, never into memory whole."""

    path: str
    start: int
    length: int


@dataclass(slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)
    file: FileBody | None = None  # when set, the body is this file's bytes (`body` stays empty)

    def all_headers(self) -> list[tuple[str, str]]:
        if self.content_type is None:
            return self.headers
        return [("content-type", self.content_type), *self.headers]


def problem_response(error: ApiError) -> Response:
    """An `ApiError` as its RFC 9457 problem response (the error knows its status; this layer, the response)."""
    return Response(error.status, error.body(), "application/problem+json", list(error.headers))
