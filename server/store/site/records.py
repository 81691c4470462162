"""Inquiries and cooperation intents, each written with its notification jobs in one transaction.

The records service is the outbox's only writer of new jobs: `add_inquiry` and
`add_cooperation` insert the record and one pending job per configured channel
(kind, target) inside the same transaction (each database's `_commit`), so a record and its
jobs land together or not at all, whether or not a delivery worker is running
(a worker started later finds the pending jobs). Payload: the record's public
fields (camelCase, including id and createdAt).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from server.market.timefmt import iso

# A notification channel as the outbox stores it: (kind, target), e.g. ("generic", "https://...").
ChannelSpec = tuple[str, str]

RECEIVED = "received"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_record_id(prefix: str, now: float) -> str:
    """`prefix_` + a ULID-like id: 48-bit millisecond time then 80 random bits, Crockford base32."""
    value = (int(now * 1000) & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = [_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5)]
    return f"{prefix}_{''.join(chars)}"


@dataclass(frozen=True, slots=True)
class Inquiry:
    user_id: str
    user_email: str | None
    product: str
    quantity: float
    unit: str | None = None
    message: str | None = None
    delivery_place: str | None = None
    contact_phone: str | None = None


@dataclass(frozen=True, slots=True)
class Cooperation:
    company: str
    contact_name: str
    email: str | None
    phone: str | None
    type: str
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    """What the client is told: the record's id, status and creation time."""

    id: str
    status: str
    created_at: str


@dataclass(frozen=True, slots=True)
class RecordWrite:
    """One record's row (table, columns, values) and its notification payload, built once for either database."""

    kind: str
    table: str
    columns: str
    params: tuple[Any, ...]
    payload: dict[str, Any]
    now: float
    accepted: Accepted


def inquiry_write(q: Inquiry, now: float) -> RecordWrite:
    rid = new_record_id("inq", now)
    created = iso(now)
    payload: dict[str, Any] = {
        "id": rid, "status": RECEIVED, "createdAt": created, "userId": q.user_id, "userEmail": q.user_email,
        "product": q.product, "quantity": q.quantity, "unit": q.unit, "message": q.message,
        "deliveryPlace": q.delivery_place, "contactPhone": q.contact_phone,
    }
    return RecordWrite(
        "inquiry", "inquiries",
        "id, user_id, user_email, product, quantity, unit, message, delivery_place, contact_phone, status, created_at",
        (rid, q.user_id, q.user_email, q.product, q.quantity, q.unit, q.message, q.delivery_place,
         q.contact_phone, RECEIVED, now),
        payload, now, Accepted(rid, RECEIVED, created),
    )


def cooperation_write(c: Cooperation, now: float) -> RecordWrite:
    rid = new_record_id("coop", now)
    created = iso(now)
    payload: dict[str, Any] = {
        "id": rid, "status": RECEIVED, "createdAt": created, "company": c.company,
        "contactName": c.contact_name, "email": c.email, "phone": c.phone, "type": c.type,
        "message": c.message,
    }
    return RecordWrite(
        "cooperation", "cooperations", "id, company, contact_name, email, phone, type, message, status, created_at",
        (rid, c.company, c.contact_name, c.email, c.phone, c.type, c.message, RECEIVED, now),
        payload, now, Accepted(rid, RECEIVED, created),
    )


class RecordsService:
    """The hub's records (SPEC 9): each record is built once, committed with its jobs by the database's
    subclass (`_commit`, one transaction), and then the worker is woken, whether or not one runs."""

    def __init__(self, channels: Sequence[ChannelSpec], clock: Callable[[], float] = time.time,
                 wake: Callable[[], None] = lambda: None) -> None:
        self.channels = tuple(channels)
        self.clock = clock
        self.wake = wake

    async def add_inquiry(self, inquiry: Inquiry) -> Accepted:
        return await self._insert(inquiry_write(inquiry, self.clock()))

    async def add_cooperation(self, cooperation: Cooperation) -> Accepted:
        return await self._insert(cooperation_write(cooperation, self.clock()))

    async def _insert(self, w: RecordWrite) -> Accepted:
        await self._commit(w)
        if self.channels:
            self.wake()
        return w.accepted

    async def _commit(self, w: RecordWrite) -> None:
        raise NotImplementedError
