"""Every table, per backend, and the seed steps of a new database: explicit lists, complete whatever was imported.

SQLite: `SQLITE_SCHEMA`, applied (CREATE ... IF NOT EXISTS) by `open_db` each time a data dir is opened.
PostgreSQL: `MIGRATIONS`, an ordered list recorded in `schema_migrations` (server/store/sql/pg.py applies the missing
ones); never edit an applied migration, append one. A new table goes in both.

REAL epoch seconds are PostgreSQL `double precision` (a float survives bit for bit: the evidence ledger hashes its
ts as an IEEE 754 double), integer ids `bigint`, everything else `text` as in SQLite.
"""

from __future__ import annotations

from server.store.accounts.console_schema import CONSOLE_MIGRATION
from server.store.availability.minutes import PG_MIGRATION as AVAILABILITY_MIGRATION
from server.store.availability.minutes import SQLITE_TABLE as AVAILABILITY_SQLITE
from server.store.incidents.schema import INCIDENTS_MIGRATION
from server.store.sources.schema import LIMITS_MIGRATION, SOURCES_MIGRATION
from server.store.support.schema import SUPPORT_MIGRATION

META_TABLE = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

# The evidence log's tables (server/evidence/): also applied by an EvidenceLog on a bare connection.
EVIDENCE_LOG_SQLITE: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS evidence_leaves (
        idx          INTEGER PRIMARY KEY,
        hash         TEXT UNIQUE NOT NULL,
        submitted_at REAL NOT NULL,
        batch        INTEGER NULL
    )""",
    "CREATE INDEX IF NOT EXISTS evidence_leaves_pending ON evidence_leaves(idx) WHERE batch IS NULL",
    """CREATE TABLE IF NOT EXISTS evidence_nodes (
        level INTEGER NOT NULL,
        pos   INTEGER NOT NULL,
        hash  TEXT NOT NULL,
        PRIMARY KEY (level, pos)
    ) WITHOUT ROWID""",
)
EVIDENCE_BLOCKS_SQLITE = """CREATE TABLE IF NOT EXISTS evidence_blocks (
    height     INTEGER PRIMARY KEY,
    root       TEXT NOT NULL,
    tree_size  INTEGER NOT NULL,
    prev_hash  TEXT NOT NULL,
    block_hash TEXT NOT NULL,
    ts         REAL NOT NULL,
    tx_hash    TEXT NOT NULL
)"""

# Futures daily candles' open interest at the close and settlement (SPEC 19), beside `candles` (whose rows keep
# their shape): one row per (instrument, day) of a futures product, written in the candles' own transaction.
SETTLEMENTS_SQLITE = """CREATE TABLE IF NOT EXISTS settlements_1d (
    instrument TEXT NOT NULL,
    day TEXT NOT NULL,
    oi REAL, s REAL,
    PRIMARY KEY (instrument, day)
)"""

SQLITE_SCHEMA: tuple[str, ...] = (
    META_TABLE,
    """CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL CHECK (plan IN ('free', 'professional', 'enterprise')),
    rate INTEGER,
    label TEXT,
    created_at REAL NOT NULL,
    revoked_at REAL
)""",
    """CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    name TEXT,
    company TEXT,
    created_at REAL NOT NULL,
    disabled_at REAL
)""",
    """CREATE TABLE IF NOT EXISTS content_items (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('news', 'research')),
    title_zh TEXT NOT NULL,
    title_en TEXT NOT NULL,
    summary_zh TEXT NOT NULL,
    summary_en TEXT NOT NULL,
    source TEXT,
    author TEXT,
    category TEXT,
    published_at REAL NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL
)""",
    """CREATE INDEX IF NOT EXISTS content_items_latest ON content_items (kind, published_at DESC, id DESC)""",
    """CREATE TABLE IF NOT EXISTS candles (
    instrument TEXT NOT NULL,
    day TEXT NOT NULL,
    o REAL NOT NULL, h REAL NOT NULL, l REAL NOT NULL, c REAL NOT NULL, v REAL NOT NULL,
    PRIMARY KEY (instrument, day)
)""",
    SETTLEMENTS_SQLITE,
    """CREATE TABLE IF NOT EXISTS inquiries (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    user_email TEXT,
    product TEXT NOT NULL,
    quantity REAL NOT NULL,
    unit TEXT,
    message TEXT,
    delivery_place TEXT,
    contact_phone TEXT,
    status TEXT NOT NULL DEFAULT 'received',
    created_at REAL NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS cooperations (
    id TEXT PRIMARY KEY,
    company TEXT NOT NULL,
    contact_name TEXT NOT NULL,
    email TEXT,
    phone TEXT,
    type TEXT NOT NULL,
    message TEXT,
    status TEXT NOT NULL DEFAULT 'received',
    created_at REAL NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS outbox_jobs (
    id TEXT PRIMARY KEY,
    record_kind TEXT NOT NULL,
    record_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    target TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    last_error TEXT,
    idempotency_id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    delivered_at REAL
)""",
    """CREATE INDEX IF NOT EXISTS outbox_jobs_due ON outbox_jobs (state, next_attempt_at)""",
    """CREATE INDEX IF NOT EXISTS outbox_jobs_record ON outbox_jobs (record_kind, record_id)""",
    """CREATE TABLE IF NOT EXISTS receipts (
    receipt_no TEXT PRIMARY KEY,
    commodity TEXT NOT NULL,
    grade TEXT NOT NULL,
    quantity REAL NOT NULL,
    unit TEXT NOT NULL,
    warehouse TEXT NOT NULL,
    holder TEXT NOT NULL,
    holder_masked TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'pledged', 'frozen', 'cancelled')),
    issued_at REAL NOT NULL,
    expires_at REAL,
    salt TEXT NOT NULL,
    evidence_hash TEXT NOT NULL,
    updated_at REAL NOT NULL
)""",
    *EVIDENCE_LOG_SQLITE,
    EVIDENCE_BLOCKS_SQLITE,
    AVAILABILITY_SQLITE,
)

# PostgreSQL: applied in order by server/store/sql/pg.py `migrate`, each version once.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "initial schema", """
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE api_keys (
    id text PRIMARY KEY,
    key_hash text NOT NULL UNIQUE,
    plan text NOT NULL CHECK (plan IN ('free', 'professional', 'enterprise')),
    rate bigint,
    label text,
    created_at double precision NOT NULL,
    revoked_at double precision
);
CREATE TABLE users (
    id text PRIMARY KEY,
    email text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    name text,
    company text,
    created_at double precision NOT NULL,
    disabled_at double precision
);
CREATE TABLE content_items (
    id text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('news', 'research')),
    title_zh text NOT NULL,
    title_en text NOT NULL,
    summary_zh text NOT NULL,
    summary_en text NOT NULL,
    source text,
    author text,
    category text,
    published_at double precision NOT NULL,
    tags text NOT NULL DEFAULT '[]',
    created_at double precision NOT NULL
);
CREATE INDEX content_items_latest ON content_items (kind, published_at DESC, id DESC);
CREATE TABLE candles (
    instrument text NOT NULL,
    day text NOT NULL,
    o double precision NOT NULL, h double precision NOT NULL, l double precision NOT NULL,
    c double precision NOT NULL, v double precision NOT NULL,
    PRIMARY KEY (instrument, day)
);
CREATE TABLE inquiries (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    user_email text,
    product text NOT NULL,
    quantity double precision NOT NULL,
    unit text,
    message text,
    delivery_place text,
    contact_phone text,
    status text NOT NULL DEFAULT 'received',
    created_at double precision NOT NULL
);
CREATE TABLE cooperations (
    id text PRIMARY KEY,
    company text NOT NULL,
    contact_name text NOT NULL,
    email text,
    phone text,
    type text NOT NULL,
    message text,
    status text NOT NULL DEFAULT 'received',
    created_at double precision NOT NULL
);
CREATE TABLE outbox_jobs (
    id text PRIMARY KEY,
    record_kind text NOT NULL,
    record_id text NOT NULL,
    channel text NOT NULL,
    target text NOT NULL,
    payload text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed', 'dead')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at double precision NOT NULL,
    last_error text,
    idempotency_id text NOT NULL UNIQUE,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    delivered_at double precision
);
CREATE INDEX outbox_jobs_due ON outbox_jobs (state, next_attempt_at);
CREATE INDEX outbox_jobs_record ON outbox_jobs (record_kind, record_id);
CREATE TABLE receipts (
    receipt_no text PRIMARY KEY,
    commodity text NOT NULL,
    grade text NOT NULL,
    quantity double precision NOT NULL,
    unit text NOT NULL,
    warehouse text NOT NULL,
    holder text NOT NULL,
    holder_masked text NOT NULL,
    status text NOT NULL CHECK (status IN ('active', 'pledged', 'frozen', 'cancelled')),
    issued_at double precision NOT NULL,
    expires_at double precision,
    salt text NOT NULL,
    evidence_hash text NOT NULL,
    updated_at double precision NOT NULL
);
CREATE TABLE evidence_leaves (
    idx bigint PRIMARY KEY,
    hash text UNIQUE NOT NULL,
    submitted_at double precision NOT NULL,
    batch bigint NULL
);
CREATE INDEX evidence_leaves_pending ON evidence_leaves (idx) WHERE batch IS NULL;
CREATE TABLE evidence_nodes (
    level integer NOT NULL,
    pos bigint NOT NULL,
    hash text NOT NULL,
    PRIMARY KEY (level, pos)
);
CREATE TABLE evidence_blocks (
    height bigint PRIMARY KEY,
    root text NOT NULL,
    tree_size bigint NOT NULL,
    prev_hash text NOT NULL,
    block_hash text NOT NULL,
    ts double precision NOT NULL,
    tx_hash text NOT NULL
);
"""),
    (2, "outbox claim owner", """
ALTER TABLE outbox_jobs ADD COLUMN claimed_by text;
"""),
    (3, "console: account plans and roles, key owners, usage, subscriptions, events", CONSOLE_MIGRATION),
    (4, "support tickets and their messages (issue 43)", SUPPORT_MIGRATION),
    (5, "availability per hub per minute (SPEC 20, docs/sla.md)", AVAILABILITY_MIGRATION),
    (6, "incidents, their updates, maintenance, incident mail choices", INCIDENTS_MIGRATION),
    (7, "futures daily open interest and settlement", """
CREATE TABLE settlements_1d (
    instrument text NOT NULL,
    day text NOT NULL,
    oi double precision, s double precision,
    PRIMARY KEY (instrument, day)
);
"""),
    (8, "dedicated data sources: namespaces, key scopes, declared instruments (SPEC 20)", SOURCES_MIGRATION),
    (9, "dedicated data sources: each account's instruments and ticks a second (SPEC 20)", LIMITS_MIGRATION),
)
