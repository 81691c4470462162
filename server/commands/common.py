"""Shared bits of the operator commands."""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from server.config import add_data_dir
from server.store.db import open_db


class CommandError(Exception):
    """A command failed for a reason the operator can fix; printed without a traceback."""


def command(sub: Any, name: str, help_text: str, func: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text)
    add_data_dir(parser)
    parser.set_defaults(func=func)
    return parser


def db(ns: argparse.Namespace) -> sqlite3.Connection:
    return open_db(Path(ns.data_dir))


def print_json(data: Any) -> None:
    print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def load_json_file(path: str) -> Any:
    try:
        return orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise CommandError(f"{path} is not valid JSON: {exc}") from None
