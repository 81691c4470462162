"""Pure domain core: instruments, feeds, candles, spreads, inventory and market state.

Nothing in this package performs I/O or awaits; clocks and randomness are injected.
"""
