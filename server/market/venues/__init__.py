"""Venues and their calendars (SPEC 16): the venues as data (time zones, session templates, trading-day closes),
the trading days from maintained holiday packages plus exchange notices, each venue's clock (status, sessions, the
closing-tick rule) with its per-tick lookup tables, what a feed needs from it, and plain-data views for HTTP.

Pure domain code like all of `market/`: no I/O but reading the shipped notices file at start. May import `core` and
`market.timefmt` only; the instruments (`market.catalogue`) and the state import it, never the reverse.
"""
