"""The OpenAPI document's tags: the groups /docs shows, in order, with their descriptions; used by
server/api/docs/openapi.py."""

from __future__ import annotations

S = dict  # a JSON schema fragment

# /docs shows the groups in this order (Swagger UI follows the document's `tags`): market data first
TAGS: list[S] = [
    {"name": "market data", "description": "Keyed (header X-SERVICE-Key): quotes, candles, spreads, inventories. "
                                           "Live ticks: WebSocket /ws/quotes, described in /asyncapi.json"},
    {"name": "reference data", "description": "Keyed: instruments, venues, their sessions, trading days and "
                                              "holidays (SPEC 16)"},
    {"name": "flat files", "description": "Keyed, professional and enterprise plans: a closed trading day's ticks "
                                          "and candles as one CSV.gz or Parquet file each (SPEC 18)"},
    {"name": "TradingView UDF", "description": "Keyed: the TradingView UDF datafeed (SPEC 14) over the same candles "
                                               "as /api/v1/kline; errors add UDF's s and errmsg to the problem"},
    {"name": "public site", "description": "The public site's market snapshot, news and research (no key)"},
    {"name": "accounts", "description": "Site accounts and their Bearer tokens"},
    {"name": "inquiries", "description": "Purchase inquiries and cooperation intents (notified by e-mail and "
                                         "enterprise messaging)"},
    {"name": "receipts", "description": "Digital warehouse receipts and their on-chain evidence"},
    {"name": "dashboard", "description": "The web dashboard's page, files and configuration"},
    {"name": "operations", "description": "Health, readiness, metrics and these documents"},
    {"name": "console", "description": "The service console (Bearer JWT): an account's keys, usage, plan "
                                       "requests and audit list; operators decide the requests"},
]
