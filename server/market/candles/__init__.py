"""Candles in numpy ring buffers: daily OHLCV on one day axis (each row on its own venue's trading days, the axis
in `trading_axis.py`), intraday buckets (1m, 5m, 15m, 1h), and range queries over the held candles (SPEC 14).

Pure domain code: no I/O. May import `core` and `market.timefmt` only; `market.state` owns the books.
"""
