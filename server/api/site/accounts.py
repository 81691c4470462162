"""Site accounts: `POST /api/auth/register`, `POST /api/auth/login`, and Bearer authentication.

Password hashing and verification run in worker threads (at most `MAX_HASHING`
at once, each takes 64 MiB), never on the event loop. A login for an unknown
e-mail still verifies a password against a dummy hash, so both wrong answers
take the same time and read the same.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

from server.api.auth.passwords import MAX_PASSWORD, TimingShield, hash_password, needs_rehash, verify_password
from server.api.auth.tokens import TokenError, TokenService
from server.api.core.body import Fields, json_object
from server.api.core.pipeline import json_response
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.site import fields as site_fields
from server.core.errors import ApiError
from server.core.login_throttle import LOCK_AFTER, LOCK_S
from server.engine import LoginFailures
from server.store.accounts.console_repo import mail_owner
from server.store.accounts.console_store import ConsoleStore
from server.store.accounts.users import DuplicateEmail, User
from server.store.sql.repositories import Users

MAX_HASHING = 2
REALM = 'Bearer realm="market"'


def unauthorized(detail: str, error: str | None = "invalid_token") -> ApiError:
    challenge = REALM if error is None else f'{REALM}, error="{error}"'
    return ApiError("unauthorized", detail, headers=[("www-authenticate", challenge)])


class Accounts:
    def __init__(self, users: Users, tokens: TokenService, throttle: LoginFailures,
                 tell_owner: Callable[[User], Awaitable[None]] | None = None) -> None:
        """`throttle`: failed logins per account (issue 45), beside the per-address login bucket; `tell_owner`:
        e-mails an account's owner that it was locked (through the outbox; None without a mail server)."""
        self.users = users
        self.tokens = tokens
        self.throttle = throttle
        self.tell_owner = tell_owner
        self._hashing = asyncio.Semaphore(MAX_HASHING)
        self._shield = TimingShield()

    def register(self, router: Router) -> None:
        router.add("POST", "/api/auth/register", self.register_user, Access.PUBLIC, name="auth_register")
        router.add("POST", "/api/auth/login", self.login, Access.PUBLIC, name="auth_login", bucket="login")

    async def register_user(self, req: Request) -> Response:
        f = Fields(json_object(req))
        email = site_fields.email(f)
        password = site_fields.password(f)
        name = f.text("name", required=False, max_len=100)
        company = f.text("company", required=False, max_len=200)
        f.only("email", "password", "name", "company")
        f.check()
        assert email is not None and password is not None
        if await self.users.by_email(email) is not None:  # cheap early answer; the UNIQUE index decides races
            raise _duplicate()
        async with self._hashing:
            hashed = await asyncio.to_thread(hash_password, password)
        try:
            user = await self.users.create(email, hashed, name, company)
        except DuplicateEmail:
            raise _duplicate() from None
        return json_response({"id": user.id, "email": user.email}, 201)

    async def login(self, req: Request) -> Response:
        f = Fields(json_object(req))
        email = f.text("email", max_len=site_fields.MAX_EMAIL)
        password = f.data.get("password")
        if password is None:
            f.error("password", "is required")
        elif not isinstance(password, str):
            f.error("password", "must be a string")
        f.check()
        assert email is not None and isinstance(password, str)
        account = email.lower()
        if await self.throttle.wait_s(account) > 0:  # not even checked: a right password is refused alike
            await self._failed(account, None)
            raise _throttled(await self.throttle.wait_s(account))
        user = await self.users.by_email(email)
        async with self._hashing:
            ok = await asyncio.to_thread(self._verify, user, password)
        if not ok or user is None:
            await self._failed(account, user)
            raise unauthorized("Wrong e-mail or password.", error=None)
        await self.throttle.succeeded(account)
        if user.disabled:
            raise ApiError("forbidden", "This account is disabled.")
        await self._upgrade_hash(user, password)
        token = self.tokens.issue(user.id, user.email)
        # a bearer token is a credential: no cache (the browser's, a proxy's) may keep it (RFC 6749 5.1)
        return json_response({"token": token, "tokenType": "Bearer", "expiresIn": self.tokens.ttl_s},
                             headers=[("cache-control", "no-store")])

    async def _failed(self, account: str, user: User | None) -> None:
        """Count a failed login; the one that locks a known account e-mails its owner."""
        if await self.throttle.failed(account) and self.tell_owner is not None:
            user = user or await self.users.by_email(account)
            if user is not None:
                await self.tell_owner(user)

    def _verify(self, user: User | None, password: str) -> bool:
        if user is None or len(password) > MAX_PASSWORD:
            self._shield.burn(password[:MAX_PASSWORD])
            return False
        return verify_password(user.password_hash, password)

    async def _upgrade_hash(self, user: User, password: str) -> None:
        """Re-hash with the current cost parameters after they were raised."""
        if needs_rehash(user.password_hash):
            async with self._hashing:
                hashed = await asyncio.to_thread(hash_password, password)
            await self.users.set_password_hash(user.id, hashed)


def lockout_mail(store: ConsoleStore, wake: Callable[[], None],
                 clock: Callable[[], float]) -> Callable[[User], Awaitable[None]]:
    """Accounts' `tell_owner`: one outbox job e-mailing the owner of a locked account (the worker delivers it)."""
    async def tell(user: User) -> None:
        payload = {"userEmail": user.email, "message": (
            f"{LOCK_AFTER} failed sign-ins in a row: this account is locked for {LOCK_S / 60:.0f} minutes. If "
            "that was not you, someone is guessing your password: choose a new one. "
            f"连续 {LOCK_AFTER} 次登录失败，账户已锁定 {LOCK_S / 60:.0f} 分钟。")}
        await store.write(lambda r: mail_owner(r, "login_locked", user.id, user.email, payload, clock()))
        wake()
    return tell


def _throttled(wait_s: float) -> ApiError:
    retry = max(1, math.ceil(wait_s))
    return ApiError("rate_limited", f"Too many failed logins for this account: retry in {retry} s.",
                    headers=[("retry-after", str(retry))], extra={"retryAfter": retry})


def _duplicate() -> ApiError:
    return ApiError("conflict", "An account with this e-mail address already exists.")


class BearerAuth:
    """Resolves `Authorization: Bearer <JWT>` to an enabled account: 401 for any token problem, 403 if disabled.

    Our HS256 tokens name the account id in `sub`; an external identity provider's
    tokens are matched to a local account by their `email` claim.
    """

    def __init__(self, tokens: TokenService, users: Users) -> None:
        self.tokens = tokens
        self.users = users

    async def user(self, req: Request) -> User:
        header = req.headers.get("authorization")
        if not header:
            raise unauthorized("A bearer token is required.", error=None)
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise unauthorized("The Authorization header must be 'Bearer <token>'.", error="invalid_request")
        try:
            claims = self.tokens.verify(token.strip())
        except TokenError as exc:
            raise unauthorized(f"The bearer token was refused: {exc}.") from None
        if claims.external:
            user = await self.users.by_email(claims.email) if claims.email else None
        else:
            user = await self.users.by_id(claims.subject)
        if user is None:
            raise unauthorized("The bearer token names no account here.")
        if user.disabled:
            raise ApiError("forbidden", "This account is disabled.")
        return user
