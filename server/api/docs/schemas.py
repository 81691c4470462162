r"""JSON Schemas of every body the service sends or accepts, written once.

The OpenAPI document (REST) and the AsyncAPI document (/ws/quotes) both place these
under `components/schemas` and refer to them as `#/components/schemas/<Name>`;
`closure()` picks the named schemas with everything they refer to, so a Quote in a
WebSocket snapshot is the very schema of a Quote in `GET /api/v1/quotes`.

Request schemas state exactly the rules the handlers enforce, built from the handlers' own
constants: lengths as sent (maxLength counts the characters sent, surrounding whitespace
included), no NUL (U+0000) in any text, required strings not blank, patterns with the
whitespace the server trims allowed around them, the bounds of `quantity`, and `null`
accepted wherever a field is optional. "Whitespace" is one explicit character class
(server/api/core/body.py WS_CLASS), never `\s`, whose meaning differs between the
validators clients use. tests/contract/test_schemas.py holds the server to
these schemas in both directions, and every response and stream message to its schema.

Only keywords that mean the same in JSON Schema 2020-12 (OpenAPI 3.1) and draft-07
(AsyncAPI 3.0's default schema format) are used.
"""

from __future__ import annotations

import re

from server.api.auth.passwords import MAX_PASSWORD, MIN_PASSWORD
from server.api.docs.schema_parts import (
    BOOL,
    HEX64,
    INT,
    NOT_BLANK,
    NULLNUM,
    NULLTS,
    NUM,
    REF_PREFIX,
    STR,
    TS,
    S,
    anchored,
    obj,
    optional_pattern,
    optional_text,
    padded,
    ref,
    text,
)
from server.api.site.fields import EMAIL_PATTERN, MAX_EMAIL, MAX_PHONE, PHONE_PATTERN
from server.api.site.records import COOPERATION_TYPES, MAX_MESSAGE, MAX_QUANTITY, MIN_QUANTITY
from server.core.errors import ERROR_KINDS
from server.market.candles.intraday import INTERVALS
from server.market.catalogue import KINDS
from server.store.site.receipts import RECEIPT_NO_PATTERN
from server.stream.protocol.messages import CANDLE_INTERVALS, MAX_EPOCH, MAX_SEQ, ErrorCode
from server.stream.protocol.messages import MAX_IDS as MAX_STREAM_IDS

EMAIL_EXAMPLE = "trader@example.com"
PHONE_EXAMPLE = "+86 21 5555 0100"
# no "format": "email": a validator that asserts formats would refuse the surrounding whitespace the server trims
EMAIL: S = {"type": "string", "maxLength": MAX_EMAIL, "pattern": padded(EMAIL_PATTERN), "examples": [EMAIL_EXAMPLE],
            "description": "an e-mail address"}

# --- shared by REST and the stream ---------------------------------------------------------------

QUOTE_PROPS: dict[str, S] = {
    "id": STR, "kind": {"type": "string", "enum": list(KINDS)}, "name": ref("Localised"),
    "price": NULLNUM, "priceText": {"type": "string", "examples": ["2,415.00 CNY/t"]},
    "change": {**NULLNUM, "description": "price minus the previous daily close (a futures product's: minus "
                                         "prevSettle, SPEC 19), in the price's unit"},
    "changePct": {**NULLNUM, "description": "change in percent of the previous close (futures: of prevSettle)"},
    "source": ref("Localised"), "unit": ref("Localised"), "currency": STR, "updated": NULLTS,
    "venue": {"type": "string", "description": "the venue's id (GET /api/v1/venues)"},
    "tradingDay": {"type": ["string", "null"], "format": "date",
                   "description": "the trading day of the newest tick under its venue's rule (SPEC 16); null before "
                                  "the first tick"},
    "contract": {"type": ["string", "null"], "description": "a futures product only (its main continuous series, "
                 "SPEC 19): the day's main contract, whose quote this is (GET /api/v1/instruments/{id}/rolls)"},
}
FUTURES_PROPS: dict[str, S] = {  # SPEC 19, docs/futures.md: only a futures product's quote has them; null: unknown
    name: {**NULLNUM, "description": text} for name, text in {
        "bid": "best bid", "ask": "best ask", "bidSize": "lots at the bid", "askSize": "lots at the ask",
        "openInterest": "open interest (lots)", "oiChange": "open interest minus the previous day's",
        "volume": "the trading day's volume so far (lots)", "turnover": "the trading day's turnover so far",
        "prevSettle": "the previous trading day's settlement", "settle": "the day's settlement: null until known",
        "limitUp": "the day's upper price limit (null: none)", "limitDown": "the day's lower price limit"}.items()}
