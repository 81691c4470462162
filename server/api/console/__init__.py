"""The service console's API (`/api/console/...`, SPEC 17): accounts' keys, usage, plan requests, the audit list.

May import the layers below `api`, `api/core/`, `api/auth/` and `api/site/` (the Bearer authentication of
site accounts).
"""
