"""What goes to whom, and when: the subscription registry, snapshot frames, the tick and candle fan-out, live
candle frames (SPEC 14), venue status frames (SPEC 16), heartbeats, the resume history and replay (SPEC 7), and the
stream clock that schedules candle runs and heartbeats.

May import `core`, `market`, `stream/protocol/`, `stream/limits.py` and `stream/metrics.py`.
"""
