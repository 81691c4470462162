"""Pure domain core (layer 2): instruments, venues, candles, spreads, inventory and the market state.

Nothing in this package performs I/O or awaits; clocks and randomness are injected. May import `core` and `config`.
Its rooms: `venues/` (sessions, trading days, each venue's clock) and `candles/` (the ring buffers and range
queries), `contracts/` (futures products, settlement, the futures board); beside them the catalogue, the state (the
one writer of prices, seqs and candles), futures (the board kept in step with the candles), the demo walk, spreads
and inventory.
"""
