"""What every console handler shares: the signed-in account (Bearer JWT), its per-account bucket, the store.

Console routes are `Access.PUBLIC` (the per-IP public bucket); a request whose token is not valid (guessing
tokens) also takes its address's `login` bucket (SPEC 17: the login route's rate), so the console is no cheaper a
way to guess than the login (one without any token is a plain 401); once the token names an enabled account,
that account's own `console` bucket (CONSOLE_RATE per minute) is taken too, as inquiries take theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from server.api.core.types import Request, Response
from server.api.site.accounts import BearerAuth
from server.config import Settings
from server.core.errors import ApiError
from server.market.timefmt import iso
from server.store.accounts.console import Account, ConsoleKey, Event, Subscription, UsageRow
from server.store.accounts.console_store import ConsoleStore

CONSOLE_RATE = 30  # console requests per minute per account
CONSOLE_PATH = "/console"
BucketCheck = Callable[[str, str, int], Any]
ClientIp = Callable[[Request], str]
Revoke = Callable[[set[str]], Awaitable[None]]


class ConsoleContext:
    def __init__(self, settings: Settings, store: ConsoleStore, auth: BearerAuth, check_bucket: BucketCheck,
                 client_ip: ClientIp, clock: Callable[[], float]) -> None:
        self.settings = settings
        self.store = store
        self.auth = auth
        self.check_bucket = check_bucket
        self.client_ip = client_ip
        self.clock = clock

    async def account(self, req: Request) -> Account:
        """The signed-in, enabled account (401/403 as for inquiries), after its console bucket admitted it."""
        try:
            user = await self.auth.user(req)
        except ApiError as exc:
            if exc.code == "unauthorized" and req.headers.get("authorization"):  # a token that is not one:
                self.check_bucket("login", self.client_ip(req), self.settings.login_rate)  # guessing (its 429 wins)
            raise
        self.check_bucket("console", user.id, CONSOLE_RATE)
        account = await self.store.read(lambda r: r.account(user.id))
        if account is None:  # deleted between the two reads
            raise ApiError("unauthorized", "The bearer token names no account here.")
        return account

    async def operator(self, req: Request) -> Account:
        account = await self.account(req)
        if not account.is_operator:
            raise ApiError("forbidden", "This route is for the service's operators.")
        return account

    def rate(self, plan: str, rate: int | None) -> int:
        return self.settings.rate_for(plan, rate)

    def limits(self, account: Account) -> dict[str, int]:
        from server.store.accounts.console import KEY_CAPS

        return {"rate": self.rate(account.plan, account.rate), "keys": KEY_CAPS.get(account.plan, 1),
                "wsConnections": self.settings.ws_max_conn.get(account.plan, 0)}

    def key_view(self, key: ConsoleKey, secret: str | None = None) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": key.id, "label": key.label, "plan": key.plan, "rate": self.rate(key.plan, key.rate),
            "prefix": key.prefix, "createdAt": iso(key.created_at), "lastUsedAt": _iso(key.last_used_at),
            "revokedAt": _iso(key.revoked_at), "scope": key.scope,
        }
        if secret is not None:
            view["key"] = secret
        return view


def account_view(a: Account) -> dict[str, Any]:
    return {"id": a.id, "email": a.email, "name": a.name, "company": a.company, "createdAt": iso(a.created_at)}


def subscription_view(s: Subscription) -> dict[str, Any]:
    return {"id": s.id, "userId": s.user_id, "email": s.user_email, "plan": s.plan, "message": s.message,
            "status": s.status.value, "rate": s.rate, "createdAt": iso(s.created_at), "decidedAt": _iso(s.decided_at)}


def event_view(e: Event) -> dict[str, Any]:
    return {"id": e.id, "at": iso(e.at), "kind": e.kind, "keyId": e.key_id, "detail": e.detail, "ip": e.ip}


def usage_view(u: UsageRow) -> dict[str, Any]:
    return {"date": u.day, "keyId": u.key_id, "requests": u.requests, "refused": u.refused,
            "clientErrors": u.client_errors, "wsConnections": u.ws_connections, "wsMessages": u.ws_messages}


def json_answer(data: Any, status: int = 200) -> Response:
    return Response(status, orjson.dumps(data), "application/json", [("cache-control", "no-store")])


def _iso(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)
