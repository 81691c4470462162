"""`market-server` (same as `python -m server`): serve, and the operator commands.

Each command group lives in server/commands/ and registers its own
subcommands; every command takes `--data-dir` and `--database-url` after the subcommand.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from server.commands import (
    candles,
    content,
    db,
    evidence,
    incidents,
    keys,
    outbox,
    receipts,
    subscriptions,
    tickets,
    users,
)
from server.commands.common import CommandError, check_data_dir
from server.config import (
    ConfigError,
    EngineKind,
    ServiceUnreachable,
    Settings,
    add_serve_args,
    check_command_flags,
    settings_from_args,
)
from server.logs import configure_logging
from server.store.sql.db import storage_errors

GROUPS = [keys, candles, evidence, outbox, users, content, receipts, db, subscriptions, tickets, incidents]


class Parser(argparse.ArgumentParser):
    """argparse's, but a bad command line is one line on stderr (exit code 2), like a bad flag value."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="market-server", description="Commodity market-data service")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the hub (HTTP + WebSocket)")
    add_serve_args(serve)
    serve.set_defaults(func=_serve)
    for group in GROUPS:
        group.register(sub)
    return parser


def _serve(ns: argparse.Namespace) -> int:
    from server.feeds import FeedUnavailable, check_feed_source
    from server.serve import run

    settings: Settings = ns.settings  # checked by main() before the data dir is touched
    try:
        check_feed_source(settings)  # a missing jsonl file: one line and exit 1, before anything starts
    except FeedUnavailable as exc:
        raise CommandError(str(exc)) from None
    if settings.calendar_file is not None:  # a bad notice names its file, entry and field: one line, exit 2
        from server.market.venues.book import VenueBook
        from server.market.venues.calendar_notices import CalendarFileError

        try:
            VenueBook.load(settings.calendar_file)
        except CalendarFileError as exc:
            raise ConfigError(f"--calendar-file: {exc}") from None
    try:  # a bad product names its file, entry and field: one line, exit 2
        from server.market.contracts.specs import CatalogueFileError, load_products

        load_products(settings.catalogue_file)
    except CatalogueFileError as exc:
        raise ConfigError(f"--catalogue-file: {exc}") from None
    _check_engine(settings)
    if settings.database_url:
        _check_database(settings.database_url)
    if settings.workers > 1:  # a supervisor of N whole hubs on the same ports
        from server.workers import supervise

        return supervise(settings, ns.argv)
    configure_logging(settings.log_level, worker=settings.worker_id)  # JSON lines, tracebacks in their own field
    return run(settings)


def _check_engine(settings: Settings) -> None:
    """`--engine redis` without a reachable Redis: one line and exit 1, before anything starts."""
    if settings.engine is EngineKind.REDIS:
        from server.engine import EngineUnavailable
        from server.engine.redis_engine import check_reachable

        try:
            check_reachable(settings.redis_url)
        except EngineUnavailable as exc:
            raise CommandError(str(exc)) from None


def _check_database(url: str) -> None:
    """--database-url that cannot be reached or migrated: one line and exit 1, before anything starts."""
    from server.store.sql.pg import connect, migrate

    conn = connect(url)  # psycopg.Error: reported by main() without a traceback
    try:
        migrate(conn)
    finally:
        conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    ns.argv = list(sys.argv[1:] if argv is None else argv)  # `serve --workers N` starts its children with them
    try:
        if ns.command == "serve":  # every flag checked before anything starts (the data dir is not even made)
            ns.settings = settings_from_args(ns)
        else:
            check_command_flags(ns)
        if ns.command == "serve" or not ns.database_url:  # serve keeps its demo key and JWT secret there
            check_data_dir(Path(ns.data_dir), create=ns.command == "serve")
        return int(ns.func(ns) or 0)
    except ConfigError as exc:
        print(f"market-server: configuration error: {exc}", file=sys.stderr)
        return 2
    except (CommandError, ServiceUnreachable) as exc:  # ServiceUnreachable: Redis went away while the hub started
        print(f"market-server: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:  # e.g. DATA_DIR/market.db is not a database: one line, not a traceback
        print(f"market-server: storage error in data dir {ns.data_dir}: {exc}", file=sys.stderr)
        return 1
    except storage_errors() as exc:  # psycopg's, once a --database-url loaded it: unreachable, refused, ...
        from server.store.sql.pg import redact

        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"market-server: PostgreSQL error at {redact(ns.database_url or '')}: {reason}", file=sys.stderr)
        return 1
