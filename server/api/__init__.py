"""The HTTP API (layer 5), framework-neutral: handlers take and return `api/core/types.py` values, and each runtime
adapter in `http/` carries them. May import every lower layer (`core` ... `notify`). Its rooms:

- `core/`: the pipeline every request runs (admission, routing, remembered answers, content coding, finishing).
- `market/`: the keyed market-data routes (`/api/v1`).
- `site/`: the public site's API (`/api/...`, SPEC 8).
- `console/`: the service console's API (`/api/console/...`, SPEC 17).
- `auth/`: passwords, tokens and the key watch.
- `docs/`: the OpenAPI and AsyncAPI documents and the problem pages.
- `ops/`: health, readiness, metrics, and the static files of the dashboard and the docs viewer.

Every room may import `core/` and `auth/`; `docs/` reads the limits of `market/` and `console/`; no other room
imports another.
"""
