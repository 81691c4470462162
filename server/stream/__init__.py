"""The quote stream (layer 4): `/ws/quotes` (SPEC 7, 14, 16), one uvloop listener beside the HTTP runtime.

May import `core`, `config`, `market`, `engine` and `store`. Its rooms, lowest first (each imports only the ones
before it, and `limits.py`/`metrics.py`):

- `protocol/`: what one session is and says, without I/O: the message vocabulary, complete frames as bytes, the
  session states, the handshake decision, a session's state and its outgoing-buffer policy.
- `delivery/`: what goes to whom: the subscription registry, snapshots, tick and candle fan-out, live candle frames,
  venue status frames, heartbeats, the resume history and replay, and the stream clock.
- `connections/`: a session's life: admission and open/close (`sessions.py`), the client's subscribe/unsubscribe
  messages, the keepalive sweep.

Beside them: `core.py` connects the parts, `connection.py` is the pump between a TCP transport and websockets'
Sans-I/O protocol, `service.py` is the hub service (listener, sweeper, clock task).
"""
