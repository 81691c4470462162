"""The AsyncAPI 3.0 document of /ws/quotes and /ws/ingest (SPEC 20), served at /asyncapi.json (serialised once).

It describes the server, the channel and its `key` query parameter, every
server and client message, the client operations, the close codes and the
HTTP statuses of a refused handshake, so a client in any language can be
written from it alone. Message payloads are the shared schemas of
server/api/docs/schemas.py: a snapshot's Quote is the Quote of GET /api/v1/quotes.
"""

from __future__ import annotations

from typing import Any

import orjson

from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.docs.ingest_docs import INGEST_SCHEMAS
from server.api.docs.schema_parts import obj, ref
from server.api.docs.schemas import STREAM, closure
from server.api.market.ingest import MAX_REJECTED
from server.config import HttpSettings, StreamSettings
from server.core.errors import CloseCode

CLOSE_CODE_MEANINGS: dict[CloseCode, str] = {
    CloseCode.NORMAL: "Normal closure (the client's close is echoed).",
    CloseCode.GOING_AWAY: "The server is shutting down.",
    CloseCode.POLICY_VIOLATION: "More than 20 client messages (text, binary, ping or pong frames) within a second, "
                                "or no opening handshake within 10 s.",
    CloseCode.MESSAGE_TOO_BIG: "A client message over 64 KiB (65,536 bytes).",
    CloseCode.INTERNAL_ERROR: "No pong within 20 s of a keepalive ping (sent every 20 s).",
    CloseCode.KEY_REVOKED: "The API key was revoked (sessions close within 5 s of `keys revoke`).",
    CloseCode.PLAN_CHANGED: "The key's plan changed and no longer covers this session: a plan without the "
                            "stream (free), or a lower connection cap (the newest sessions over it close); "
                            "within 1 s of the change, on every hub.",
    CloseCode.SLOW_CONSUMER: "The client stayed over its buffer cap for 10 s (slow consumer), or its unread "
                             "control replies passed the hard cap.",
}

REFUSALS = {
    "400": "Not a valid WebSocket upgrade request (`bad_handshake`; 426 `upgrade_required` without Upgrade).",
    "401": "Missing, unknown or revoked key, or two X-SERVICE-Key headers (`unauthorized`).",
    "403": "The key's plan has no WebSocket access: the free plan (`plan_required`, with `requiredPlan`).",
    "404": "Unknown path (`not_found`).",
    "429": "The key already has as many open connections as its plan allows: professional 5, enterprise 50 "
           "by default (`too_many_connections`, with `limit`).",
}

