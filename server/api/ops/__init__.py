"""What the service answers about itself and ships as files: health, readiness, Prometheus metrics and the
OpenAPI document (`health.py`), the service's status for its users (`status.py`, SPEC 20), the dashboard's and
the API docs' static files from `server/web/` (`web.py`).

May import `core`, `config`, `market` (venue clocks, feed freshness), `engine`, `store`, `api/core/` and
`api/docs/` (the documents it serves).
"""
