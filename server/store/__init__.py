"""Storage (layer 3): everything the service keeps, in SQLite in the data dir or in PostgreSQL.

Imports `core`, `config`, `market` and `evidence` only (docs/architecture.md). Its rooms:

- `sql/`: both databases: connections, the storage threads, every table and its migrations, and the repositories
  over each dialect (the hub's async protocols and the CLI's synchronous ones).
- `history/`: the durable market history (SPEC 18): the tick archive, stored candles, backfill, retention.
- `flatfiles/`: a closed trading day's ticks and candles as downloadable files, and byte ranges of them.
- `accounts/`: site accounts and the service console (SPEC 17): users, keys, plans, usage.
- `site/`: the public site's content, inquiries and intents, digital receipts and the evidence log.
- `incidents/`: incidents and scheduled maintenance (SPEC 20), and who is mailed of them.
- `outbox/`: the notification jobs written beside the records they announce (SPEC 9).
"""
