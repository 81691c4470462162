"""`evidence anchor (--hash HEX | FILE)`: submit a SHA-256 and anchor it at once."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any

from server.commands.common import CommandError, command, db, print_json


def register(sub: Any) -> None:
    ev = sub.add_parser("evidence", help="on-chain evidence").add_subparsers(dest="evidence_cmd", required=True)
    anchor = command(ev, "anchor", "anchor a SHA-256 (given, or of a file)", _anchor)
    what = anchor.add_mutually_exclusive_group(required=True)
    what.add_argument("--hash", help="64 hex characters")
    what.add_argument("file", nargs="?", help="file whose SHA-256 is anchored")


def _anchor(ns: argparse.Namespace) -> int:
    if ns.hash:
        digest = ns.hash
    else:
        try:
            digest = hashlib.sha256(Path(ns.file).read_bytes()).hexdigest()
        except OSError as exc:
            raise CommandError(f"cannot read {ns.file}: {exc.strerror}") from None
    try:
        result = db(ns).evidence.submit_and_anchor(digest)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    print_json(result)
    return 0
