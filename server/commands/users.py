"""`users create --email E --password P`, `users promote EMAIL`, `users plan EMAIL PLAN [--rate N]`,
`users namespace EMAIL NS`, `users limits EMAIL [--instruments N] [--ticks-per-second N] [--reset]`,
`users disable EMAIL`: site accounts.

`users limits` sets an account's limits of its dedicated data source (SPEC 20, docs/ingest.md); without a flag it
prints them. A value is a whole number (instruments 0-10000, ticks a second 1-1000000) or `default`, the enterprise
plan's (100 instruments; the hub's --ingest-rate); `--reset` puts both back. A bad value is argparse's error: one line
on stderr and exit 2. Every running hub applies a change within a second (the key refresh carries the ticks a second;
a declaration reads the instrument cap from storage). Lowering the instrument cap below what the account holds keeps
its instruments: only new declarations are refused.

`--password -` reads the password from the first line of stdin, keeping it out
of the process list and shell history.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from server.api.auth.passwords import hash_password
from server.api.core.body import Fields
from server.api.site import fields as site_fields
from server.commands.common import CommandError, command, db
from server.commands.console_db import with_console
from server.core.limits import MAX_RATE
from server.store.accounts.console import PLANS, Account, EventKind, Role
from server.store.accounts.console_repo import ConsoleRepo
from server.store.accounts.users import DuplicateEmail
from server.store.sources.repo import (
    MAX_INSTRUMENT_CAP,
    MAX_PER_ACCOUNT,
    MAX_TICKS_PER_SECOND,
    NAMESPACE,
    NotEntitled,
    SourcesRepo,
    TakenNamespace,
)


def register(sub: Any) -> None:
    users = sub.add_parser("users", help="site accounts").add_subparsers(dest="users_cmd", required=True)
    create = command(users, "create", "create an account", _create)
    create.add_argument("--email", required=True)
    create.add_argument("--password", required=True, help="8+ characters, or - to read it from stdin")
    create.add_argument("--name")
    create.add_argument("--company")
    create.add_argument("--operator", action="store_true", help="the operator role (decides plan requests)")
    promote = command(users, "promote", "give an account the operator role", _promote)
    promote.add_argument("email")
    plan = command(users, "plan", "move an account and its keys to a plan (up or down)", _plan)
    plan.add_argument("email")
    plan.add_argument("plan", choices=PLANS)
    plan.add_argument("--rate", type=int, help="requests/minute, for the enterprise plan (required there)")
    namespace = command(users, "namespace", "grant an enterprise account a namespace for its own instruments "
                        "(SPEC 20, docs/ingest.md)", _namespace)
    namespace.add_argument("email")
    namespace.add_argument("namespace", help="2-32 characters: a-z first, then a-z, 0-9 and -")
    register_limits(users)
    disable = command(users, "disable", "disable an account (its tokens stop working at once)", _disable)
    disable.add_argument("email")


def _create(ns: argparse.Namespace) -> int:
    password = sys.stdin.readline().rstrip("\r\n") if ns.password == "-" else ns.password
    f = Fields({"email": ns.email, "password": password, "name": ns.name, "company": ns.company})
    email = site_fields.email(f)
    site_fields.password(f)
    name = f.text("name", required=False, max_len=100)
    company = f.text("company", required=False, max_len=200)
    if f.errors or email is None:
        raise CommandError("; ".join(f"--{e['field']}: {e['message']}" for e in f.errors))
    try:
        user = db(ns).users.create(email, hash_password(password), name, company)
    except DuplicateEmail:
        raise CommandError(f"an account with e-mail {email} already exists") from None
    if ns.operator:
        with_console(ns, lambda r: r.set_role(user.email, Role.OPERATOR))
    print(f"created {user.id} ({user.email}){' operator' if ns.operator else ''}")
    return 0


def _promote(ns: argparse.Namespace) -> int:
    if not with_console(ns, lambda r: r.set_role(ns.email, Role.OPERATOR)):
        raise CommandError(f"no account with e-mail {ns.email}")
    print(f"{ns.email.strip().lower()} is an operator")
    return 0


def _plan(ns: argparse.Namespace) -> int:
    if (ns.plan == "enterprise") != (ns.rate is not None):
        raise CommandError("--rate is required for the enterprise plan, and only for it")
    if ns.rate is not None and not 0 < ns.rate <= MAX_RATE:
        raise CommandError(f"--rate: must be from 1 to {MAX_RATE}")
    if with_console(ns, lambda r: r.change_plan(ns.email, ns.plan, ns.rate, time.time())) is None:
        raise CommandError(f"no account with e-mail {ns.email}")
    print(f"{ns.email.strip().lower()} is on the {ns.plan} plan (every running hub applies it within a second)")
    return 0


def _namespace(ns: argparse.Namespace) -> int:
    if not NAMESPACE.fullmatch(ns.namespace):
        raise CommandError("namespace: 2-32 characters, a-z first, then a-z, 0-9 and -")
    try:
        account = with_console(ns, lambda r: SourcesRepo(r.db).grant_namespace(ns.email, ns.namespace))
    except NotEntitled:
        raise CommandError(f"{ns.email} is not on the enterprise plan (users plan EMAIL enterprise --rate N)") from None
    except TakenNamespace:
        raise CommandError(f"another account holds the namespace {ns.namespace}") from None
    if account is None:
        raise CommandError(f"no account with e-mail {ns.email}")
    print(f"{account.email} holds the namespace {ns.namespace}: its instruments are {ns.namespace}.*")
    return 0


def _disable(ns: argparse.Namespace) -> int:
    if not db(ns).users.disable(ns.email):
        raise CommandError(f"no enabled account with e-mail {ns.email}")
    print(f"disabled {ns.email.strip().lower()}")
    return 0


DEFAULT = "default"


def bounded(low: int, high: int) -> Callable[[str], int | None]:
    """An argparse type: a whole number from `low` to `high`, or `default` (None: the plan's)."""
    def parse(text: str) -> int | None:
        if text.strip().lower() == DEFAULT:
            return None
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}, or {DEFAULT}: {text!r}")
        return value
    parse.__name__ = "limit"  # argparse names the type in its message
    return parse


