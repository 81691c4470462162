"""Incidents and scheduled maintenance (SPEC 20, issue 42 item 5): the values and their allowed status changes
(pure), the tables on both databases, and the repository (one SQL for SQLite and PostgreSQL over the console's `Db`
seam) that opens, updates and resolves incidents and writes each update's e-mail jobs into the outbox, once.

May import `core`, `config`, `market` (time formatting), `store/sql/` (connections, transactions, errors),
`store/outbox/` (the job rows) and `store/accounts/` (the `Db` seam over both dialects).
"""
