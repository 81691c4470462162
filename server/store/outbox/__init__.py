"""The outbox (SPEC 9): one notification job per record and channel, written in the record's transaction, and the
job states with their allowed transitions (pure, no I/O).

May import `core` and `config` only; `notify` (a higher layer) delivers the jobs.
"""
