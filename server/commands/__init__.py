"""The operator commands of `market-server` (SPEC 3), each in its own process beside a running hub: keys, users,
subscriptions, content, receipts, evidence, candle and tick imports, the outbox, PostgreSQL migrations.

Part of the root: may import any layer.
"""
