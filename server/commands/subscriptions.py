"""`subscriptions list [--status S] [--json]`, `subscriptions approve ID [--rate N]`, `subscriptions reject ID`.

The CLI side of SPEC 17's plan requests: an approval moves the account and all its active keys to the plan in one
transaction; every running hub applies it with its next key refresh (within a second).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from server.api.console.context import subscription_view
from server.commands.common import CommandError, command, print_json
from server.commands.console_db import with_console
from server.core.limits import MAX_RATE
from server.store.accounts.console import NotPending, SubscriptionStatus
from server.store.accounts.console_repo import ConsoleRepo


def register(sub: Any) -> None:
    group = sub.add_parser("subscriptions", help="plan requests from the service console")
    subs = group.add_subparsers(dest="subscriptions_cmd", required=True)
    listing = command(subs, "list", "list subscription requests", _list)
    listing.add_argument("--status", choices=[s.value for s in SubscriptionStatus])
    listing.add_argument("--json", action="store_true")
    approve = command(subs, "approve", "approve a request (the account's keys move to the plan)", _approve)
    approve.add_argument("id")
    approve.add_argument("--rate", type=int, help="requests/minute, for the enterprise plan")
    reject = command(subs, "reject", "reject a request", _reject)
    reject.add_argument("id")


def _list(ns: argparse.Namespace) -> int:
    status = SubscriptionStatus(ns.status) if ns.status else None
    subs = with_console(ns, lambda r: r.plans.list(status))
    views = [subscription_view(s) for s in subs]
    if ns.json:
        print_json(views)
        return 0
    for v in views:
        print(f"{v['id']}  {v['status']:<8}  {v['plan']:<12}  {v['email']}  {v['createdAt']}")
    if not views:
        print("no subscription requests")
    return 0


def _approve(ns: argparse.Namespace) -> int:
    if ns.rate is not None and not 0 < ns.rate <= MAX_RATE:
        raise CommandError(f"--rate: must be from 1 to {MAX_RATE}")
    return _decide(ns, approve=True, rate=ns.rate)


def _reject(ns: argparse.Namespace) -> int:
    return _decide(ns, approve=False, rate=None)


def _decide(ns: argparse.Namespace, approve: bool, rate: int | None) -> int:
    def run(r: ConsoleRepo) -> str:
        found = r.plans.get(ns.id)
        if found is None:
            raise CommandError(f"no subscription request {ns.id}")
        if approve and found.plan == "enterprise" and rate is None:
            raise CommandError("--rate is required to approve an enterprise plan")
        if approve and found.plan != "enterprise" and rate is not None:
            raise CommandError("--rate is only for the enterprise plan")
        try:
            sub = r.plans.decide(ns.id, approve, rate, "cli", time.time())
        except NotPending as exc:
            raise CommandError(f"request {ns.id} was {exc} already") from None
        assert sub is not None
        return f"{sub.status.value} {sub.id}: {sub.user_email} on the {sub.plan} plan" if approve else \
            f"rejected {sub.id} ({sub.user_email}, {sub.plan})"

    print(with_console(ns, run))
    return 0
