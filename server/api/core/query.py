"""Query parameters of the /api/v1 endpoints: one rule for all of them (keyed market data and the UDF datafeed)."""

from __future__ import annotations

from server.api.core.types import Request
from server.core.errors import ApiError


def known_query(req: Request, allowed: frozenset[str]) -> dict[str, str]:
    """The query parameters; 400 ``unknown_parameter`` naming those the endpoint does not define."""
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
    return query


def param_error(field: str, message: str) -> ApiError:
    """400 ``invalid_parameter`` naming the query parameter ``field``."""
    return ApiError("invalid_parameter", message, errors=[{"field": field, "message": message}])
