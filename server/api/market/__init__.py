"""The keyed market-data routes (`/api/v1`, SPEC 6, 14, 16, 18): quotes, candles, spreads and inventory
(`keyed.py`), the instruments, venues and calendars (`reference.py`), the TradingView UDF datafeed (`udf.py`), range
queries below the rings into the stored history (`deep_ranges.py`) and the flat-file listing and downloads.

May import `core`, `config`, `market`, `engine`, `store`, `stream` (the resume history's ticks) and `api/core/`
(the router, the answers, the query parsing). Of the other rooms only `api/docs/` reads it (its limits, for the
OpenAPI document); the root registers its routes.
"""
