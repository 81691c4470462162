"""`POST /api/submit-inquiry` (Bearer, 30/min per user) and `POST /api/cooperation` (open to all).

Both answer 201 `{id, status: "received", createdAt}` only after the record and its
notification jobs are committed (one transaction, written by the records service).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.api.core.body import Fields, json_object, trimmed
from server.api.core.pipeline import json_response
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.site import fields as site_fields
from server.api.site.accounts import BearerAuth
from server.store.site.records import Accepted, Cooperation, Inquiry
from server.store.sql.repositories import Records

MAX_MESSAGE = 2000
MAX_QUANTITY = 1e12
# a thousandth of the unit (a kilogram of a tonne): 5e-324 of anything is not an inquiry
MIN_QUANTITY = 0.001
COOPERATION_TYPES = ("data", "partnership", "advertising", "other")

# check_bucket(bucket, subject, per_minute): raises the 429 when the subject's bucket is empty
BucketCheck = Callable[[str, str, int], Any]


class SiteRecordsApi:
    def __init__(self, repo: Records, auth: BearerAuth, check_bucket: BucketCheck, inquiry_rate: int) -> None:
        self.repo = repo
        self.auth = auth
        self.check_bucket = check_bucket
        self.inquiry_rate = inquiry_rate

    def register(self, router: Router) -> None:
        router.add("POST", "/api/submit-inquiry", self.inquiry, Access.PUBLIC, name="site_inquiry")
        router.add("POST", "/api/cooperation", self.cooperation, Access.PUBLIC, name="site_cooperation")

    async def inquiry(self, req: Request) -> Response:
        user = await self.auth.user(req)
        self.check_bucket("inquiry", user.id, self.inquiry_rate)
        f = Fields(json_object(req))
        product = f.text("product", max_len=200)
        quantity = f.number("quantity", positive=True)
        if quantity is not None and quantity > MAX_QUANTITY:
            f.error("quantity", f"must be at most {MAX_QUANTITY:.0e}")
        elif quantity is not None and quantity < MIN_QUANTITY:
            f.error("quantity", f"must be at least {MIN_QUANTITY}")
        record = Inquiry(
            user_id=user.id,
            user_email=user.email,
            product=product or "",
            quantity=quantity or 0.0,
            unit=f.text("unit", required=False, max_len=20),
            message=f.text("message", required=False, max_len=MAX_MESSAGE),
            delivery_place=f.text("deliveryPlace", required=False, max_len=200),
            contact_phone=site_fields.phone(f, "contactPhone"),
        )
        f.check()
        return _created(await self.repo.add_inquiry(record))

    async def cooperation(self, req: Request) -> Response:
        f = Fields(json_object(req))
        company = f.text("company", max_len=200)
        contact_name = f.text("contactName", max_len=100)
        email = site_fields.email(f, required=False)
        phone = site_fields.phone(f, "phone")
        if email is None and phone is None and not _present(f, "email") and not _present(f, "phone"):
            f.error("email", "email or phone is required")
            f.error("phone", "email or phone is required")
        record = Cooperation(
            company=company or "",
            contact_name=contact_name or "",
            email=email,
            phone=phone,
            type=f.choice("type", COOPERATION_TYPES, default="other") or "other",
            message=f.text("message", required=False, max_len=MAX_MESSAGE),
        )
        f.check()
        return _created(await self.repo.add_cooperation(record))


def _present(f: Fields, name: str) -> bool:
    """A non-empty value was sent (maybe an invalid one, already reported on its own)."""
    value = f.data.get(name)
    return value is not None and not (isinstance(value, str) and not trimmed(value))


def _created(receipt: Accepted) -> Response:
    return json_response({"id": receipt.id, "status": receipt.status, "createdAt": receipt.created_at}, 201)