def register_limits(users: Any) -> None:
    limits = command(users, "limits", "an account's limits of its dedicated data source (SPEC 20): declared "
                     "instruments and ticks a second; without a flag, print them", _limits)
    limits.add_argument("email")
    limits.add_argument("--instruments", type=bounded(0, MAX_INSTRUMENT_CAP), default=argparse.SUPPRESS,
                        help=f"declared instruments it may hold (default: {MAX_PER_ACCOUNT}); fewer than it holds "
                             "keeps them and refuses new ones")
    limits.add_argument("--ticks-per-second", type=bounded(1, MAX_TICKS_PER_SECOND), default=argparse.SUPPRESS,
                        help="ticks a second it may publish (default: the hub's --ingest-rate)")
    limits.add_argument("--reset", action="store_true", help="both back to the enterprise plan's defaults")
    limits.set_defaults(limits_parser=limits)


def _limits(ns: argparse.Namespace) -> int:
    changes = {name: getattr(ns, name) for name in ("instruments", "ticks_per_second") if hasattr(ns, name)}
    if ns.reset:
        if changes:  # argparse's error: one line, exit 2
            ns.limits_parser.error("--reset puts both limits back to the defaults: give it without --instruments "
                                   "and --ticks-per-second")
        changes = {"instruments": None, "ticks_per_second": None}
    now = time.time()

    def apply(r: ConsoleRepo) -> tuple[Account | None, Any]:
        with r.db.transaction():
            account = SourcesRepo(r.db).set_limits(ns.email, changes)
            if account is not None and changes:
                r.add_event(account.id, EventKind.LIMITS_CHANGED, None, _describe(changes), None, now)
        return account, SourcesRepo(r.db).limits_of(account.id) if account is not None else None

    account, limits = with_console(ns, apply)
    if account is None:
        raise CommandError(f"no account with e-mail {ns.email}")
    default = " (the default)"
    tps = "the hub's --ingest-rate" + default if limits.ticks_per_second is None else limits.ticks_per_second
    print(f"{account.email}: {limits.instrument_cap} instruments{default if limits.instruments is None else ''}, "
          f"{tps} ticks a second{' (every running hub applies it within a second)' if changes else ''}")
    return 0


def _describe(changes: dict[str, int | None]) -> str:
    names = {"instruments": "instruments", "ticks_per_second": "ticks a second"}
    return ", ".join(f"{names[k]} {DEFAULT if v is None else v}" for k, v in changes.items())
