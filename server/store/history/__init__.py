"""The durable market history (SPEC 18): the tick archive (SQLite or PostgreSQL, group commits off the loop),
stored candles of every interval, the live feed's candle book and its rebuild after a restart, backfill from files,
retention, and the threads the hub runs them on (`threads.py`).

May import `core`, `config`, `market` and `store/sql/` (connections, the storage threads, the protocols).
"""