MESSAGE_DOCS = {
    "Snapshot": "Always the first message (every instrument), and again after each subscribe/unsubscribe "
                "acknowledgement, for the new set (after a resume only when it was not recovered). `seqs` gives "
                "each instrument's seq as of the snapshot: the starting point of a later resume's `since`.",
    "Tick": "One price change. Each tick is serialised once and the same frame goes to every subscriber; ticks "
            "of one feed batch arrive in one write. A slow client gets only the latest tick per instrument. A futures "
            "product's tick also carries `bid`, `ask`, `oi` and `vol` (the day's volume so far; SPEC 19), and a "
            "product's (its main continuous series) `contract`, the main contract it repeats.",
    "Roll": "SPEC 19: a futures product's main contract changed (decided after the previous trading day's close by "
            "the open-interest rule); sent to the product's subscribers right before the first tick under the new "
            "main, in the same write. `from` and `to` are contract ids; `tradingDay` the new main's first day.",
    "Subscribed": "Acknowledges a subscribe or unsubscribe with the full current set. On a resume (a "
                  "subscribe with since/epoch) it carries `recovered`: true when the epoch matches and every "
                  "missed tick is held, and exactly the missed ticks follow (per instrument in seq order, "
                  "instruments in catalogue order), then live ticks with no gap and no duplicate, no snapshot; "
                  "false otherwise, and a snapshot of the set follows.",
    "CandleFrame": "SPEC 14 live candles of the intervals a subscribe listed in candles: right after the ack the "
              "current bucket's candle (final false) when it has ticks; then at most one final-false frame per id and "
              "interval per second (the latest: the candle as of the end of the newest completed second of tick "
              "time), and exactly one final-true frame for every bucket that had ticks, within 1 s after the "
              "bucket's end by the server clock, equal to what /api/v1/kline returns for that bucket afterwards. "
              "Each frame is built once and shared. Not replayed on resume: fill missed buckets with a range query "
              "(/api/v1/kline?from=...). A frame right after an ack may be newer than the next shared one for the "
              "same bucket: keep the one with the higher seq.",
    "Heartbeat": "SPEC 14: every --heartbeat-s seconds (at its multiples of the server clock; default 5, 0: none), "
                 "the last tick seq of each subscribed id, written after the ticks it accounts for. Two missed "
                 "heartbeats: treat the stream as dead and reconnect (browsers cannot see WebSocket pings); a seqs "
                 "entry above the last tick seen: a gap to resume.",
    "Status": "SPEC 16: a venue opened, broke (a pause of under 3 h between two windows: a lunch break) or "
              "closed; sent once, within about a second of the window's edge by the server clock, to each "
              "session subscribed to one of the venue's instruments. The current status of every venue: "
              "GET /api/v1/venues (and a single quote's marketStatus). SPEC 20: stale when an open venue's feed "
              "has been silent for --stale-after seconds (its component on GET /api/v1/status is then degraded), "
              "and open again at its next tick.",
    "Pong": "Answer to the ping op.",
    "Error": "A bad client message; the connection stays open. An unknown id fails the whole request and "
             "leaves the set unchanged.",
    "Subscribe": "Replace the set with exactly these ids (atomic). Resume after a reconnect: add `since` (each "
                 "id of ids -> the last seq seen, from a tick or the snapshot's `seqs`) and `epoch` (the "
                 "snapshot's). The server holds at least the last 1,000 ticks or 10 minutes per instrument, "
                 "whichever is more (at most 16,384 ticks). An id of ids missing from since, a since ahead of "
                 "the server's seq, another epoch or an evicted tick: recovered false. Errors (invalid_message, "
                 "unknown_ids): since without epoch or the reverse, since not an object of integers >= 0, since "
                 "naming an id not in ids, since/epoch on unsubscribe. Ignore what arrives before this ack. "
                 "candles (1m, 5m, 15m, 1h, 1d) subscribes live candle frames of these intervals for every id of "
                 "ids (a subscribe without candles keeps none; a bad interval: invalid_message). An id may be a "
                 "continuous one (SPEC 19: methanol.c.0 the nearest expiry, methanol.n.0 the largest open interest "
                 "at the previous close): it is resolved to its contract once, now, and the ack's resolved names "
                 "it; an unknown or unresolvable one is unknown_ids.",
    "Unsubscribe": "Remove these ids from the set (atomic), and their candles. With candles: remove only those "
                   "candle intervals of the ids (of every subscribed id when ids is empty).",
    "Ping": "Application-level ping.",
}
SERVER_MESSAGES = ("Snapshot", "Tick", "Roll", "CandleFrame", "Heartbeat", "Status", "Subscribed", "Pong", "Error")
CLIENT_MESSAGES = ("Subscribe", "Unsubscribe", "Ping")


