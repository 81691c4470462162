"""`GET /api/receipt/{receiptNo}` and `GET /api/verify-anchor?hash=H`.

verify-anchor answers 200 for every hash it knows: `pending`, `anchored` (with the
RFC 9162 inclusion proof) or `tampered` (`verified: false`: the stored proof, block
or chain no longer checks out). Unknown hashes are 404, malformed ones 400.
"""

from __future__ import annotations

import re

import orjson

from server.api.core.query import param_error
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.core.errors import ApiError
from server.market.timefmt import iso
from server.store.site.receipts import RECEIPT_NO_PATTERN
from server.store.sql.repositories import Evidence, Receipts

_RECEIPT_NO = re.compile(RECEIPT_NO_PATTERN)
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class SiteEvidenceApi:
    def __init__(self, receipts: Receipts, evidence: Evidence) -> None:
        self.receipts = receipts
        self.evidence = evidence

    def register(self, router: Router) -> None:
        router.add("GET", "/api/receipt/{receiptNo}", self.receipt, Access.PUBLIC, name="site_receipt")
        router.add("GET", "/api/verify-anchor", self.verify_anchor, Access.PUBLIC, name="site_verify_anchor")

    async def receipt(self, req: Request) -> Response:
        number = req.path_params["receiptNo"]
        if not _RECEIPT_NO.fullmatch(number):
            raise param_error("receiptNo", "receiptNo must match [A-Za-z0-9][A-Za-z0-9-]{2,63}")
        view = await self.receipts.public(number)
        if view is None:
            raise ApiError("not_found", f"No receipt {number}.")
        found = await self.evidence.lookup(view["evidenceHash"])
        view["anchored"] = found is not None and found["status"] == "anchored"
        return Response(200, orjson.dumps(view))

    async def verify_anchor(self, req: Request) -> Response:
        digest = req.query.get("hash")
        if digest is None or not _HEX64.fullmatch(digest):
            raise param_error("hash", "hash must be 64 hexadecimal characters (a SHA-256)")
        found = await self.evidence.lookup(digest)
        if found is None:
            raise ApiError("not_found", "This hash was never submitted.")
        if found["status"] == "anchored":
            found["anchoredAt"] = iso(found["anchoredAt"])
        return Response(200, orjson.dumps(found))
