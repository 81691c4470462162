"""`/api/console/keys`: an account's own keys (SPEC 17). Another account's key id is 404, never 403.

A rotation or revocation is committed, then published on the engine's revocation channel at once: every hub's key
cache forgets the old key and its WebSocket sessions close with 4001 (server/api/auth/watch.py), well within 1 s.
"""

from __future__ import annotations

from server.api.console.context import ConsoleContext, Revoke, json_answer
from server.api.core.body import Fields, json_object
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.store.accounts.console import CapReached

MAX_LABEL = 100
PREFIX = "/api/console/keys"
SCOPES = ("read", "ingest")  # SPEC 20: an ingest key publishes to its account's instruments and reads nothing


class ConsoleKeysApi:
    def __init__(self, ctx: ConsoleContext, revoke: Revoke) -> None:
        self.ctx = ctx
        self.revoke = revoke

    def register(self, router: Router) -> None:
        router.add("GET", PREFIX, self.list_keys, Access.PUBLIC, name="console_keys")
        router.add("POST", PREFIX, self.create, Access.PUBLIC, name="console_key_create")
        router.add("PATCH", PREFIX + "/{id}", self.relabel, Access.PUBLIC, name="console_key_relabel")
        router.add("DELETE", PREFIX + "/{id}", self.delete, Access.PUBLIC, name="console_key_revoke")
        router.add("POST", PREFIX + "/{id}/rotate", self.rotate, Access.PUBLIC, name="console_key_rotate")

    async def list_keys(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        keys = await self.ctx.store.read(lambda r: r.keys_of(account.id))
        return json_answer({"items": [self.ctx.key_view(k) for k in keys]})

    async def create(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        label, scope = _label_scope(json_object(req))
        if scope == "ingest" and account.plan != "enterprise" and not account.is_operator:
            raise ApiError("forbidden", "Ingest keys publish to a dedicated data source: the enterprise plan's "
                                        "(docs/ingest.md).")
        ip, now = self.ctx.client_ip(req), self.ctx.clock()
        try:
            key, secret = await self.ctx.store.write(lambda r: r.create_key(account, label, now, ip, scope))
        except CapReached as exc:
            raise ApiError("conflict", f"{str(exc).capitalize()}; revoke one, or ask for a bigger plan at "
                                       "/console.", extra={"limit": exc.cap}) from None
        return json_answer(self.ctx.key_view(key, secret), 201)

    async def rotate(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        key_id, ip, now = req.path_params["id"], self.ctx.client_ip(req), self.ctx.clock()
        if req.body.strip():
            _label(json_object(req))  # no fields; a body, if sent, is a JSON object
        done = await self.ctx.store.write(lambda r: r.rotate_key(account.id, key_id, now, ip))
        if done is None:
            raise _no_key(key_id)
        await self.revoke({key_id})
        key, secret = done
        return json_answer({**self.ctx.key_view(key, secret), "replaces": key_id}, 201)

    async def relabel(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        key_id = req.path_params["id"]
        label = _label(json_object(req), required=True)
        ip, now = self.ctx.client_ip(req), self.ctx.clock()
        if not await self.ctx.store.write(lambda r: r.relabel_key(account.id, key_id, label, now, ip)):
            raise _no_key(key_id)
        key = await self.ctx.store.read(lambda r: r.key_of(account.id, key_id))
        assert key is not None
        return json_answer(self.ctx.key_view(key))

    async def delete(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        key_id, ip, now = req.path_params["id"], self.ctx.client_ip(req), self.ctx.clock()
        if not await self.ctx.store.write(lambda r: r.revoke_key(account.id, key_id, now, ip)):
            known = await self.ctx.store.read(lambda r: r.key_of(account.id, key_id))
            if known is None:
                raise _no_key(key_id)
            return json_answer(self.ctx.key_view(known))  # revoked already: the same answer again
        await self.revoke({key_id})
        key = await self.ctx.store.read(lambda r: r.key_of(account.id, key_id))
        assert key is not None
        return json_answer(self.ctx.key_view(key))


def _label(body: dict[str, object], required: bool = False) -> str | None:
    f = Fields(body)
    label = f.text("label", required=required, max_len=MAX_LABEL)
    f.only("label")
    f.check()
    return label


def _label_scope(body: dict[str, object]) -> tuple[str | None, str]:
    f = Fields(body)
    label = f.text("label", required=False, max_len=MAX_LABEL)
    scope = f.choice("scope", SCOPES, default="read")
    f.only("label", "scope")
    f.check()
    return label, scope or "read"


def _no_key(key_id: str) -> ApiError:
    return ApiError("not_found", f"This account has no key {key_id[:64]}.")