def build_asyncapi(http: HttpSettings, stream: StreamSettings) -> dict[str, Any]:
    messages = {name: {"name": name.lower(), "contentType": "application/json", "summary": MESSAGE_DOCS[name],
                       "payload": ref(name)}
                for name in (*SERVER_MESSAGES, *CLIENT_MESSAGES)}
    msg = {name: {"$ref": f"#/channels/quotes/messages/{name}"} for name in messages}
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Commodity market quote stream", "version": "1.0.0",
            "description": "Live quotes over WebSocket. Text frames of JSON, compression off. Keepalive: the "
                           "server pings every 20 s and closes when no pong arrives within 20 s. A client "
                           "that stops reading is not buffered without bound: past a per-connection cap its "
                           "pending ticks conflate to the latest per instrument (seq jumps); over the cap for "
                           "10 s it is closed with 4008. Every close has a 2 s timeout, then the TCP "
                           "connection is dropped. Resume after reconnect: subscribe with since/epoch "
                           "(see the Subscribe message). Live candles: subscribe with candles (the CandleFrame "
                           "message). "
                           f"Heartbeats every {stream.heartbeat_s:g} s (0: off; the Heartbeat message). "
                           "The key goes in the X-SERVICE-Key handshake header "
                           "(non-browser clients) or the key query parameter (browsers); the server never "
                           "logs the query string. An enterprise account's dedicated data source publishes on "
                           "/ws/ingest of the same port with an ingest key: each text frame a batch of JSON lines, "
                           "answered as POST /api/v1/ingest answers (the ingest channel, docs/ingest.md).",
        },
        "servers": {"local": {"host": f"{http.host}:{http.ws_port}", "protocol": "ws",
                              "security": [{"$ref": "#/components/securitySchemes/headerKey"},
                                           {"$ref": "#/components/securitySchemes/queryKey"}]}},
        "channels": {"quotes": _channel(messages), "ingest": _ingest_channel()},
        "operations": {**_operations(msg), **INGEST_OPERATIONS},
        "components": {
            "schemas": {**closure(*STREAM, "Problem"), **INGEST_MESSAGE_SCHEMAS},
            "securitySchemes": {"headerKey": {"type": "httpApiKey", "name": "X-SERVICE-Key", "in": "header"},
                                "queryKey": {"type": "httpApiKey", "name": "key", "in": "query"}},
        },
    }


def _channel(messages: dict[str, Any]) -> dict[str, Any]:
    """/ws/quotes: its messages, the handshake's key, its refusals and close codes."""
    return {
        "address": "/ws/quotes",
        "messages": messages,
        "bindings": {"ws": {
            "method": "GET",
            "headers": obj([], **{"X-SERVICE-Key": {"type": "string", "description": (
                "A professional or enterprise API key (non-browser clients: it stays out of URLs and so "
                "out of proxy logs). When sent, it is the key and the query's key is ignored.")}}),
            "query": obj([], key={"type": "string", "description": (
                "A professional or enterprise API key, for browsers (which cannot set handshake headers).")}),
        }},
        "x-handshake-refusals": {
            "description": "A refused handshake is an HTTP response with an RFC 9457 "
                           "application/problem+json body {type, title, status, detail, code}.",
            "schema": ref("Problem"),
            "statuses": REFUSALS,
        },
        "x-close-codes": {str(int(code)): text for code, text in CLOSE_CODE_MEANINGS.items()},
    }


def _operations(msg: dict[str, Any]) -> dict[str, Any]:
    """What the server sends, and each client message with the replies it gets."""
    q = {"$ref": "#/channels/quotes"}
    return {
        "receiveServerMessages": {"action": "receive", "channel": q,
                                  "summary": "What the server sends.",
                                  "messages": [msg[m] for m in SERVER_MESSAGES]},
        "subscribe": {"action": "send", "channel": q,
                      "messages": [msg["Subscribe"]],
                      "reply": {"channel": q,
                                "messages": [msg["Subscribed"], msg["Snapshot"], msg["CandleFrame"],
                                             msg["Error"]]}},
        "unsubscribe": {"action": "send", "channel": q,
                        "messages": [msg["Unsubscribe"]],
                        "reply": {"channel": q,
                                  "messages": [msg["Subscribed"], msg["Snapshot"], msg["Error"]]}},
        "ping": {"action": "send", "channel": q, "messages": [msg["Ping"]],
                 "reply": {"channel": q, "messages": [msg["Pong"]]}},
    }


