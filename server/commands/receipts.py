"""`receipts import FILE`: warehouse receipts (SPEC 3); each one's evidence hash is submitted and anchored.

Nothing is written if any item is bad, changes a known receipt's details or makes
an illegal status change (all checked first). The rest is written in chunks of
1,000 receipts per transaction and anchored in batches, so a server running on the
same data dir keeps answering (docs/storage.md). Output never includes a holder.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from server.api.core.body import Fields
from server.commands.common import CommandError, command, db, load_json_file, print_json
from server.commands.import_fields import parse_items, report, timestamp
from server.store.site.receipts import (
    RECEIPT_NO_PATTERN,
    IllegalTransition,
    ReceiptConflict,
    ReceiptData,
    ReceiptStatus,
)
from server.store.sql.admin import AdminReceipts

_RECEIPT_NO = re.compile(RECEIPT_NO_PATTERN)
MAX_QUANTITY = 1e12


def register(sub: Any) -> None:
    receipts = sub.add_parser("receipts", help="digital warehouse receipts").add_subparsers(
        dest="receipts_cmd", required=True)
    imp = command(receipts, "import", "import a JSON list of receipts and anchor their evidence", _import)
    imp.add_argument("file")


def parse_receipt(f: Fields) -> ReceiptData | None:
    number = f.text("receiptNo", max_len=64)
    if number is not None and not _RECEIPT_NO.fullmatch(number):
        f.error("receiptNo", "must match [A-Za-z0-9][A-Za-z0-9-]{2,63}")
    commodity = f.text("commodity", max_len=100)
    grade = f.text("grade", max_len=100)
    quantity = f.number("quantity", positive=True)
    if quantity is not None and quantity > MAX_QUANTITY:
        f.error("quantity", "must be at most 1e12")
    unit = f.text("unit", max_len=20)
    warehouse = f.text("warehouse", max_len=200)
    holder = f.text("holder", max_len=200)
    status = f.choice("status", tuple(s.value for s in ReceiptStatus))
    if "status" not in f.data:
        f.error("status", "is required (active, pledged, frozen or cancelled)")
    issued = timestamp(f, "issuedAt")
    expires = timestamp(f, "expiresAt", required=False)
    if issued is not None and expires is not None and expires <= issued:
        f.error("expiresAt", "must be after issuedAt")
    values = (number, commodity, grade, quantity, unit, warehouse, holder, status, issued)
    if f.errors or any(v is None for v in values):
        return None
    return ReceiptData(number, commodity, grade, quantity, unit, warehouse, holder,  # type: ignore[arg-type]
                       ReceiptStatus(status), issued, expires)  # type: ignore[arg-type]


def _duplicates(items: list[ReceiptData]) -> list[str]:
    seen: set[str] = set()
    errors = []
    for r in items:
        if r.receipt_no in seen:
            errors.append(f"receiptNo {r.receipt_no}: appears more than once in the file")
        seen.add(r.receipt_no)
    return errors


def _import(ns: argparse.Namespace) -> int:
    data = load_json_file(ns.file)
    items, errors = parse_items(data, parse_receipt)
    errors += _duplicates(items)
    if errors:
        raise CommandError(report(errors, len(data) if isinstance(data, list) else 0))
    repos = db(ns)
    index = {r.receipt_no: i for i, r in enumerate(items)}
    try:
        result = repos.receipts.import_all(items)
    except IllegalTransition as exc:
        raise CommandError(f"item {index[exc.subject]}: {exc}; nothing was imported") from None
    except ReceiptConflict as exc:
        raise CommandError(f"{exc}; nothing was imported") from None
    block = repos.evidence.anchor_all()
    print_json({
        "inserted": result.inserted, "updated": result.updated, "unchanged": result.unchanged,
        "anchored": None if block is None else
        {"blockHeight": block.height, "treeSize": block.tree_size, "merkleRoot": block.root.hex()},
        "receipts": [{"receiptNo": r.receipt_no, "evidenceHash": _evidence_hash(repos.receipts, r.receipt_no)}
                     for r in items],
    })
    return 0


def _evidence_hash(repo: AdminReceipts, receipt_no: str) -> str:
    view = repo.public(receipt_no)
    return view["evidenceHash"] if view else ""
