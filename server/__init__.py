"""market-server: a commodity market-data hub (HTTP API, `/ws/quotes`, the public site's API, the service console).

The layers, lowest first (docs/architecture.md draws them; tests/unit/test_imports.py enforces them): `core` <
`config` < `market`, `evidence` < `engine`, `store` < `stream`, `feeds`, `notify` < `api` < `http` < the root (the
top-level modules: `root.py` builds every part, `serve.py`, `cli.py`, `commands/`, `workers.py`, `lifecycle.py`,
`ticks.py`, `logs.py`). A module imports its own part and lower layers only; the root may import anything.
"""
