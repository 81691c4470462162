"""The OpenAPI description of the instruments routes with the futures contracts (SPEC 16, 19), merged into
server/api/docs/openapi.py's document."""

from __future__ import annotations

from server.api.market.contract_views import PRODUCT_PATTERN, SYMBOL_PATTERN

S = dict  # a JSON schema fragment
STR: S = {"type": "string"}
DAY: S = {"type": "string", "format": "date"}


def _ref(name: str) -> S:
    return {"$ref": f"#/components/schemas/{name}"}


CONTRACT = {
    "id": {**STR, "description": "{product}-{YYYYMM}", "examples": ["methanol-202605"]},
    "symbol": {**STR, "description": "the exchange's code: ZCE MA605, DCE/SHFE/INE pp2605, CME/ICE CLM6",
               "examples": ["MA605"]},
    "product": STR, "venue": STR,
    "month": {**STR, "pattern": r"^[0-9]{4}-(0[1-9]|1[0-2])$", "description": "the delivery month"},
    "firstTradingDay": {**DAY, "description": "the trading day after the contract listed before it expired (the "
                                              "Chinese exchanges' listing day; for CME/ICE the day this service "
                                              "starts to list it)"},
    "lastTradingDay": {**DAY, "description": "by the exchange's rule, counted on the venue's calendar"},
    "provisional": {"type": "boolean", "description": "a date here lies past the venue's calendarKnownUntil: "
                                                      "counted on weekdays, it may move when holidays are published"},
    "tickSize": {"type": "number"}, "multiplier": {"type": "number"},
    "limitPct": {"type": ["number", "null"], "description": "daily price limit, a fraction of the previous "
                                                            "settlement; null: the venue has none"},
    "status": {"type": "string", "enum": ["listed", "expired"],
               "description": "on the venue's current trading day: expired after the last trading day's close"},
}
ROLL = {"tradingDay": {**DAY, "description": "the new main's first trading day"},
        "from": {**STR, "description": "the previous main contract"}, "to": {**STR, "description": "the new main"},
        "fromClose": {"type": ["number", "null"], "description": "the previous main's close on the day before"},
        "toClose": {"type": ["number", "null"], "description": "the new main's close on the day before"}}
NUMS = {"type": ["number", "null"]}
CURVE_POINT = {
    "id": STR, "symbol": STR, "month": STR, "lastTradingDay": DAY,
    **{name: {**NUMS, "description": text} for name, text in {
        "price": "the contract's last price", "change": "price minus prevSettle", "settle": "the day's settlement "
        "(null until known)", "prevSettle": "the previous settlement", "openInterest": "open interest (lots)",
        "volume": "the trading day's volume so far", "spread": "price minus the main contract's price (the "
        "calendar spread)"}.items()}}
CONTRACT_SCHEMAS: dict[str, S] = {
    "Curve": {"type": "object", "required": ["id", "updated", "demo", "main", "contracts"], "properties": {
        "id": STR, "updated": {"type": ["string", "null"]}, "demo": {"type": "boolean"},
        "main": {"type": ["string", "null"], "description": "the main contract (the product's continuous series)"},
        "contracts": {"type": "array", "description": "the contracts listed today, in expiry order",
                      "items": {"type": "object", "required": list(CURVE_POINT), "properties": CURVE_POINT}}}},
    "RollList": {"type": "object", "required": ["id", "contract", "rolls"], "properties": {
        "id": STR, "contract": {"type": ["string", "null"], "description": "the main contract now"},
        "rolls": {"type": "array", "items": {"type": "object", "required": list(ROLL), "properties": ROLL}}}},
    "Contract": {"type": "object", "required": list(CONTRACT), "properties": CONTRACT},
    "ContractList": {"type": "object", "required": ["product", "instruments"], "properties": {
        "product": STR, "instruments": {"type": "array", "items": _ref("Contract")}}},
}


def _param(name: str, schema: S, description: str) -> S:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _answer(description: str, *schemas: str) -> S:
    return {"description": description, "content": {"application/json": {"schema": {
        "anyOf": [_ref(name) for name in schemas]}}}}


def _problem(description: str) -> S:
    return {"description": description, "content": {"application/problem+json": {"schema": _ref("Problem")}}}


CONTRACT_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/instruments"): {
        "summary": "Reference data: every instrument with its venue, publication and candle intervals; with product "
                   "or symbol, futures contracts (SPEC 19)", "tags": ["reference data"],
        "parameters": [
            _param("product", {**STR, "pattern": PRODUCT_PATTERN, "examples": ["methanol"]},
                   "a futures product: its listed contracts and those expired within a year, by delivery month"),
            _param("symbol", {**STR, "pattern": SYMBOL_PATTERN, "examples": ["MA605"]},
                   "an exchange code (case as the exchange writes it): the contract it names, listed or expired "
                   "within a year; a one-digit year (ZCE MA605, CME CLM6) names the nearest such contract"),
        ],
        "responses": {
            "200": _answer("no parameter: {instruments: [Instrument]}; product or symbol: {product, instruments: "
                           "[Contract]}", "InstrumentList", "ContractList"),
            "400": _problem("product and symbol both given, or one not in its form (a symbol's month not 01-12, "
                            "MA613) "
                            "(invalid_parameter, errors[].field names it)"),
            "404": _problem("no such futures product, or no listed or recently expired contract has the symbol"),
        },
    },
    ("GET", "/api/v1/instruments/{id}"): {
        "summary": "One instrument's reference data, or a futures contract's ({product}-{YYYYMM})",
        "tags": ["reference data"],
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": STR,
                        "description": "instrument id (brent, methanol, usdcny) or contract id (methanol-202605)"}],
        "responses": {"200": _answer("an instrument, or a contract", "Instrument", "Contract"),
                      "404": _problem("unknown instrument, or a contract not listed yet")},
    },
    ("GET", "/api/v1/curve/{product}"): {
        "summary": "A futures product's curve (SPEC 19): its listed contracts in expiry order with price, settlement, "
                   "open interest, volume and the calendar spread to the main contract", "tags": ["market data"],
        "parameters": [{"name": "product", "in": "path", "required": True, "schema": STR,
                        "description": "a futures product id (methanol, brent)"}],
        "responses": {"200": _answer("the curve", "Curve"),
                      "400": _problem("a query parameter (it takes none): unknown_parameter"),
                      "404": _problem("not a futures product with contracts")},
    },
    ("GET", "/api/v1/instruments/{id}/rolls"): {
        "summary": "A futures product's main contract rolls (SPEC 19): the product id is the main continuous series; "
                   "each roll is decided after a close from that day's open interest (+10%, never back, on the "
                   "main's last trading day whatever the margin)", "tags": ["reference data"],
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": STR,
                        "description": "a futures product id (methanol, brent)"}],
        "responses": {"200": _answer("the main contract now and the rolls, oldest first", "RollList"),
                      "400": _problem("a query parameter (it takes none): unknown_parameter"),
                      "404": _problem("not a futures product with contracts")},
    },
}
