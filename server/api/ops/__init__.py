"""What the service answers about itself and ships as files: health, readiness, Prometheus metrics and the
OpenAPI document (`health.py`), the dashboard's and the API docs' static files from `server/web/` (`web.py`).

May import `core`, `config`, `engine`, `store`, `api/core/` and `api/docs/` (the documents it serves).
"""
