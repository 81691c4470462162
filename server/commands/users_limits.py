"""`users limits EMAIL [--instruments N|default] [--ticks-per-second N|default] [--reset]`: an account's limits of
its dedicated data source (SPEC 20, docs/ingest.md), set by an operator. Without a flag it prints them.

A value is a whole number (instruments 0-10000, ticks a second 1-1000000) or `default`, the enterprise plan's (100
instruments; the hub's --ingest-rate); `--reset` puts both back to the defaults. A bad value is argparse's error:
one line on stderr and exit 2. Every running hub applies a change within a second (the key refresh carries the ticks
a second; a declaration reads the instrument cap from storage). Lowering the instrument cap below what the account
holds keeps its instruments: only new declarations are refused.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from server.commands.common import CommandError, command
from server.commands.console_db import with_console
from server.store.accounts.console import Account, EventKind
from server.store.accounts.console_repo import ConsoleRepo
from server.store.sources.repo import MAX_INSTRUMENT_CAP, MAX_PER_ACCOUNT, MAX_TICKS_PER_SECOND, SourcesRepo

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
