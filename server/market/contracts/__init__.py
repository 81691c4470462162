"""Contracts (SPEC 19): futures products, their listed contract months and the rules that list and expire them.

Keeps: the product catalogue (`products.toml` beside this package, extended by the operator's
`--catalogue-file`), each product's specification (tick size, multiplier, daily limit, settlement rule:
specs.py), its listing rules as data (rules.py), the last trading day counted on the venue's calendar (expiry.py),
contract ids and exchange symbols (symbols.py) and the contracts a product has on a day (listing.py). Domain data
only: no I/O beyond reading the catalogue files at start, no awaits. May import: server.core,
server.market.venues (calendars), nothing above `market`.
"""
