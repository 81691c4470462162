"""The console's incidents (SPEC 20, docs/incidents.md): operators open, update and resolve incidents and schedule
maintenance (a customer: 403), as the CLI does; every account chooses whether it is e-mailed of incidents
(enterprise accounts are by default, others once they opt in).

A write pokes this hub's incident board, so /api/v1/status shows it at once here and within the board's refresh on
every other hub.
"""

from __future__ import annotations

from collections.abc import Callable

from server.api.console.context import ConsoleContext, json_answer
from server.api.core.body import Fields, json_object
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.core.transitions import IllegalTransition
from server.store.incidents.model import (
    MAX_BODY,
    MAX_COMPONENTS,
    MAX_TITLE,
    UPDATE_STATUSES,
    Impact,
    IncidentStatus,
    NoSuchIncident,
    component_error,
    parse_time,
    window_error,
)
from server.store.incidents.repo import IncidentRepo

OPENED = "We are investigating this issue."
RESOLVED = "This incident has been resolved."
BASE = "/api/console/incidents"


class ConsoleIncidentsApi:
    def __init__(self, ctx: ConsoleContext, changed: Callable[[], None]) -> None:
        self.ctx, self.changed = ctx, changed

    def register(self, router: Router) -> None:
        add = router.add
        add("GET", BASE, self.list, Access.PUBLIC, name="console_incidents")
        add("POST", BASE, self.open, Access.PUBLIC, name="console_incident_open")
        add("POST", BASE + "/{id}/updates", self.update, Access.PUBLIC, name="console_incident_update")
        add("POST", BASE + "/{id}/resolve", self.resolve, Access.PUBLIC, name="console_incident_resolve")
        add("GET", "/api/console/maintenances", self.maintenances, Access.PUBLIC, name="console_maintenances")
        add("POST", "/api/console/maintenances", self.add_maintenance, Access.PUBLIC, name="console_maintenance_add")
        add("GET", "/api/console/notifications", self.mail_choice, Access.PUBLIC, name="console_notifications")
        add("POST", "/api/console/notifications", self.set_mail, Access.PUBLIC, name="console_notifications_set")

    async def list(self, req: Request) -> Response:
        await self.ctx.operator(req)
        found = await self.ctx.store.read(lambda r: IncidentRepo(r.db).recent())
        return json_answer({"items": [i.view() for i in found]})

    async def open(self, req: Request) -> Response:
        await self.ctx.operator(req)
        f = Fields(json_object(req))
        title = f.text("title", max_len=MAX_TITLE)
        impact = f.choice("impact", tuple(i.value for i in Impact))
        if f.data.get("impact") is None:
            f.error("impact", "is required")
        components = _components(f)
        message = f.text("message", required=False, max_len=MAX_BODY)
        f.only("title", "impact", "components", "message")
        f.check()
        assert title is not None and impact is not None
        now = self.ctx.clock()
        inc = await self.ctx.store.write(lambda r: IncidentRepo(r.db).open(title, Impact(impact), components,
                                                                           message or OPENED, now))
        assert inc is not None
        self.changed()
        return json_answer(inc.view(), 201)

    async def update(self, req: Request) -> Response:
        await self.ctx.operator(req)
        f = Fields(json_object(req))
        status = f.choice("status", tuple(s.value for s in UPDATE_STATUSES))
        if f.data.get("status") is None:
            f.error("status", "is required")
        message = f.text("message", max_len=MAX_BODY)
        f.only("status", "message")
        f.check()
        assert status is not None and message is not None
        return await self._change(req, IncidentStatus(status), message)

    async def resolve(self, req: Request) -> Response:
        await self.ctx.operator(req)
        f = Fields(json_object(req) if req.body.strip() else {})
        message = f.text("message", required=False, max_len=MAX_BODY)
        f.only("message")
        f.check()
        return await self._change(req, IncidentStatus.RESOLVED, message or RESOLVED)

    async def _change(self, req: Request, status: IncidentStatus, message: str) -> Response:
        inc_id, now = req.path_params["id"], self.ctx.clock()
        try:
            inc = await self.ctx.store.write(lambda r: IncidentRepo(r.db).update(inc_id, status, message, now))
        except NoSuchIncident:
            raise ApiError("not_found", f"No incident {inc_id[:64]}.") from None
        except IllegalTransition as exc:
            raise ApiError("conflict", f"This incident is {exc.current.value}: it cannot become "
                                       f"{status.value}.") from None
        self.changed()
        return json_answer(inc.view())

    async def maintenances(self, req: Request) -> Response:
        await self.ctx.operator(req)
        now = self.ctx.clock()
        found = await self.ctx.store.read(lambda r: IncidentRepo(r.db).maintenances())
        return json_answer({"items": [m.view(now) for m in found]})

    async def add_maintenance(self, req: Request) -> Response:
        await self.ctx.operator(req)
        f = Fields(json_object(req))
        title = f.text("title", max_len=MAX_TITLE)
        start, until = _time(f, "from"), _time(f, "to")
        f.only("title", "from", "to")
        if start is not None and until is not None and window_error(start, until):
            f.error("to", "must be after from")
        f.check()
        assert title is not None and start is not None and until is not None
        now = self.ctx.clock()
        m = await self.ctx.store.write(lambda r: IncidentRepo(r.db).add_maintenance(title, start, until, now))
        self.changed()
        return json_answer(m.view(now), 201)

    async def mail_choice(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        chosen = await self.ctx.store.read(lambda r: IncidentRepo(r.db).mail_choice(account.id))
        return json_answer(_mail_view(account.plan, chosen))

    async def set_mail(self, req: Request) -> Response:
        account = await self.ctx.account(req)
        f = Fields(json_object(req))
        value = f.data.get("incidents")
        if not isinstance(value, bool):
            f.error("incidents", "is required: true or false")
        f.only("incidents")
        f.check()
        now = self.ctx.clock()
        await self.ctx.store.write(lambda r: IncidentRepo(r.db).set_mail(account.id, bool(value), now))
        return json_answer(_mail_view(account.plan, bool(value)))


def _mail_view(plan: str, chosen: bool | None) -> dict[str, object]:
    default = plan == "enterprise"
    return {"incidents": default if chosen is None else chosen, "default": default, "chosen": chosen is not None}


def _components(f: Fields) -> list[str]:
    value = f.data.get("components", [])
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value) or len(value) > MAX_COMPONENTS:
        f.error("components", f"must be a list of at most {MAX_COMPONENTS} component ids")
        return []
    for cid in value:
        problem = component_error(cid)
        if problem:
            f.error("components", problem)
    return list(dict.fromkeys(value))


def _time(f: Fields, name: str) -> float | None:
    text = f.text(name, max_len=64)
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError as exc:
        f.error(name, str(exc))
        return None