MARKET_STATUS: S = {"type": "string", "enum": ["open", "break", "closed"],
                    "description": "the venue now: in a session, between two sessions of one trading day, or shut"}
REQ_ID: S = {"description": "Echo of the client's reqId (null when the client sent none).",
             "oneOf": [{"type": "string", "maxLength": 128}, {"type": "integer"}, {"type": "null"}]}
STREAM_IDS: S = {"type": "array", "items": {"type": "string"}, "maxItems": MAX_STREAM_IDS,
                 "description": "Instrument ids, as in GET /api/v1/quotes."}


def _const(value: str) -> S:
    return {"type": "string", "const": value}


SHARED: dict[str, S] = {
    "Localised": obj(["zh", "en"], zh=STR, en=STR),
    "Quote": obj([k for k in QUOTE_PROPS if k != "contract"], **QUOTE_PROPS, **FUTURES_PROPS),
}

# --- REST responses ------------------------------------------------------------------------------

PAGE_PROPS: dict[str, S] = {"total": INT, "limit": INT, "offset": INT}

RESPONSES: dict[str, S] = {
    "Problem": obj(
        ["type", "title", "status", "detail", "code"],
        type={"type": "string", "format": "uri-reference",
              "description": "/problems/<code>, relative to the URL that answered: a page on this server "
                             "(HTML, or JSON with Accept: application/json)"}, title=STR, status=INT, detail=STR,
        code={"type": "string", "enum": sorted(ERROR_KINDS), "description": "stable snake_case identifier"},
        errors={"type": "array", "items": obj(["field", "message"], field=STR, message=STR),
                "description": "validation errors: one per bad field"},
        retryAfter={"type": "integer", "description": "on 429: seconds to wait"},
        requiredPlan={"type": "string", "description": "on plan_required: the plan that includes the resource"},
        currentPlan={"type": "string", "description": "on plan_required: the key's plan"},
        consoleUrl={"type": "string", "description": "on plan_required: where to ask for the plan"},
        limit={"type": "integer", "description": "on a refused WebSocket handshake (too_many_connections): "
                                                 "the connections the key's plan allows"},
    ),
    "ProblemPage": obj(
        ["type", "code", "status", "title", "description"],
        type=STR, code={"type": "string", "enum": sorted(ERROR_KINDS)}, status=INT, title=STR, description=STR,
    ),
    "QuoteExtended": obj(
        [*(k for k in QUOTE_PROPS if k != "contract"), "extended", "open", "high", "low", "prevClose", "volume", "seq",
         "marketStatus", "nextOpen", "nextClose"],
        **QUOTE_PROPS, **{k: v for k, v in FUTURES_PROPS.items() if k != "volume"}, extended={"const": True},
        open=NULLNUM, high=NULLNUM, low=NULLNUM, prevClose=NULLNUM,
        volume=NUM, seq={"type": "integer", "description": "ticks of this instrument since the server started"},
        marketStatus=MARKET_STATUS, nextOpen={**NULLTS, "description": "the venue's next session start"},
        nextClose={**NULLTS, "description": "the venue's next session end"},
    ),
    "Instrument": obj(
        ["id", "kind", "name", "source", "unit", "currency", "decimals", "venue", "publication", "intervals"],
        id=STR, kind={"type": "string", "enum": list(KINDS)}, name=ref("Localised"), source=ref("Localised"),
        unit=ref("Localised"), currency=STR, decimals=INT, venue=STR,
        publication={"type": "string", "enum": ["continuous", "daily", "monthly"],
                     "description": "continuous trading, an assessment published once a trading day, or a monthly "
                                    "contract price"},
        intervals={"type": "array", "items": {"type": "string", "enum": [*INTERVALS, "1d"]},
                   "description": "the candle intervals it has (a publication: 1d only)"},
        earliest={"type": "object", "additionalProperties": {"type": ["string", "null"]},
                  "description": "Only on GET /api/v1/instruments/{id} (SPEC 18): per interval of intervals, the t "
                                 "of the first candle held (as /kline writes it: ISO 8601 with offset, a date for "
                                 "1d), counting a live feed's stored history; null: none held"},
    ),
    "InstrumentList": obj(["instruments"], instruments={"type": "array", "items": ref("Instrument")}),
    "Venue": obj(
        ["id", "name", "timeZone", "publication", "status", "tradingDay", "nextOpen", "nextClose",
         "calendarKnownFrom", "calendarKnownUntil", "instruments"],
        id=STR, name=ref("Localised"), timeZone={"type": "string", "examples": ["Asia/Shanghai"]},
        publication={"type": "string", "enum": ["continuous", "daily", "monthly"]}, status=MARKET_STATUS,
        tradingDay={"type": "string", "format": "date", "description": "the trading day a tick now belongs to"},
        nextOpen=NULLTS, nextClose=NULLTS,
        calendarKnownFrom={"type": "string", "format": "date",
                           "description": "the first date the venue's calendar knows: a calendar request before it "
                                          "is a 400 naming from"},
        calendarKnownUntil={"type": "string", "format": "date",
                            "description": "past this date the venue's holidays are not known: weekdays are assumed"},
        instruments={"type": "array", "items": STR},
    ),
    "VenueList": obj(["venues"], venues={"type": "array", "items": ref("Venue")}),
    "VenueCalendar": obj(
        ["venue", "from", "to", "days", "holidays"], venue=STR,
        **{"from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}},
        days={"type": "array", "items": obj(["date", "sessions"], date={"type": "string", "format": "date"},
                                            sessions={"type": "array", "items": obj(["start", "end"], start=TS,
                                                                                   end=TS)}),
              "description": "each trading day with its session windows (a night session under the day it "
                             "belongs to), ISO 8601 with the venue's offset"},
        holidays={"type": "array", "items": obj(["date", "name"], date={"type": "string", "format": "date"},
                                                name=STR)},
    ),
    "QuoteList": obj(["updated", "count", "demo", "quotes"], updated=NULLTS, count=INT, demo=BOOL,
                     quotes={"type": "array", "items": ref("Quote")}),
    "Candle": obj(["t", "o", "h", "l", "c", "v"],
                  t={"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
                     "description": "interval=1d: the trading day (YYYY-MM-DD); intraday: the bucket's start, "
                                    "ISO 8601 with offset (+08:00)"},
                  o=NUM, h=NUM, l=NUM, c=NUM, v=NUM,
                  oi={**NULLNUM, "description": "futures, 1d only: the open interest at the close"},
                  s={**NULLNUM, "description": "futures, 1d only: the day's settlement (null until known)"}),
    "CandleSeries": obj(["id", "interval", "updated", "demo", "series"], id=STR,
                        interval={"type": "string", "enum": [*INTERVALS, "1d"]}, updated=NULLTS,
                        demo=BOOL,
                        series={"type": "array", "items": ref("Candle"),
                                "description": "ascending by t. 1d: one per trading day of the instrument's "
                                               "venue (SPEC 16). A trading day's candle (daily or intraday) exists "
                                               "from its first tick: before its session opens the series ends with "
                                               "the previous trading day (the quote's tradingDay and nextOpen name "
                                               "the day to come). "
                                               "Intraday: the most recent buckets that had a tick (none is "
                                               "invented); the last may still be filling"},
                        next={"type": ["string", "null"],
                              "description": "Range queries only (from/to given): with from, the t of the first "
                                             "candle of the range left out by limit (pass it as the next from), "
                                             "null when none is; without from always null"}),
    "UdfError": {**obj(["type", "title", "status", "detail", "code", "s", "errmsg"], type=STR, title=STR, status=INT,
                       detail=STR, code={"type": "string", "enum": sorted(ERROR_KINDS)}, s={"const": "error"},
                       errmsg={**STR, "description": "the same text as detail"},
                       errors={"type": "array", "items": obj(["field", "message"], field=STR, message=STR)},
                       retryAfter={"type": "integer", "description": "on 429: seconds to wait"}),
                 "description": "A problem document (RFC 9457) with the TradingView UDF error fields added"},
    "UdfConfig": obj(["supported_resolutions", "supports_search", "supports_group_request", "supports_marks",
                      "supports_timescale_marks", "supports_time"],
                     supported_resolutions={"type": "array", "items": STR}, supports_search=BOOL,
                     supports_group_request=BOOL, supports_marks=BOOL, supports_timescale_marks=BOOL,
                     supports_time=BOOL,
                     exchanges={"type": "array", "items": obj(["value", "name", "desc"], value=STR, name=STR,
                                                              desc=STR)},
                     symbols_types={"type": "array", "items": obj(["name", "value"], name=STR, value=STR)}),
    "UdfSymbol": obj(["name", "ticker", "description", "type", "session", "timezone", "exchange", "minmov",
                      "pricescale", "has_intraday", "supported_resolutions", "volume_precision", "data_status"],
                     name=STR, ticker=STR, description=STR, type={"type": "string", "enum": ["commodity", "forex"]},
                     session={**STR, "description": "the venue's weekly hours in the Charting Library's grammar, "
                                                    "venue time: windows:days|... (F/Fn: starts 1/n days before)",
                              "examples": ["2100F-2300,0900-1500:3456|2100F3-2300,0900-1500:2"]},
                     timezone={**STR, "description": "the venue's IANA time zone", "examples": ["Asia/Shanghai"]},
                     session_holidays={**STR, "description": "session days the venue is shut, YYYYMMDD,..."},
                     corrections={**STR, "description": "days whose windows differ from the session's, "
                                                        "windows:YYYYMMDD,...;..."},
                     exchange={**STR, "description": "the venue's code", "examples": ["ZCE"]}, minmov=INT,
                     pricescale={**INT, "description": "a futures product's tick is minmov / pricescale"},
                     has_intraday=BOOL,
                     supported_resolutions={"type": "array", "items": STR}, volume_precision=INT,
                     data_status={"type": "string", "enum": ["streaming", "endofday"],
                                  "description": "endofday: an assessment or monthly price (daily bars only)"},
                     listed_exchange=STR, has_daily=BOOL,
                     intraday_multipliers={"type": "array", "items": STR}, currency_code=STR,
                     unit={**STR, "description": "the price's unit, e.g. CNY/t"}),
    "UdfTimescaleMark": obj(["id", "time", "color", "label", "tooltip"], id=STR, time=INT, color=STR, label=STR,
                            tooltip={"type": "array", "items": STR}),
    "UdfSearchResult": obj(["symbol", "full_name", "description", "exchange", "ticker", "type"], symbol=STR,
                           full_name=STR, description=STR, exchange=STR, ticker=STR, type=STR),
    "UdfHistory": {"type": "object", "required": ["s"], "properties": {
        "s": {"type": "string", "enum": ["ok", "no_data"]},
        "t": {"type": "array", "items": INT, "description": "bar times, epoch seconds, ascending"},
        "o": {"type": "array", "items": NUM}, "h": {"type": "array", "items": NUM},
        "l": {"type": "array", "items": NUM}, "c": {"type": "array", "items": NUM},
        "v": {"type": "array", "items": NUM},
        "nextTime": {**INT, "description": "no_data only: the newest bar before from, when there is one"}}},
    "Spread": obj(
        ["pair", "shfe", "dce", "intl", "basis", "note", "cfrUsd", "fx", "tariff", "vat", "portFee", "basisPct"],
        pair={"type": "string", "enum": ["methanol", "PTA", "PP", "PE", "PVC"]},
        # the field names are historical (kept: contract); the descriptions say what the values are
        shfe={**NUM, "description": "domestic futures, main contract, CNY/t: ZCE MA (methanol), ZCE TA (PTA), DCE PP, "
                                    "DCE L (PE), DCE V (PVC); not a Shanghai Futures Exchange price"},
        dce={**NUM, "description": "East China spot assessment, CNY/t (not a Dalian exchange price)"},
        intl={**NUM, "description": "import parity: cfrUsd x fx x (1 + tariff) x (1 + vat) + portFee, CNY/t"},
        basis={**NUM, "description": "(shfe + dce) / 2 - intl, CNY/t"},
        note={**STR, "description": "names the futures contract and the spot market of this pair, and the formula"},
        cfrUsd={**NUM, "description": "CFR China import price, USD/t"}, fx={**NUM, "description": "USD/CNY"},
        tariff={**NUM, "description": "MFN import duty, a fraction"}, vat={**NUM, "description": "import VAT, 0.13"},
        portFee={**NUM, "description": "port/landing charge, CNY/t"},
        basisPct={**NUM, "description": "100 x basis / intl"},
    ),
    "SpreadList": obj(["updated", "demo", "spreads"], updated=NULLTS, demo=BOOL,
                      spreads={"type": "array", "items": ref("Spread")}),
    "InventoryItem": obj(["id", "name", "type", "level", "unit", "wow", "wowPct"], id=STR, name=ref("Localised"),
                         type={"type": "string", "enum": ["port", "social", "factory"]}, level=NUM, unit=STR,
                         wow=NUM, wowPct=NUM),
    "InventoryList": obj(["updated", "demo", "items"], updated=NULLTS, demo=BOOL,
                         items={"type": "array", "items": ref("InventoryItem")}),
    "Category": obj(["id", "name", "count", "quotes"], id=STR, name=ref("Localised"), count=INT,
                    quotes={"type": "array", "items": ref("Quote")}),
    "MarketSnapshot": obj(["updated", "refreshSeconds", "demo", "categories"], updated=TS, refreshSeconds=NUM,
                          demo=BOOL, categories={"type": "array", "items": ref("Category")}),
    "CategorySnapshot": obj(["updated", "refreshSeconds", "demo", "id", "name", "count", "quotes"], updated=TS,
                            refreshSeconds=NUM, demo=BOOL, id=STR, name=ref("Localised"), count=INT,
                            quotes={"type": "array", "items": ref("Quote")}),
    "NewsItem": obj(["id", "title", "summary", "source", "publishedAt", "tags"], id=STR, title=ref("Localised"),
                    summary=ref("Localised"), source=STR, publishedAt=TS, tags={"type": "array", "items": STR}),
    "ResearchItem": obj(["id", "title", "summary", "source", "publishedAt", "tags", "author", "category"],
                        id=STR, title=ref("Localised"), summary=ref("Localised"), source=STR, publishedAt=TS,
                        tags={"type": "array", "items": STR}, author=STR, category=STR),
    "NewsPage": obj(["items", "total", "limit", "offset"], items={"type": "array", "items": ref("NewsItem")},
                    **PAGE_PROPS),
    "ResearchPage": obj(["items", "total", "limit", "offset"],
                        items={"type": "array", "items": ref("ResearchItem")}, **PAGE_PROPS),
    "Registered": obj(["id", "email"], id=STR, email=STR),
    "Token": obj(["token", "tokenType", "expiresIn"], token=STR, tokenType={"const": "Bearer"},
                 expiresIn={"type": "integer", "description": "seconds"}),
    "Created": obj(["id", "status", "createdAt"], id=STR, status={"const": "received"}, createdAt=TS),
    "Receipt": obj(
        ["receiptNo", "commodity", "grade", "quantity", "unit", "warehouse", "holder", "status", "issuedAt",
         "expiresAt", "evidenceHash", "anchored"],
        receiptNo={"type": "string", "pattern": anchored(RECEIPT_NO_PATTERN)}, commodity=STR, grade=STR,
        quantity=NUM, unit=STR, warehouse=STR,
        holder={"type": "string", "description": "masked: at most half of the characters are shown"},
        status={"type": "string", "enum": ["active", "pledged", "frozen", "cancelled"]}, issuedAt=TS,
        expiresAt=NULLTS, evidenceHash=HEX64, anchored=BOOL,
    ),
    "Verification": {
        **obj(["hash", "verified", "status"], hash=HEX64, verified=BOOL,
              status={"type": "string", "enum": ["pending", "anchored", "tampered"]},
              anchoredAt=TS, ledger=STR, blockHeight=INT, txHash=HEX64, merkleRoot=HEX64, leafIndex=INT,
              treeSize=INT, proof={"type": "array", "items": HEX64,
                                   "description": "RFC 9162 inclusion proof: recomputes merkleRoot from hash"}),
        "description": "pending and tampered: hash, verified false, status; anchored: verified true and the rest",
    },
    "ClientConfig": obj(["wsPort", "wsPath", "demo", "heartbeatS"],
                        wsPort={**INT, "description": "port of ws://HOST:PORT/ws/quotes"},
                        wsPath={"const": "/ws/quotes"}, demo=BOOL,
                        heartbeatS={"type": "number", "minimum": 0,
                                    "description": "seconds between stream heartbeats (--heartbeat-s; 0: none)"}),
    "Health": obj(["status"], status={"const": "ok"}),
    "Ready": obj(["status", "checks", "epoch"], status={"const": "ready"},
                 checks={"type": "object", "additionalProperties": BOOL, "description": "each check: true"},
                 epoch={"type": "string", "description": "identifies this server start, as in the stream"},
                 node={"type": "string", "description": "this hub process's id (several hubs may share a port)"},
                 worker={**INT, "description": "its number under `serve --workers N` (1..N); 0 for a hub on its own"}),
}

# --- REST requests: the handlers' rules ----------------------------------------------------------

REQUESTS: dict[str, S] = {
    "Register": obj(["email", "password"], email=EMAIL,
                    password={"type": "string", "minLength": MIN_PASSWORD, "maxLength": MAX_PASSWORD,
                              "description": "taken verbatim (not trimmed)"},
                    name=optional_text(100), company=optional_text(200)) | {"additionalProperties": False},
    "Login": obj(["email", "password"], email=text(MAX_EMAIL), password={"type": "string"}),
    "Inquiry": obj(["product", "quantity"], product=text(200),
                   quantity={"type": "number", "minimum": MIN_QUANTITY, "maximum": MAX_QUANTITY,
                             "description": f"in `unit`; at least {MIN_QUANTITY} (a thousandth of the unit)"},
                   unit=optional_text(20), message=optional_text(MAX_MESSAGE), deliveryPlace=optional_text(200),
                   contactPhone=optional_pattern(PHONE_PATTERN, MAX_PHONE, "phone number", PHONE_EXAMPLE)),
    "Cooperation": {
        **obj(["company", "contactName"], company=text(200), contactName=text(100),
              email=optional_pattern(EMAIL_PATTERN, MAX_EMAIL, "e-mail address", EMAIL_EXAMPLE),
              phone=optional_pattern(PHONE_PATTERN, MAX_PHONE, "phone number", PHONE_EXAMPLE),
              type={"type": ["string", "null"], "enum": [*COOPERATION_TYPES, None], "default": "other"},
              message=optional_text(MAX_MESSAGE)),
        "anyOf": [obj(["email"], email={"type": "string", "pattern": NOT_BLANK}),
                  obj(["phone"], phone={"type": "string", "pattern": NOT_BLANK})],
        "description": "at least one of email or phone",
    },
}

# --- /ws/quotes messages -------------------------------------------------------------------------

CANDLE_INTERVAL: S = {"type": "string", "enum": list(CANDLE_INTERVALS)}
STREAM: dict[str, S] = {
    "Snapshot": obj(["type", "updated", "epoch", "seqs", "quotes"], type=_const("snapshot"), updated=NULLTS,
                    epoch={"type": "string", "description": "Names the tick history the seqs belong to: it changes "
                                                            "when that history is lost (every start of a memory-"
                                                            "engine server). seq values are comparable only within "
                                                            "one epoch; a resume (since) names it."},
                    seqs={"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                          "description": "Each quote's instrument id -> the seq of its last tick in this snapshot "
                                         "(0: none yet in this epoch): where a resume's since starts."},
                    quotes={"type": "array", "items": ref("Quote")}),
    "Tick": obj(["type", "id", "price", "change", "ts", "seq"], type=_const("tick"), id=STR, price=NUM,
                change={**NUM, "description": "price minus the previous daily close (futures: prevSettle)"}, ts=TS,
                bid={**NULLNUM, "description": "futures only: best bid"}, ask={**NULLNUM, "description": "best ask"},
                oi={**NULLNUM, "description": "futures only: open interest"},
                vol={**NUM, "description": "futures only: the trading day's volume so far"},
                contract={"type": ["string", "null"], "description": "a futures product's (its main continuous "
                          "series, SPEC 19): the main contract whose tick this is"},
                seq={"type": "integer", "minimum": 1, "description": "That instrument's tick count since the "
                     "server started (epoch). A jump means ticks were conflated or missed."}),
    "Roll": obj(["type", "id", "from", "to", "tradingDay"], type=_const("roll"),
                id={"type": "string", "description": "the futures product (its main continuous series)"},
                to={"type": "string", "description": "the new main contract's id"},
                tradingDay={"type": "string", "format": "date", "description": "the new main's first trading day"},
                **{"from": {"type": "string", "description": "the previous main contract's id"}}),
    "CandleFrame": obj(["type", "id", "interval", "t", "o", "h", "l", "c", "v", "final", "seq"], type=_const("candle"),
                  id=STR, interval=CANDLE_INTERVAL,
                  t={"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
                     "description": "as in /api/v1/kline for the interval: 1d the trading day (YYYY-MM-DD), intraday "
                                    "the bucket's start (ISO 8601, +08:00)"},
                  o=NUM, h=NUM, l=NUM, c=NUM, v=NUM,
                  final={"type": "boolean", "description": "true: the bucket ended (exactly one such frame per "
                         "bucket that had ticks, within 1 s of its end by the server clock); equal to what "
                         "/api/v1/kline returns for it. false: the bucket is still filling (at most one such frame "
                         "per id and interval per second, the latest)"},
                  seq={"type": "integer", "minimum": 0, "description": "seq of the last tick included"}),
    "Heartbeat": obj(["type", "ts", "seqs"], type=_const("heartbeat"), ts=TS,
                     seqs={"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                           "description": "each subscribed id -> the seq of its last tick, written after those "
                                          "ticks: an entry above the last tick seen is a gap (resume)"}),
    "Subscribed": obj(["type", "ids", "reqId"], type=_const("subscribed"), ids=STREAM_IDS, reqId=REQ_ID,
                      candles={"type": "array", "items": CANDLE_INTERVAL,
                               "description": "Only when the message carried candles: every interval the session "
                                              "now receives candle frames of (for at least one id)"},
                      recovered={"type": "boolean", "description": "Only on a subscribe with since/epoch. true: "
                                 "exactly the missed ticks follow, in seq order per instrument, then live ticks (no "
                                 "snapshot). false: a snapshot of the set follows."},
                      resolved={"type": "object", "additionalProperties": {"type": "string"},
                                "description": "Only when the message named continuous ids (SPEC 19: "
                                               "{product}.c.N, {product}.n.N): each -> the contract id it named at "
                                               "that instant, which ids, ticks and seqs then use. The session keeps "
                                               "that contract after a roll; subscribe again to resolve anew."}),
    "Status": obj(["type", "venue", "status", "ts"], type=_const("status"),
                  venue={"type": "string", "description": "the venue id (GET /api/v1/venues)"},
                  status={"type": "string", "enum": ["open", "break", "closed", "stale"],
                          "description": "stale (SPEC 20): open, but none of its continuously traded instruments "
                                         "ticked for --stale-after seconds; open again when ticks return"}, ts=TS),
    "Pong": obj(["type", "ts", "reqId"], type=_const("pong"), ts=TS, reqId=REQ_ID),
    "Error": obj(["type", "code", "detail", "reqId"], type=_const("error"),
                 code={"type": "string", "enum": [c.value for c in ErrorCode]}, detail=STR, reqId=REQ_ID),
    "Subscribe": obj(["op", "ids"], op=_const("subscribe"), ids=STREAM_IDS, reqId=REQ_ID,
                     since={"type": "object", "maxProperties": MAX_STREAM_IDS,
                            "additionalProperties": {"type": "integer", "minimum": 0, "maximum": MAX_SEQ},
                            "description": "Resume: instrument id (each also in ids) -> the last seq the client saw "
                                           "(from a tick, or the snapshot's seqs). Given together with epoch."},
                     epoch={"type": "string", "minLength": 1, "maxLength": MAX_EPOCH,
                            "description": "Resume: the epoch those seqs belong to (from the snapshot)."},
                     candles={"type": "array", "items": CANDLE_INTERVAL,
                              "description": "Live candle intervals for these ids (replaces the session's; absent: "
                                             "none)."}),
    "Unsubscribe": obj(["op", "ids"], op=_const("unsubscribe"), ids=STREAM_IDS, reqId=REQ_ID,
                       candles={"type": "array", "items": CANDLE_INTERVAL,
                                "description": "With candles: remove these intervals of the ids (of every "
                                               "subscribed id when ids is empty); the ids stay subscribed."}),
    "Ping": obj(["op"], op=_const("ping"), reqId=REQ_ID),
}

SCHEMAS: dict[str, S] = {**SHARED, **RESPONSES, **REQUESTS, **STREAM}
_REF = re.compile(re.escape(REF_PREFIX) + r"(\w+)")


def closure(*names: str) -> dict[str, S]:
    """The named schemas and every schema they refer to, in SCHEMAS order."""
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(_REF.findall(repr(SCHEMAS[name])))
    return {name: schema for name, schema in SCHEMAS.items() if name in wanted}
