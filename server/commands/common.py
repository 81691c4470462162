"""Shared bits of the operator commands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import orjson

from server.config import add_data_dir
from server.store.sql.admin import AdminRepos, open_admin


class CommandError(Exception):
    """A command failed for a reason the operator can fix; printed without a traceback."""


def command(sub: Any, name: str, help_text: str, func: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text)
    add_data_dir(parser)
    parser.set_defaults(func=func)
    return parser


def check_data_dir(path: Path, create: bool) -> None:
    """A usable data dir, or a CommandError naming it. `serve` creates a missing one; the admin
    commands refuse to (on a mistyped path they would create an empty database and report success)."""
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise CommandError(f"data dir {path} is not writable")
        return
    if path.exists() or path.is_symlink():
        raise CommandError(f"data dir {path} is not a directory")
    if not create:
        raise CommandError(f"data dir {path} does not exist (`market-server serve --data-dir {path}` creates it)")
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise CommandError(f"cannot create data dir {path}: {exc.strerror}") from None


def db(ns: argparse.Namespace) -> AdminRepos:
    """The command's repositories: PostgreSQL with --database-url (migrated and seeded like a new data dir),
    else SQLite in --data-dir (server/store/sql/admin.py)."""
    return open_admin(Path(ns.data_dir), getattr(ns, "database_url", None))


def print_json(data: Any) -> None:
    print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def load_json_file(path: str) -> Any:
    try:
        return orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise CommandError(f"{path} is not valid JSON: {exc}") from None
