"""Who may open /ws/quotes: the handshake decision as a pure function.

A refusal is data: an `ApiError` (status + RFC 9457 problem body) and a
metrics `reason`. The pump turns it into an HTTP response; nothing here
touches a socket. The key travels in the `X-SERVICE-Key` header (non-browser
clients) or in the `key` query parameter (browsers cannot set handshake
headers), so the request target must never be logged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from server.core.errors import ApiError
from server.core.keys import ApiKey

WS_PATH = "/ws/quotes"
INGEST_WS_PATH = "/ws/ingest"  # SPEC 20: a dedicated data source publishes here (ingest keys only; docs/ingest.md)
WS_PATHS = (WS_PATH, INGEST_WS_PATH)
KEY_HEADER = "X-SERVICE-Key"


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str  # metrics label: not_found, missing_key, invalid_key, free_plan, too_many_connections, wrong_scope,
    # plan_required (SPEC 20: /ws/ingest off the enterprise plan)
    error: ApiError


def handshake_key(target: str, header_keys: Sequence[str]) -> str:
    """The key a handshake presents: the X-SERVICE-Key header when sent, else the `key` query parameter.
    Two X-SERVICE-Key headers present no key a server could choose between: "" (refused as missing)."""
    if header_keys:
        return header_keys[0].strip() if len(header_keys) == 1 else ""
    return dict(parse_qsl(urlsplit(target).query, keep_blank_values=True)).get("key", "")


CONSOLE_URL = "/console"


def plan_required(plan: str, what: str, required: str = "professional") -> ApiError:
    """A plan-limited resource refused: say which plan it needs and where to ask for it (SPEC 17)."""
    return ApiError("plan_required", f"{what} needs the {required} plan; this key is on the {plan} plan. "
                                     f"Request an upgrade in the service console at {CONSOLE_URL}.",
                    extra={"requiredPlan": required, "currentPlan": plan, "consoleUrl": CONSOLE_URL})


def decide(
    target: str,
    header_keys: Sequence[str],
    lookup: Callable[[str], ApiKey | None],
    max_conn: dict[str, int],
    open_count: Callable[[str], int],
) -> ApiKey | Refusal:
    """The key to open the session with, or why not."""
    parts = urlsplit(target)
    if parts.path not in WS_PATHS:
        return Refusal("not_found", ApiError("not_found", f"No WebSocket endpoint at {parts.path[:200]}; "
                                                          f"connect to {WS_PATH}?key=KEY."))
    secret = handshake_key(target, header_keys)
    if not secret:
        detail = ("Send one X-SERVICE-Key header, not several." if len(header_keys) > 1 else
                  "Missing key: send it in the X-SERVICE-Key header, or connect to /ws/quotes?key=KEY.")
        return Refusal("missing_key", ApiError("unauthorized", detail))
    key = lookup(secret)
    if key is None:
        return Refusal("invalid_key", ApiError("unauthorized", "Unknown or revoked API key."))
    if (key.scope == "ingest") != (parts.path == INGEST_WS_PATH):  # SPEC 20: an ingest key publishes, reads nothing
        return Refusal("wrong_scope", ApiError("forbidden", "An ingest key publishes (WS /ws/ingest, POST "
                                               "/api/v1/ingest) and reads nothing; stream with a read key."
                                               if key.scope == "ingest" else "/ws/ingest takes an ingest key."))
    if parts.path == INGEST_WS_PATH and key.plan != "enterprise":  # an account moved off the plan keeps its keys
        return Refusal("plan_required", plan_required(key.plan, "Publishing to a dedicated data source (/ws/ingest)",
                                                      "enterprise"))
    limit = max_conn.get(key.plan, 0)
    if limit <= 0:
        return Refusal("free_plan", plan_required(key.plan, "WebSocket streaming (/ws/quotes)"))
    if open_count(key.id) >= limit:
        return Refusal("too_many_connections", ApiError(
            "too_many_connections",
            f"This key already has {limit} open WebSocket connections, the {key.plan} plan's limit.",
            extra={"limit": limit},
        ))
    return key
