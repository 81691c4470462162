"""Dedicated data sources (SPEC 20, docs/ingest.md): an account's namespace, its declared instruments and the
`scope` of its keys. May import sql and accounts."""
