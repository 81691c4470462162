"""`users create --email E --password P`, `users promote EMAIL`, `users plan EMAIL PLAN [--rate N]`,
`users namespace EMAIL NS`, `users limits EMAIL [--instruments N] [--ticks-per-second N] [--reset]`,
`users disable EMAIL`: site accounts.

`--password -` reads the password from the first line of stdin, keeping it out
of the process list and shell history.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from server.api.auth.passwords import hash_password
from server.api.core.body import Fields
from server.api.site import fields as site_fields
from server.commands.common import CommandError, command, db
from server.commands.console_db import with_console
from server.commands.users_limits import register_limits
from server.core.limits import MAX_RATE
from server.store.accounts.console import PLANS, Role
from server.store.accounts.users import DuplicateEmail
from server.store.sources.repo import NAMESPACE, NotEntitled, SourcesRepo, TakenNamespace


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
