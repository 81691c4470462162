"""Support tickets (SPEC 20, issue 43): tickets and their threads, both databases' tables, the notification jobs each
message writes in its own transaction, the enterprise first-response target on business hours, and the per-month
met/missed report the SLA section reads (`support_response` in server/store/support/response.py).

May import `core`, `config`, `market` (the Shanghai day calendar for business hours), `store/sql/`, `store/outbox/`,
`store/site/` (record ids, channel specs) and `store/accounts/` (the console's `Db` and accounts).
"""
