"""An operator's decision on a subscription request: approve (enterprise: with `rate`) or reject."""

from __future__ import annotations

from server.api.console.context import ConsoleContext, json_answer, subscription_view
from server.api.core.body import Fields, json_object
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.core.limits import MAX_RATE
from server.store.accounts.console import Account, NotPending


async def decide_request(ctx: ConsoleContext, req: Request, operator: Account, approve: bool) -> Response:
    sub_id = req.path_params["id"]
    body = json_object(req) if req.body.strip() else {}
    rate = _rate(body)
    if not approve and rate is not None:
        raise ApiError("validation_failed", "rate: is only for an approval",
                       errors=[{"field": "rate", "message": "is only for an approval"}])
    found = await ctx.store.read(lambda r: r.plans.get(sub_id))
    if found is None:
        raise ApiError("not_found", f"No subscription request {sub_id[:64]}.")
    if approve and found.plan == "enterprise" and rate is None:
        raise ApiError("validation_failed", "rate: is required to approve an enterprise plan",
                       errors=[{"field": "rate", "message": "is required for the enterprise plan"}])
    if approve and found.plan != "enterprise" and rate is not None:
        raise ApiError("validation_failed", "rate: is only for the enterprise plan",
                       errors=[{"field": "rate", "message": "is only for the enterprise plan"}])
    now = ctx.clock()
    try:
        sub = await ctx.store.write(lambda r: r.plans.decide(sub_id, approve, rate, operator.email, now))
    except NotPending as exc:
        raise ApiError("conflict", f"This request was {exc} already.") from None
    if sub is None:
        raise ApiError("not_found", f"No subscription request {sub_id[:64]}.")
    return json_answer(subscription_view(sub))


def _rate(body: dict[str, object]) -> int | None:
    f = Fields(body)
    value = body.get("rate")
    f.only("rate")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_RATE):
        f.error("rate", f"must be a whole number of requests per minute, 1 to {MAX_RATE}")
    f.check()
    return value if isinstance(value, int) else None
