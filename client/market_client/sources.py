"""A dedicated data source (SPEC 20, docs/ingest.md): an enterprise account declares instruments of its own in its
namespace and publishes their ticks with an ingest key; its read keys then see them as any other instrument.

    with MarketClient(url) as api:                          # the account's console (Bearer)
        api.login("desk@acme.example", "...")
        api.console.declare_instrument("acme.crude-blend", name={"zh": "定制原油", "en": "Custom crude blend"},
                                       unit={"zh": "美元/桶", "en": "USD/bbl"}, currency="USD", decimals=2,
                                       venue="ice-eu")
        publisher = api.console.create_key("feed", scope="ingest").key
    with MarketClient(url, key=publisher) as feed:         # publishing: JSON lines, at most 1 MiB a call
        answer = feed.ingest([{"id": "acme.crude-blend", "price": 80.25, "volume": 3}])
        answer.accepted, answer.rejected                    # bad lines by number (from 1); the good ones are kept
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from market_client._calls import Call, RawBody, _body, _seg
from market_client.models import Localised, Model

BASE = "/api/console/instruments"
INGEST_MEDIA_TYPE = "application/x-ndjson"


class DeclaredInstrument(Model):
    id: str
    name: Localised
    unit: Localised
    currency: str
    decimals: int
    venue: str  # whose trading days and sessions it follows
    session: str | None
    created_at: str


class DeclaredInstruments(Model):
    namespace: str | None  # None until an operator grants one
    items: list[DeclaredInstrument]
    venues: list[str] = msgspec.field(default_factory=list)  # the venues a declaration may name


class IngestRejection(Model):
    line: int  # from 1
    error: str


class IngestAnswer(Model):
    accepted: int
    rejected: list[IngestRejection]  # the first 1,000 bad lines
    rejected_count: int  # every bad line


def instruments() -> Call[DeclaredInstruments]:
    return Call("GET", BASE, DeclaredInstruments, auth="bearer")


def declare(instrument_id: str, name: Mapping[str, str], unit: Mapping[str, str], currency: str, decimals: int,
            venue: str, session: str | None = None) -> Call[DeclaredInstrument]:
    body = _body(id=instrument_id, name=dict(name), unit=dict(unit), currency=currency, decimals=decimals,
                 venue=venue, session=session)
    return Call("POST", BASE, DeclaredInstrument, body=body, auth="bearer")


def delete(instrument_id: str) -> Call[None]:
    return Call("DELETE", f"{BASE}/{_seg(instrument_id)}", type(None), auth="bearer")


def ingest(ticks: Iterable[Mapping[str, Any]] | bytes | str, idempotency_key: str | None = None) -> Call[IngestAnswer]:
    """`ticks`: mappings `{id, price, ts?, volume?}` (one line each), or JSON lines already made; the call's
    Idempotency-Key is `idempotency_key`, else a new UUID (the call's retries then keep the batch once)."""
    if isinstance(ticks, str):
        data = ticks.encode()
    elif isinstance(ticks, bytes):
        data = ticks
    else:
        data = b"".join(msgspec.json.encode(t) + b"\n" for t in ticks)
    key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
    return Call("POST", "/api/v1/ingest", IngestAnswer, body=RawBody(data, INGEST_MEDIA_TYPE), auth="key",
                headers={"Idempotency-Key": key})
