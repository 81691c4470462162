"""The lowest layer (0): what every part shares and nothing else knows: errors as data, API keys (hashed), GCRA rate
limits, client addresses, metrics, usage counters, state machines as data, background rounds, the Redis URL.

Imports nothing of `server/`.
"""
