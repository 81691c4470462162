"""Flat files (SPEC 18): which closed trading days have files, making a day's ticks or candles into CSV.gz or
Parquet once, and serving a byte range of one; the all-venue files and each venue's own (scopes.py).

May import `core`, `config`, `market`, `store/history/` (the rows a file holds) and `store/sql/` (the protocols).
"""
