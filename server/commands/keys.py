"""`keys create|list|revoke`: API keys (the secret is printed once and never stored)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from server.commands.common import CommandError, command, db, print_json
from server.config import DEFAULT_ENTERPRISE_RATE, PLANS, EngineKind, Settings, add_engine_args, engine_settings
from server.core.limits import MAX_RATE


def register(sub: Any) -> None:
    keys = sub.add_parser("keys", help="manage API keys").add_subparsers(dest="keys_cmd", required=True)
    create = command(keys, "create", "create a key and print it once", _create)
    create.add_argument("--plan", choices=PLANS, required=True)
    create.add_argument("--rate", type=_rate_arg, help=f"requests/minute (enterprise keys), 1..{MAX_RATE}")
    create.add_argument("--label")
    create.add_argument("--json", action="store_true")
    listing = command(keys, "list", "list keys (never the secret)", _list)
    listing.add_argument("--json", action="store_true")
    revoke = command(keys, "revoke", "revoke a key", _revoke)
    revoke.add_argument("id")
    add_engine_args(revoke)  # --engine redis: every hub refuses the key and closes its sockets at once


def _rate_arg(text: str) -> int:
    """--rate: requests per minute, 1..MAX_RATE (the limiter's arithmetic holds up to there)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_RATE:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to {MAX_RATE:,} requests per minute")
    return value


def _rate(plan: str, rate: int | None) -> int:
    return rate or Settings().plan_rate.get(plan, DEFAULT_ENTERPRISE_RATE)


def _create(ns: argparse.Namespace) -> int:
    key, secret = db(ns).keys.create(ns.plan, ns.rate, ns.label)
    if ns.json:
        print_json({"id": key.id, "key": secret, "plan": key.plan, "rate": _rate(key.plan, key.rate)})
    else:
        print(f"created {key.id} ({key.plan}, {_rate(key.plan, key.rate)}/min); the key is shown once:\n{secret}")
    return 0


def _list(ns: argparse.Namespace) -> int:
    rows = [
        {"id": k.id, "plan": k.plan, "rate": _rate(k.plan, k.rate), "label": k.label,
         "createdAt": k.created_at, "revoked": not k.active}
        for k in db(ns).keys.list()
    ]
    if ns.json:
        print_json(rows)
    else:
        for r in rows:
            state = "revoked" if r["revoked"] else "active"
            print(f"{r['id']}  {r['plan']:<12} {r['rate']:>6}/min  {state:<7} {r['label'] or ''}")
    return 0


def _revoke(ns: argparse.Namespace) -> int:
    engine = engine_settings(ns)  # a bad --engine/--redis-url is refused before anything is revoked
    if not db(ns).keys.revoke(ns.id):
        raise CommandError(f"no active key with id {ns.id}")
    print(f"revoked {ns.id}")
    _tell_hubs(engine, ns.id)
    return 0


def _tell_hubs(settings: Settings, key_id: str) -> None:
    """Publish the revocation on the engine; if Redis is away, the hubs' 1 s key refresh still applies it."""
    if settings.engine is not EngineKind.REDIS:
        return
    from server.engine import EngineUnavailable
    from server.engine.redis_engine import publish_revocations

    try:
        hubs = publish_revocations(settings.redis_url, settings.redis_prefix, {key_id})
    except EngineUnavailable as exc:
        print(f"warning: {exc}; running hubs apply the revocation at their next key refresh (within 1 s)",
              file=sys.stderr)
        return
    print(f"told {hubs} hub(s) over Redis")
