"""Site accounts and the service console (SPEC 17): users and their password hashes, the console's tables,
keys, usage and plan requests, and the in-memory key cache every keyed request is answered from.

May import `core`, `config`, `store/sql/` (connections, the protocols), `store/outbox/` and `store/site/records.py` (a
plan request is written with its notification jobs, like an inquiry).
"""
