"""The public site's data: news and research (with the demo content), inquiries and cooperation intents, digital
warehouse receipts, the evidence log on SQLite, and the seed steps of a new database.

May import `core`, `config`, `evidence`, `store/sql/` (connections, the schema) and `store/outbox/`.
"""
