"""Who may open /ws/quotes: the handshake decision as a pure function.

A refusal is data: an `ApiError` (status + RFC 9457 problem body) and a
metrics `reason`. The pump turns it into an HTTP response; nothing here
touches a socket. The key travels in the query string, so the request
target must never be logged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from server.api.errors import ApiError
from server.store.keys import ApiKey

WS_PATH = "/ws/quotes"


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str  # metrics label: not_found, missing_key, invalid_key, free_plan, too_many_connections
    error: ApiError


def decide(
    target: str,
    lookup: Callable[[str], ApiKey | None],
    max_conn: dict[str, int],
    open_count: Callable[[str], int],
) -> ApiKey | Refusal:
    """The key to open the session with, or why not."""
    parts = urlsplit(target)
    if parts.path != WS_PATH:
        return Refusal("not_found", ApiError("not_found", f"No WebSocket endpoint at {parts.path[:200]}; "
                                                          f"connect to {WS_PATH}?key=KEY."))
    secret = dict(parse_qsl(parts.query, keep_blank_values=True)).get("key", "")
    if not secret:
        return Refusal("missing_key", ApiError("unauthorized", "Missing key: connect to /ws/quotes?key=KEY."))
    key = lookup(secret)
    if key is None:
        return Refusal("invalid_key", ApiError("unauthorized", "Unknown or revoked API key."))
    limit = max_conn.get(key.plan, 0)
    if limit <= 0:
        return Refusal("free_plan", ApiError(
            "forbidden", f"The {key.plan} plan has no WebSocket access; it is for professional and enterprise keys."))
    if open_count(key.id) >= limit:
        return Refusal("too_many_connections", ApiError(
            "too_many_connections",
            f"This key already has {limit} open WebSocket connections, the {key.plan} plan's limit.",
            extra={"limit": limit},
        ))
    return key