INGEST_REFUSALS = {
    "401": "Missing, unknown or revoked key (`unauthorized`).",
    "403": "Not an ingest key (`forbidden`: a read key publishes nothing), or the key's account is no longer on the "
           "enterprise plan (`plan_required`, with `requiredPlan`).",
    "429": "The key already has as many open connections as its plan allows (`too_many_connections`).",
}
INGEST_MESSAGE_SCHEMAS: dict[str, Any] = {
    "IngestBatch": {"type": "string", "contentMediaType": "application/x-ndjson", "maxLength": 65536,
                    "examples": ['{"id":"acme.crude-blend","price":80.25,"volume":3}\n'
                                 '{"id":"acme.crude-blend","price":80.3,"ts":1767225600}'],
                    "description": 'JSON lines as POST /api/v1/ingest takes them: {"id", "price" (> 0, at most 1e12), '
                                   '"ts"? (epoch seconds or ISO 8601; default now), "volume"? (0 to 1e9)}, one a '
                                   'line, blank lines skipped; the frame at most 64 KiB (larger: closed, 1009).'},
    "IngestAnswer": INGEST_SCHEMAS["IngestAnswer"],
    "IngestError": {**obj(["error"], error=ref("Problem")), "additionalProperties": False},
}
INGEST_DOCS = {
    "IngestBatch": "A batch of ticks of the account's declared instruments (client to server), answered by exactly "
                   "one IngestAnswer or IngestError frame, in order.",
    "IngestAnswer": "The batch's answer, as POST /api/v1/ingest answers: the good lines kept and published, each bad "
                    f"line named by its number (from 1, at most {MAX_REJECTED} named; rejectedCount counts all); an "
                    "id not of the account's instruments is `unknown instrument id`. Each accepted tick counts as "
                    "a message of the key in its usage (/api/console/usage `wsMessages`).",
    "IngestError": "The whole batch refused, nothing of it kept: 429 `rate_limited` (the account's ticks a second, "
                   "with `retryAfter`, one bucket for every hub), 503 `not_ready` (the shared store, Redis, did not "
                   "answer: send the batch again). The session stays open.",
}


def _ingest_channel() -> dict[str, Any]:
    """/ws/ingest (SPEC 20, docs/ingest.md): an ingest key's batches and their answers; no snapshot, no ticks."""
    return {
        "address": "/ws/ingest",
        "description": "An enterprise account's dedicated data source publishes here with an ingest key (POST "
                       "/api/console/keys with scope ingest): each text frame a batch of JSON lines, each answered. "
                       "The session gets no snapshot, no ticks and no candles; the client message rate (20 a "
                       "second) does not apply to batches, the account's ticks a second do (its own, set by "
                       "an operator with users limits, else --ingest-rate).",
        "messages": {name: {"name": name, "contentType": "application/json" if name != "IngestBatch"
                            else "application/x-ndjson", "summary": INGEST_DOCS[name], "payload": ref(name)}
                     for name in INGEST_DOCS},
        "bindings": {"ws": {
            "method": "GET",
            "headers": obj([], **{"X-SERVICE-Key": {"type": "string", "description": "An ingest key."}}),
            "query": obj([], key={"type": "string", "description": "An ingest key, for browsers."}),
        }},
        "x-handshake-refusals": {"description": "As /ws/quotes: an RFC 9457 problem.", "schema": ref("Problem"),
                                 "statuses": INGEST_REFUSALS},
        "x-close-codes": {str(int(code)): text for code, text in CLOSE_CODE_MEANINGS.items()},
    }


_I = {"$ref": "#/channels/ingest"}
INGEST_OPERATIONS: dict[str, Any] = {
    "publish": {"action": "send", "channel": _I, "summary": "Publish a batch of ticks (SPEC 20).",
                "messages": [{"$ref": "#/channels/ingest/messages/IngestBatch"}],
                "reply": {"channel": _I, "messages": [{"$ref": "#/channels/ingest/messages/IngestAnswer"},
                                                      {"$ref": "#/channels/ingest/messages/IngestError"}]}},
}


def register_asyncapi(router: Router, http: HttpSettings, stream: StreamSettings) -> None:
    body = orjson.dumps(build_asyncapi(http, stream))

    def asyncapi(req: Request) -> Response:
        return Response(200, body)

    router.add("GET", "/asyncapi.json", asyncapi, Access.OPEN, name="asyncapi")
