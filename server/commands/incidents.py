"""`incidents open|update|resolve|list` and `maintenance add|list` (SPEC 20): the operators' incidents and
scheduled maintenance, written to storage (SQLite in --data-dir or --database-url). A running hub shows a change on
/api/v1/status within its board's refresh (about 2 s, docs/incidents.md) and mails each update to the accounts told
of incidents. Bad input (an unknown id, a component that is not one, a window that ends before it starts, a
resolved incident) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from server.commands.common import command, print_json
from server.commands.console_db import with_console
from server.core.transitions import IllegalTransition
from server.store.incidents.model import (
    UPDATE_STATUSES,
    Impact,
    Incident,
    IncidentStatus,
    NoSuchIncident,
    body_error,
    component_error,
    parse_time,
    title_error,
    window_error,
)
from server.store.incidents.repo import IncidentRepo

OPENED = "We are investigating this issue."
RESOLVED = "This incident has been resolved."


class BadInput(Exception):
    """The operator's input: printed as one line, exit code 2."""


def _text(check: Any) -> Any:
    def parse(text: str) -> str:
        problem = check(text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return text
    return parse


def _time(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: Any) -> None:
    group = sub.add_parser("incidents", help="incidents shown on /api/v1/status (SPEC 20)")
    cmds = group.add_subparsers(dest="incidents_cmd", required=True)
    opened = command(cmds, "open", "open an incident (investigating)", _open)
    opened.add_argument("--title", required=True, type=_text(title_error))
    opened.add_argument("--impact", required=True, choices=[i.value for i in Impact])
    opened.add_argument("--component", action="append", default=[], type=_text(component_error),
                        help="a status component it affects (repeatable): rest, stream, storage, ..., feed:VENUE")
    opened.add_argument("--message", type=_text(body_error), help=f"the first update (default: {OPENED!r})")
    update = command(cmds, "update", "post an update", _update)
    update.add_argument("id")
    update.add_argument("--status", required=True, choices=[s.value for s in UPDATE_STATUSES])
    update.add_argument("--message", required=True, type=_text(body_error))
    resolve = command(cmds, "resolve", "resolve an incident", _resolve)
    resolve.add_argument("id")
    resolve.add_argument("--message", type=_text(body_error), help=f"the last update (default: {RESOLVED!r})")
    listing = command(cmds, "list", "the newest 50 incidents and every unresolved one", _list)
    listing.add_argument("--json", action="store_true")
    group = sub.add_parser("maintenance", help="scheduled maintenance shown on /api/v1/status (SPEC 20)")
    cmds = group.add_subparsers(dest="maintenance_cmd", required=True)
    add = command(cmds, "add", "schedule a maintenance window", _add)
    add.add_argument("--title", required=True, type=_text(title_error))
    add.add_argument("--from", dest="start", required=True, type=_time, help="ISO 8601 (no offset: Shanghai)")
    add.add_argument("--to", dest="until", required=True, type=_time, help="ISO 8601 (no offset: Shanghai)")
    listing = command(cmds, "list", "maintenance not over yet and the newest 50 others", _list_maintenance)
    listing.add_argument("--json", action="store_true")


def _bad(fn: Any) -> Any:
    def run(ns: argparse.Namespace) -> int:
        try:
            return int(fn(ns))
        except BadInput as exc:
            print(f"market-server: {exc}", file=sys.stderr)
            return 2
    return run


def _line(inc: Incident) -> str:
    parts = [inc.id, f"{inc.status.value:<13}", f"{inc.impact.value:<8}", inc.title]
    if inc.components:
        parts.append(f"[{', '.join(inc.components)}]")
    return "  ".join(parts)


@_bad
def _open(ns: argparse.Namespace) -> int:
    inc = with_console(ns, lambda r: IncidentRepo(r.db).open(ns.title, Impact(ns.impact), ns.component,
                                                             ns.message or OPENED, time.time()))
    assert inc is not None
    print(f"opened {_line(inc)}")
    return 0


def _change(ns: argparse.Namespace, status: IncidentStatus, body: str) -> Incident:
    try:
        return with_console(ns, lambda r: IncidentRepo(r.db).update(ns.id, status, body, time.time()))
    except NoSuchIncident:
        raise BadInput(f"no incident {ns.id[:64]}") from None
    except IllegalTransition as exc:
        raise BadInput(f"incident {ns.id[:64]} is {exc.current.value}: it cannot become {status.value}") from None


@_bad
def _update(ns: argparse.Namespace) -> int:
    print(f"updated {_line(_change(ns, IncidentStatus(ns.status), ns.message))}")
    return 0


@_bad
def _resolve(ns: argparse.Namespace) -> int:
    print(f"resolved {_line(_change(ns, IncidentStatus.RESOLVED, ns.message or RESOLVED))}")
    return 0


def _list(ns: argparse.Namespace) -> int:
    found = with_console(ns, lambda r: IncidentRepo(r.db).recent())
    if ns.json:
        print_json([i.view() for i in found])
    for inc in [] if ns.json else found:
        print(_line(inc))
    if not found and not ns.json:
        print("no incidents")
    return 0


@_bad
def _add(ns: argparse.Namespace) -> int:
    problem = window_error(ns.start, ns.until)
    if problem:
        raise BadInput(f"--to: {problem}")
    m = with_console(ns, lambda r: IncidentRepo(r.db).add_maintenance(ns.title, ns.start, ns.until, time.time()))
    view = m.view(time.time())
    print(f"scheduled {m.id}  {view['scheduledFor']} .. {view['scheduledUntil']}  {m.title}")
    return 0


def _list_maintenance(ns: argparse.Namespace) -> int:
    now = time.time()
    found = [m.view(now) for m in with_console(ns, lambda r: IncidentRepo(r.db).maintenances())]
    if ns.json:
        print_json(found)
    for m in [] if ns.json else found:
        print(f"{m['id']}  {m['status']:<11}  {m['scheduledFor']} .. {m['scheduledUntil']}  {m['name']}")
    if not found and not ns.json:
        print("no maintenance")
    return 0
