"""Both databases' plumbing (SQLite in the data dir, PostgreSQL with `--database-url`): connections and
transactions, the storage threads, every table and its migrations, the seed of a new database, and the repositories
over each dialect (`repositories.py` holds the protocols the hub sees; `backend.py` picks one; `admin.py` is the CLI's).

May import `core`, `config`, `market`, `evidence` and the other rooms of `store/`: the repositories implement every
aggregate, so they know the value types of `accounts/`, `history/`, `site/` and `outbox/`. Those rooms import only
the plumbing and the protocols from here, never a dialect's repository.
"""
