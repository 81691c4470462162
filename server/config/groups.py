"""The settings groups: each flag declared once (field, default, help, parser, check), grouped by concern.

A part is handed only the group it reads (server/root.py: `settings.group(NotifySettings)`, ...). Checks
that involve two fields of one group are the group's `check`; checks across groups are in
server/config/settings.py. To add a flag: add a `setting(...)` field to the group it belongs to; the
option, its env name, its parsing and its check follow (server/config/setting.py).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from email.utils import parseaddr
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from server.config.parsers import (
    DEFAULT_PLAN_RATE,
    DEFAULT_WS_MAX_CONN,
    Webhook,
    check_database_url_text,
    check_redis_url_text,
    networks,
    parse_instant,
    plan_rate,
    retention_days,
    webhook,
    ws_max_conn,
)
from server.config.setting import ConfigError, Kind, above, between, choice, comma_list, integer, number, setting

# The limiter (server/core/limits.py) refuses a rate above the same number; it is kept
# here as a constant so that the settings import no part they configure.
MAX_RATE = 1_000_000_000
MAX_WORKERS = 64
DEFAULT_ENTERPRISE_RATE = 6000
LOG_LEVELS = ("debug", "info", "warning", "error")


class Runtime(StrEnum):
    GRANIAN = "granian"
    ROBYN = "robyn"


class DemoHours(StrEnum):
    """When the demo feed moves an instrument (SPEC 16): while its venue is in session, or all the time."""

    SESSIONS = "sessions"
    ALWAYS = "always"


class EngineKind(StrEnum):
    """Where the state several hubs must share lives (SPEC 12): this process only, or Redis."""

    MEMORY = "memory"
    REDIS = "redis"


class Group:
    """A settings group: its fields are `setting(...)`s; `check` holds the rules that involve two of them."""

    def check(self) -> None:
        """Rules between fields of this group (each field's own check runs first)."""


def _port(port: int) -> str | None:
    return None if 0 <= port <= 65535 else f"{port} is not a TCP port"


@dataclass(frozen=True)
class HttpSettings(Group):
    """Where the hub listens and the HTTP edge (SPEC 11): the runtime adapters, serve.py, the API docs; the
    origins answered with CORS, the proxies whose X-Forwarded-For names the client.
    Hidden edge limits: a request body must arrive within body_timeout_s of its headers (else 408); a keep-alive
    connection idle, or a request head unfinished, for idle_timeout_s is closed (Granian only); one client IP
    may have at most uploads_per_ip requests reading a body at once (else 429)."""

    host: str = setting("127.0.0.1", "HTTP and WebSocket bind address")
    port: int = setting(8000, "HTTP port", parse=integer, check=_port)
    ws_port: int = setting(8001, "WebSocket port", parse=integer, check=_port)
    runtime: Runtime = setting(Runtime.GRANIAN, "HTTP runtime: granian (default) or robyn", parse=choice(Runtime))
    body_timeout_s: float = setting(10.0, parse=number,
                                    check=above(0, 3600, "must be between 0 and 3600 seconds"))
    idle_timeout_s: float = setting(30.0, parse=number,  # Granian (in ms) allows at most 60 s
                                    check=between(1, 60, "must be between 1 and 60 seconds"))
    uploads_per_ip: int = setting(64, parse=integer, check=lambda n: None if n >= 1 else "must be positive")
    cors_origins: tuple[str, ...] = setting(("*",), "comma-separated allowed origins (default *)", parse=comma_list)
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = setting(
        (), "comma-separated IPs/CIDRs whose X-Forwarded-For is trusted", parse=networks)
    # benchmarks only: the runtime answers BENCH_STATIC_PATH itself with fixed bytes (the ceiling)
    bench_static: bool = setting(False, kind=Kind.SWITCH)

    def check(self) -> None:
        if self.port == self.ws_port and self.port != 0:
            raise ConfigError("--ws-port: must differ from --port")


def _readable_file(path: Path | None) -> str | None:
    if path is not None and not path.is_file():
        return f"{path} is not a readable file"
    return None


def _readable_files(paths: tuple[Path, ...]) -> str | None:
    return next((bad for bad in map(_readable_file, paths) if bad), None)


LINE_FEEDS = ("jsonl", "ctp-jsonl")  # feeds of JSON lines read from a file or stdin (server/feeds/)


@dataclass(frozen=True)
class FeedSettings(Group):
    """Where ticks come from: the feed source (server/feeds/)."""

    feed: str = setting("demo", "demo | jsonl:PATH | jsonl:- (stdin) | ctp-jsonl:PATH or ctp-jsonl:- (CTP depth "
                        "records, CThostFtdcDepthMarketDataField as JSON lines: docs/futures.md)")
    seed: int = setting(42, "seed of the demo feed", parse=integer)
    tick_interval_ms: int = setting(250, "demo feed tick interval", parse=integer,
                                    check=between(10, 60_000, "must be between 10 and 60000"))
    demo_hours: DemoHours = setting(DemoHours.SESSIONS, "sessions (default: an instrument moves only while its "
                                    "venue is in session; an assessment prints once a day) or always (load tests)",
                                    parse=choice(DemoHours))
    calendar_file: Path | None = setting(None, "a TOML file of exchange notices (holidays, cancelled night "
                                         "sessions) extending the repository's (docs/venues.md)", parse=Path,
                                         check=_readable_file)
    catalogue_file: tuple[Path, ...] = setting((), "a TOML file of futures products (listing, expiry, tick, ...) "
                                               "extending or replacing the repository's (docs/contracts.md); "
                                               "repeatable, a later file wins", parse=Path, kind=Kind.APPEND,
                                               check=_readable_files)
    stale_after: float = setting(60.0, "seconds of in-session silence after which a venue's feed is degraded on "
                                 "/api/v1/status and its subscribers get status stale (docs/status.md)",
                                 parse=number, check=between(1, 3600, "must be between 1 and 3600"))
    # hidden (tests): seconds of in-session silence after which a feed is major_outage and an incident opens by
    # itself (SPEC 20: 5 minutes; a test shortens it rather than wait, docs/testing.md)
    feed_outage_s: float = setting(300.0, parse=number, check=between(1, 86400, "must be between 1 and 86400"))
    custom_instruments: int = setting(64, "market-state rows reserved for the instruments enterprise accounts declare "
                                      "(their dedicated data sources: docs/ingest.md); the same on every hub",
                                      parse=integer, check=between(0, 10_000, "must be between 0 and 10000"))
    ingest_rate: int = setting(2000, "ticks a second an account may publish to its instruments (POST /api/v1/ingest, "
                               "WS /ws/ingest; over it 429 with Retry-After), unless an operator set the account's "
                               "own (users limits)", parse=integer,
                               check=between(1, 1_000_000, "must be between 1 and 1000000"))

    @property
    def feed_kind(self) -> str:
        """"demo", "jsonl" or "ctp-jsonl" (the part of `--feed` before the colon)."""
        return self.feed.split(":", 1)[0]

    @property
    def feed_path(self) -> str | None:
        """PATH of a `jsonl:PATH` or `ctp-jsonl:PATH` feed ("-" is stdin); None for the demo feed."""
        return self.feed.split(":", 1)[1] if self.feed_kind in LINE_FEEDS and ":" in self.feed else None

    @property
    def is_demo(self) -> bool:
        return self.feed == "demo"

    def check(self) -> None:
        if self.feed != "demo" and not (self.feed_kind in LINE_FEEDS and self.feed_path):
            raise ConfigError(f"--feed: {self.feed!r} must be demo, jsonl:PATH, jsonl:-, ctp-jsonl:PATH or ctp-jsonl:-")


def _positive(n: float) -> str | None:
    return None if n > 0 else "must be positive"


@dataclass(frozen=True)
class SiteSettings(Group):
    """The public site (server/api/site/)."""

    market_refresh_s: float = setting(60.0, "public market snapshot refresh period", parse=number, check=_positive)


@dataclass(frozen=True)
class LimitSettings(Group):
    """Who may call, from where and how often (SPEC 11): the request pipeline and the stream's handshakes."""

    public_rate: int = setting(60, "public-site requests per minute per client IP", parse=integer, check=_positive)
    ws_handshake_rate: int = setting(120, "WebSocket handshakes per minute per client IP", parse=integer,
                                     check=above(0, MAX_RATE, f"must be from 1 to {MAX_RATE}"))
    login_rate: int = setting(10, flag=None)
    inquiry_rate: int = setting(30, flag=None)
    plan_rate: dict[str, int] = setting(factory=lambda: dict(DEFAULT_PLAN_RATE), parse=plan_rate,
                                        help="per-plan requests/minute, e.g. free=60,professional=600")
    ws_max_conn: dict[str, int] = setting(factory=lambda: dict(DEFAULT_WS_MAX_CONN), parse=ws_max_conn,
                                          help="per-plan WebSocket connections, e.g. professional=5,enterprise=50")

    def rate_for(self, plan: str, key_rate: int | None) -> int:
        if key_rate:
            return key_rate
        return self.plan_rate.get(plan, DEFAULT_ENTERPRISE_RATE)


@dataclass(frozen=True)
class StreamSettings(Group):
    """The WebSocket stream (server/stream/)."""

    # hidden (tests): how long a WebSocket client may stay over its buffer cap
    ws_slow_close_s: float = setting(10.0, parse=number, check=above(0, 3600, "must be between 0 and 3600 seconds"))
    # SPEC 14: /ws/quotes heartbeat period; 0 turns heartbeats off
    heartbeat_s: float = setting(5.0, "seconds between /ws/quotes heartbeats (default 5; 0: none)", parse=number,
                                 check=lambda s: None if s == 0 or 0.1 <= s <= 3600 else
                                 "must be 0 (off) or between 0.1 and 3600 seconds")
    ws_deflate: bool = setting(True, "permessage-deflate on /ws/quotes for clients that offer it (default on)",
                               kind=Kind.TOGGLE)


def _smtp(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        return "must be smtp://[user:pass@]host:port or smtps://... (value not shown)"
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return "invalid port (value not shown)"
    return None


@dataclass(frozen=True)
class NotifySettings(Group):
    """Notifications: e-mail, webhooks and the outbox worker's retries (server/notify/). The outbox flags are
    hidden (tests, tuning): retry backoff base, attempts, call timeout."""

    smtp_url: str | None = setting(None, "smtp://user:pass@host:port or smtps://...", check=_smtp)
    mail_from: str = setting("market-server@localhost", "From address of notification e-mail")
    notify_email: tuple[str, ...] = setting((), "comma-separated notification recipients", parse=comma_list)
    webhooks: tuple[Webhook, ...] = setting(
        (), "notification webhook (repeatable); KIND is wecom, dingtalk, feishu or generic; "
        "append #secret=S to the URL for a signing secret", parse=webhook, flag="webhook", kind=Kind.APPEND,
        metavar="KIND=URL")
    outbox_base_s: float = setting(30.0, parse=number, check=above(0, 86_400, "must be between 0 and 86400 seconds"))
    outbox_max_attempts: int = setting(8, parse=integer, check=between(1, 100, "must be between 1 and 100"))
    outbox_timeout_s: float = setting(10.0, parse=number, check=above(0, 300, "must be between 0 and 300 seconds"))

    def check(self) -> None:
        if self.smtp_url is not None and not self.notify_email:
            raise ConfigError("--notify-email: required when --smtp-url is set")
        if self.smtp_url is None and self.notify_email:
            raise ConfigError("--smtp-url: required when --notify-email is set")
        for flag, address in [("--notify-email", a) for a in self.notify_email] + [("--mail-from", self.mail_from)]:
            addr = parseaddr(address)[1]
            local, at, domain = addr.rpartition("@")
            if not (at and local and domain) or any(c.isspace() or c in "<>,;" for c in addr):
                raise ConfigError(f"{flag}: {address!r} is not an e-mail address")


@dataclass(frozen=True)
class AuthSettings(Group):
    """Credentials: the site's token keys, the demo API key, and (hidden, tests) how often the key watch re-reads the
    keys from storage (a test lengthens it to tell a rotation's immediate close from the refresh's)."""

    jwt_secret: str | None = setting(None, "HS256 secret (default: generated once into the data dir)")
    jwt_public_key: str | None = setting(None, "PEM file of an RS256/ES256 identity provider's public key")
    demo_key: bool = setting(True, "do not create the demo key on first start", flag="no-demo-key",
                             kind=Kind.OFF_SWITCH)
    key_refresh_s: float = setting(1.0, parse=number, check=above(0, 3600, "must be between 0 and 3600 seconds"))


def _log_level(level: str) -> str | None:
    return None if level in LOG_LEVELS else "must be debug, info, warning or error"


@dataclass(frozen=True)
class ProcessSettings(Group):
    """This process: logging, its place among `serve --workers N` hubs (SO_REUSEPORT; needs --engine redis;
    worker_id, hidden, is set by that supervisor for each child: 1..N, 0 for a hub started on its own), and
    (hidden, tests) a fake "now" that starts at clock_start (epoch seconds) and advances in real time, so
    date-dependent behaviour (trading days, candle rolls) can be tested on any calendar day."""

    log_level: str = setting("info", "debug, info, warning or error", check=_log_level)
    clock_start: float | None = setting(None, parse=parse_instant)
    workers: int = setting(1, "hub processes sharing the HTTP and WebSocket ports on this machine (default 1; "
                              "more needs --engine redis)", parse=integer,
                           check=between(1, MAX_WORKERS, f"must be from 1 to {MAX_WORKERS}"))
    worker_id: int = setting(0, parse=integer, check=between(0, MAX_WORKERS, "out of range"))


def _prefix(prefix: str) -> str | None:
    ok = prefix and len(prefix) <= 64 and prefix.isprintable()
    return None if ok else "must be 1 to 64 printable characters"


@dataclass(frozen=True)
class EngineSettings(Group):
    """SPEC 12: memory (one hub, nothing installed) or redis (shared rate limits, key revocations over
    pub/sub); every Redis key and channel starts with redis_prefix (hidden: tests use their own)."""

    engine: EngineKind = setting(EngineKind.MEMORY, "memory (default: one hub) or redis (hubs share one feed, "
                                 "rate limits, key revocations)", parse=choice(EngineKind))
    redis_url: str = setting("redis://127.0.0.1:6379/0", "Redis for --engine redis (default "
                             "redis://127.0.0.1:6379/0)", check=check_redis_url_text)
    redis_prefix: str = setting("market:", check=_prefix)
    ingest_inbox_max: int = setting(1000, "with --engine redis: ingest batches that may wait in the shared inbox for "
                                    "the feed lease holder; beyond it ingest is 503 with Retry-After, nothing of "
                                    "the batch kept (docs/ingest.md)", parse=integer,
                                    check=between(1, 1_000_000, "must be between 1 and 1000000"))


@dataclass(frozen=True)
class StorageSettings(Group):
    """SPEC 12: SQLite in the data dir, or PostgreSQL (docs/storage.md) with an async pool per hub. Every
    operator command takes --data-dir and --database-url too."""

    database_pool: int = setting(10, "PostgreSQL connections per hub (async pool size, default 10)", parse=integer,
                                 check=between(1, 1000, "must be from 1 to 1000"))
    data_dir: Path = setting(Path("data"), "data directory", parse=Path, fill=True, blank_env_unset=True,
                             common=True)
    database_url: str | None = setting(
        None, "postgresql://user@host:port/db: store everything in PostgreSQL instead of SQLite in the data dir "
        "(env MARKET_DATABASE_URL)", metavar="URL", check=check_database_url_text, blank_env_unset=True,
        common=True)
    retention: dict[str, int] = setting(
        factory=dict, parse=retention_days, metavar="KIND=DAYS,...",
        help="days of history a live feed keeps per kind, the ones that differ from the defaults ticks=30, 1m=366, "
             "5m=730, 15m=1095, 1h=1830, 1d=3660 (0 keeps forever; docs/storage.md)")
    # hidden (tests): the tick archive's group-commit interval (SPEC 18: at least once a second; a test holds a
    # leader's ticks uncommitted longer to kill it with them in its buffer)
    archive_commit_s: float = setting(0.5, parse=number, check=above(0, 60, "must be between 0 and 60 seconds"))
    # hidden (tests): seconds storage must stay unavailable before an incident opens by itself (SPEC 20: 1 minute)
    storage_outage_s: float = setting(60.0, parse=number, check=between(1, 86400, "must be between 1 and 86400"))
