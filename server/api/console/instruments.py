"""`/api/console/instruments`: an enterprise account's own instruments, its dedicated data source (SPEC 20,
docs/ingest.md). The id is `{namespace}.{name}` in the namespace an operator granted (`users namespace EMAIL NS`):
outside it 403; without a namespace 403. A declared instrument is bound at once to its reserved market-state row on
this hub (`bind`) and by every other hub's next refresh (within a second); its data is visible to the account's keys
only. An account holds at most its instrument limit (an operator's `users limits`, else the plan's 100: 409 naming it);
the list reports the limits in force (instruments, ticks a second) and the instruments used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from server.api.console.context import ConsoleContext, json_answer
from server.api.core.body import Fields, json_object
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.market.timefmt import iso
from server.store.accounts.console import Account
from server.store.sources.repo import NAMESPACE, Declared, Limits, Refused, SourcesRepo

PREFIX = "/api/console/instruments"
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")  # the part after `{namespace}.`
CURRENCY = re.compile(r"[A-Z]{3}")
MAX_DECIMALS = 8
Bind = Callable[[Declared | None, str], None]  # (the declared instrument, or None: its id was deleted; the id)


class ConsoleInstrumentsApi:
    def __init__(self, ctx: ConsoleContext, rows: int, venues: Collection[str], sessions: Collection[str],
                 bind: Bind) -> None:
        """`rows`: the reserved market-state rows (--custom-instruments); `venues`, `sessions`: the ids a declared
        instrument may name; `bind`: this hub's binding of a declared (or deleted) instrument, at once."""
        self.ctx, self.rows, self.bind = ctx, rows, bind
        self.venues, self.sessions = sorted(venues), sorted(sessions)

    def register(self, router: Router) -> None:
        router.add("GET", PREFIX, self.list_instruments, Access.PUBLIC, name="console_instruments")
        router.add("POST", PREFIX, self.declare, Access.PUBLIC, name="console_instrument_declare")
        router.add("DELETE", PREFIX + "/{id}", self.delete, Access.PUBLIC, name="console_instrument_delete")

    async def _source(self, req: Request, account: Account | None = None) -> tuple[Account, str | None]:
        account = account or await self.ctx.account(req)
        if account.plan != "enterprise" and not account.is_operator:
            raise ApiError("forbidden", "A dedicated data source is part of the enterprise plan (docs/ingest.md).")
        namespace = await self.ctx.store.read(lambda r: SourcesRepo(r.db).namespace_of(account.id))
        return account, namespace

    async def list_instruments(self, req: Request) -> Response:
        account, namespace = await self._source(req)
        found, limits = await self.ctx.store.read(lambda r: (SourcesRepo(r.db).instruments_of(account.id),
                                                             SourcesRepo(r.db).limits_of(account.id)))
        return json_answer({"namespace": namespace, "items": [instrument_view(d) for d in found],
                            "limits": self.limits_view(limits), "used": {"instruments": len(found)},
                            "defaults": self.limits_view(Limits()), "venues": self.venues})

    def limits_view(self, limits: Limits) -> dict[str, int]:
        """The account's limits in force: an operator's (`users limits`), else the enterprise plan's defaults (100
        instruments, the hub's --ingest-rate)."""
        return {"instruments": limits.instrument_cap,
                "ticksPerSecond": limits.ticks_per_second or self.ctx.settings.ingest_rate}

    async def declare(self, req: Request) -> Response:
        signed_in = await self.ctx.account(req)
        fields = self._fields(json_object(req))  # a bad body is a 400 naming its fields, whatever the plan
        account, namespace = await self._source(req, signed_in)
        if namespace is None:
            raise ApiError("forbidden", "This account has no namespace yet; the operator grants one "
                                        "(users namespace EMAIL NS).")
        if not fields["id"].startswith(namespace + "."):
            raise ApiError("forbidden", f"An instrument id of this account starts with {namespace}. "
                                        f"(its namespace): {fields['id'][:80]}")
        now = self.ctx.clock()
        try:
            made = await self.ctx.store.write(lambda r: SourcesRepo(r.db).declare(account, fields, now, self.rows))
        except Refused as exc:
            extra = {"limit": exc.limit} if exc.limit is not None else None
            raise ApiError("conflict", str(exc), extra=extra) from None
        self.bind(made, made.id)
        return json_answer(instrument_view(made), 201)

    async def delete(self, req: Request) -> Response:
        account, _ = await self._source(req)
        inst_id, now = req.path_params["id"], self.ctx.clock()
        if not await self.ctx.store.write(lambda r: SourcesRepo(r.db).delete(account.id, inst_id, now)):
            raise ApiError("not_found", f"This account has no instrument {inst_id[:80]}.")
        self.bind(None, inst_id)
        return Response(204, b"", None, [("cache-control", "no-store")])

    def _fields(self, body: dict[str, Any]) -> dict[str, Any]:
        f = Fields(body)
        inst_id = body.get("id")  # as sent: an id is never trimmed
        ns, dot, local = inst_id.partition(".") if isinstance(inst_id, str) else ("", "", "")
        if not (dot and NAMESPACE.fullmatch(ns) and NAME.fullmatch(local)):
            f.error("id", "must be {namespace}.{name}: the namespace as granted, the name 1-48 characters of a-z, "
                          "0-9, _ and -")
        name, unit = _localised(f, "name", 100), _localised(f, "unit", 40)
        currency = body.get("currency")
        if not isinstance(currency, str) or not CURRENCY.fullmatch(currency):
            f.error("currency", "must be an ISO 4217 code: three capital letters")
        decimals = body.get("decimals")
        if isinstance(decimals, float) and decimals.is_integer():
            decimals = int(decimals)
        if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= MAX_DECIMALS:
            f.error("decimals", f"must be a whole number from 0 to {MAX_DECIMALS}")
        venue = body.get("venue")
        if venue not in self.venues:
            f.error("venue", "is required: the venue whose trading days and sessions the instrument follows, one of "
                             + ", ".join(self.venues))
        session = f.choice("session", tuple(self.sessions))
        f.only("id", "name", "unit", "currency", "decimals", "venue", "session")
        f.check()
        assert isinstance(inst_id, str)
        return {"id": inst_id, "name": name, "unit": unit, "currency": currency, "decimals": decimals,
                "venue": venue, "session": session or ""}


def _localised(f: Fields, name: str, max_len: int) -> dict[str, str]:
    value = f.data.get(name)
    if not isinstance(value, dict):
        f.error(name, "is required: an object {zh, en}")
        return {}
    inner = Fields(value)
    out = {lang: inner.text(lang, max_len=max_len) or "" for lang in ("zh", "en")}
    inner.only("zh", "en")
    for e in inner.errors:  # named by the body's field, the inner one in the message
        f.error(name, f"{e['field']} {e['message']}")
    return out


def instrument_view(d: Declared) -> dict[str, Any]:
    return {"id": d.id, "name": d.name, "unit": d.unit, "currency": d.currency, "decimals": d.decimals,
            "venue": d.venue, "session": d.session or None, "createdAt": iso(d.created_at)}
