"""Availability per minute (SPEC 20, docs/sla.md): one row per hub per minute (its heartbeat, keyed requests and
5xx, latency buckets and percentiles, WebSocket frames, feed-to-frame buckets, components' seconds out), on SQLite
and PostgreSQL, and the month's rows read back for the SLA report.

May import `core` (the record and its rules: server/core/availability.py), `store/sql/` (the storages) and
`store/accounts/` (the `Db` dialect seam the console's repository uses: one SQL text for both databases).
"""
