"""A session's life once the pump hands it over: admission, open and close with the per-key count (`sessions.py`,
the only code that adds or removes fan-out members), the client's subscribe/unsubscribe/ping messages, and the
keepalive sweep (pings due, closes due).

May import `core`, `market`, `stream/protocol/`, `stream/delivery/`, `stream/limits.py` and `stream/metrics.py`.
"""
