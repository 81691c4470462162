"""What one WebSocket session is and says, without I/O: the `/ws/quotes` message vocabulary (`messages.py`), complete
frames as bytes (`wire.py`), the session states and their transitions, the handshake decision, one session's state
and its outgoing-buffer policy.

May import `core` and `market`; nothing else of `stream/`.
"""
