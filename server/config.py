"""One typed settings object, built from flags and MARKET_* env, validated once.

Every `serve` flag also reads env `MARKET_<FLAG>` (dashes as underscores,
e.g. MARKET_WS_PORT); a flag on the command line wins over the env.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parseaddr
from enum import StrEnum
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import ZoneInfo

from server.core.limits import MAX_RATE

PLANS = ("free", "professional", "enterprise")
BENCH_STATIC_PATH = "/__bench/static"
WEBHOOK_KINDS = ("wecom", "dingtalk", "feishu", "generic")
DEFAULT_ENTERPRISE_RATE = 6000


class ConfigError(ValueError):
    """A setting is invalid; the message names the flag."""


class ServiceUnreachable(Exception):
    """A service the settings name (Redis, ...) cannot be reached while the hub starts: one line, exit 1."""


class Runtime(StrEnum):
    GRANIAN = "granian"
    ROBYN = "robyn"


class EngineKind(StrEnum):
    """Where the state several hubs must share lives (SPEC 12): this process only, or Redis."""

    MEMORY = "memory"
    REDIS = "redis"


@dataclass(frozen=True, slots=True)
class Webhook:
    kind: str
    url: str
    secret: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    ws_port: int = 8001
    runtime: Runtime = Runtime.GRANIAN
    data_dir: Path = Path("data")
    feed: str = "demo"
    seed: int = 42
    tick_interval_ms: int = 250
    market_refresh_s: float = 60.0
    public_rate: int = 60
    ws_handshake_rate: int = 120  # WebSocket handshakes per client IP per minute
    login_rate: int = 10
    inquiry_rate: int = 30
    plan_rate: dict[str, int] = field(default_factory=lambda: {"free": 60, "professional": 600})
    ws_max_conn: dict[str, int] = field(default_factory=lambda: {"professional": 5, "enterprise": 50})
    ws_slow_close_s: float = 10.0  # hidden: how long a WebSocket client may stay over its buffer cap (tests)
    heartbeat_s: float = 5.0  # SPEC 14: /ws/quotes heartbeat period; 0 turns heartbeats off
    ws_deflate: bool = True  # permessage-deflate on /ws/quotes for clients that offer it (--no-ws-deflate: never)
    # hidden (tests, tuning): HTTP edge limits (SPEC 11). A request body must arrive within body_timeout_s of its
    # headers (else 408); a keep-alive connection idle, or a request head unfinished, for idle_timeout_s is closed
    # (Granian only); one client IP may have at most uploads_per_ip requests reading a body at once (else 429)
    body_timeout_s: float = 10.0
    idle_timeout_s: float = 30.0
    uploads_per_ip: int = 64
    smtp_url: str | None = None
    mail_from: str = "market-server@localhost"
    notify_email: tuple[str, ...] = ()
    webhooks: tuple[Webhook, ...] = ()
    cors_origins: tuple[str, ...] = ("*",)
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    jwt_secret: str | None = None
    jwt_public_key: str | None = None
    log_level: str = "info"
    demo_key: bool = True
    # benchmarks only: the runtime answers BENCH_STATIC_PATH itself with fixed bytes (the ceiling)
    bench_static: bool = False
    # notification outbox (hidden flags/env, for tests and tuning): retry backoff base, attempts, call timeout
    outbox_base_s: float = 30.0
    outbox_max_attempts: int = 8
    outbox_timeout_s: float = 10.0
    # hidden (tests): run the whole server on a fake "now" that starts here (epoch seconds) and advances in real
    # time, so date-dependent behaviour (trading days, candle rolls) can be tested on any calendar day
    clock_start: float | None = None
    # SPEC 12: memory (one hub, nothing installed) or redis (shared rate limits, key revocations over pub/sub)
    engine: EngineKind = EngineKind.MEMORY
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "market:"  # hidden: every Redis key and channel starts with it (tests use their own)
    # SPEC 12: PostgreSQL instead of SQLite in the data dir (docs/storage.md); async connections per hub
    database_url: str | None = None
    database_pool: int = 10
    # SPEC 12: `serve --workers N` runs N whole hubs on the same ports (SO_REUSEPORT; needs --engine redis);
    # worker_id (hidden) is set by that supervisor for each child: 1..N, 0 for a hub started on its own
    workers: int = 1
    worker_id: int = 0

    @property
    def feed_path(self) -> str | None:
        """PATH of a `jsonl:PATH` feed ("-" is stdin); None for the demo feed."""
        return self.feed.split(":", 1)[1] if self.feed.startswith("jsonl:") else None

    @property
    def is_demo(self) -> bool:
        return self.feed == "demo"

    def rate_for(self, plan: str, key_rate: int | None) -> int:
        if key_rate:
            return key_rate
        return self.plan_rate.get(plan, DEFAULT_ENTERPRISE_RATE)


# flag -> (type, help); defaults come from Settings. Every type is str: argparse only collects the text (from the
# command line or MARKET_* env) and _convert checks it, so a bad value is one line naming the flag, exit code 2
SERVE_FLAGS: dict[str, tuple[type, str]] = {
    "host": (str, "HTTP and WebSocket bind address"),
    "port": (str, "HTTP port"),
    "ws-port": (str, "WebSocket port"),
    "runtime": (str, "HTTP runtime: granian (default) or robyn"),
    "feed": (str, "demo | jsonl:PATH | jsonl:- (stdin)"),
    "seed": (str, "seed of the demo feed"),
    "tick-interval-ms": (str, "demo feed tick interval"),
    "market-refresh-s": (str, "public market snapshot refresh period"),
    "public-rate": (str, "public-site requests per minute per client IP"),
    "ws-handshake-rate": (str, "WebSocket handshakes per minute per client IP"),
    "plan-rate": (str, "per-plan requests/minute, e.g. free=60,professional=600"),
    "ws-max-conn": (str, "per-plan WebSocket connections, e.g. professional=5,enterprise=50"),
    "ws-slow-close-s": (str, argparse.SUPPRESS),
    "heartbeat-s": (str, "seconds between /ws/quotes heartbeats (default 5; 0: none)"),
    "body-timeout-s": (str, argparse.SUPPRESS),
    "idle-timeout-s": (str, argparse.SUPPRESS),
    "uploads-per-ip": (str, argparse.SUPPRESS),
    "smtp-url": (str, "smtp://user:pass@host:port or smtps://..."),
    "mail-from": (str, "From address of notification e-mail"),
    "notify-email": (str, "comma-separated notification recipients"),
    "cors-origins": (str, "comma-separated allowed origins (default *)"),
    "trusted-proxies": (str, "comma-separated IPs/CIDRs whose X-Forwarded-For is trusted"),
    "jwt-secret": (str, "HS256 secret (default: generated once into the data dir)"),
    "jwt-public-key": (str, "PEM file of an RS256/ES256 identity provider's public key"),
    "log-level": (str, "debug, info, warning or error"),
    "outbox-base-s": (str, argparse.SUPPRESS),
    "outbox-max-attempts": (str, argparse.SUPPRESS),
    "outbox-timeout-s": (str, argparse.SUPPRESS),
    "clock-start": (str, argparse.SUPPRESS),
    "engine": (str, "memory (default: one hub) or redis (hubs share one feed, rate limits, key revocations)"),
    "redis-url": (str, "Redis for --engine redis (default redis://127.0.0.1:6379/0)"),
    "redis-prefix": (str, argparse.SUPPRESS),
    "database-pool": (str, "PostgreSQL connections per hub (async pool size, default 10)"),
    "workers": (str, "hub processes sharing the HTTP and WebSocket ports on this machine (default 1; "
                     "more needs --engine redis)"),
    "worker-id": (str, argparse.SUPPRESS),
}


MAX_WORKERS = 64


def env_default(flag: str) -> str | None:
    return os.environ.get("MARKET_" + flag.upper().replace("-", "_"))


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=env_default("data-dir") or "data", help="data directory")
    parser.add_argument("--database-url", default=env_default("database-url") or None, metavar="URL",
                        help="postgresql://user@host:port/db: store everything in PostgreSQL instead of "
                        "SQLite in the data dir (env MARKET_DATABASE_URL)")


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """--engine/--redis-url/--redis-prefix for a command that must tell the hubs (e.g. `keys revoke`)."""
    for flag in ("engine", "redis-url", "redis-prefix"):
        parser.add_argument(f"--{flag}", default=env_default(flag), help=SERVE_FLAGS[flag][1])


def engine_settings(ns: argparse.Namespace) -> Settings:
    """The engine part of the settings from a command's flags, validated like `serve`'s."""
    values = {name: _convert(name, getattr(ns, name), Settings())
              for name in ("engine", "redis_url", "redis_prefix") if getattr(ns, name) is not None}
    settings = Settings(**values)  # type: ignore[arg-type]
    check_engine(settings)
    return settings


def add_serve_args(parser: argparse.ArgumentParser) -> None:
    for flag, (typ, help_text) in SERVE_FLAGS.items():
        parser.add_argument(f"--{flag}", type=typ, default=env_default(flag), help=help_text)
    parser.add_argument(
        "--webhook",
        action="append",
        default=[w for w in (env_default("webhook") or "").split(" ") if w],
        metavar="KIND=URL",
        help="notification webhook (repeatable); KIND is wecom, dingtalk, feishu or generic; "
        "append #secret=S to the URL for a signing secret",
    )
    parser.add_argument("--no-demo-key", action="store_true", help="do not create the demo key on first start")
    parser.add_argument("--ws-deflate", action=argparse.BooleanOptionalAction,
                        default=(env_default("ws-deflate") or "1").lower() not in ("0", "false", "no", "off"),
                        help="permessage-deflate on /ws/quotes for clients that offer it (default on)")
    parser.add_argument("--bench-static", action="store_true", default=bool(env_default("bench-static")),
                        help=argparse.SUPPRESS)
    add_data_dir(parser)


def settings_from_args(ns: argparse.Namespace) -> Settings:
    """Validate everything once; a ConfigError names the bad flag."""
    base = Settings()
    raw = {flag.replace("-", "_"): getattr(ns, flag.replace("-", "_")) for flag in SERVE_FLAGS}
    values: dict[str, object] = {
        "data_dir": Path(ns.data_dir),
        "database_url": ns.database_url,
        "demo_key": not ns.no_demo_key,
        "bench_static": ns.bench_static,
        "ws_deflate": ns.ws_deflate,
    }
    for name, value in raw.items():
        if value is None:
            continue
        values[name] = _convert(name, value, base)
    values["webhooks"] = tuple(_webhook(w) for w in ns.webhook)
    settings = Settings(**values)  # type: ignore[arg-type]
    _check(settings)
    return settings


INT_FLAGS = frozenset({"port", "ws_port", "seed", "tick_interval_ms", "public_rate", "ws_handshake_rate",
                       "outbox_max_attempts", "database_pool", "workers", "worker_id", "uploads_per_ip"})
FLOAT_FLAGS = frozenset({"market_refresh_s", "outbox_base_s", "outbox_timeout_s", "ws_slow_close_s", "heartbeat_s",
                         "body_timeout_s", "idle_timeout_s"})
CHOICES: dict[str, type[StrEnum]] = {"runtime": Runtime, "engine": EngineKind}
MAX_SHOWN = 40  # a bad value is echoed up to this many characters (never for URLs and secrets)


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...")


def _convert(name: str, value: object, base: Settings) -> object:
    """The flag's text as its setting; a ConfigError names the flag and says what it takes."""
    flag = "--" + name.replace("_", "-")
    text = str(value)
    if name in CHOICES:
        allowed = [c.value for c in CHOICES[name]]
        if text not in allowed:
            raise ConfigError(f"{flag}: must be {' or '.join(allowed)} (got {_shown(text)})")
        return CHOICES[name](text)
    if name in INT_FLAGS:
        return _integer(flag, text)
    if name in FLOAT_FLAGS:
        return _number(flag, text)
    try:
        if name == "plan_rate":
            return {**base.plan_rate, **_pairs(text, PLANS)}
        if name == "ws_max_conn":
            return {**base.ws_max_conn, **_pairs(text, PLANS)}
        if name in ("notify_email", "cors_origins"):
            return tuple(v.strip() for v in text.split(",") if v.strip())
        if name == "clock_start":
            return parse_instant(text)
        if name == "trusted_proxies":
            return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise ConfigError(f"{flag}: {exc}") from None
    return value


def _integer(flag: str, text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", text.strip()):
        raise ConfigError(f"{flag}: must be a whole number (got {_shown(text)})")
    return int(text)


def _number(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(f"{flag}: must be a number (got {_shown(text)})")
    return value


def parse_instant(text: str) -> float:
    """Epoch seconds, or ISO 8601 (a naive time is Asia/Shanghai), as epoch seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"must be epoch seconds or an ISO 8601 time (got {_shown(text)})") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=ZoneInfo("Asia/Shanghai"))
    return parsed.timestamp()


def settings_clock(s: Settings) -> Callable[[], float]:
    """The server's clock: real time, or real time shifted so that it read `clock_start` when this was called."""
    if s.clock_start is None:
        return time.time
    offset = s.clock_start - time.time()
    return lambda: time.time() + offset


def _pairs(text: str, allowed: tuple[str, ...]) -> dict[str, int]:
    """`plan=N,plan=N`: each plan one of `allowed`, each N a positive whole number."""
    out: dict[str, int] = {}
    for item in text.split(","):
        key, sep, num = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"must be PLAN=N[,PLAN=N...] (got {_shown(item)})")
        if key not in allowed:
            raise ValueError(f"unknown plan {_shown(key)} (plans: {', '.join(allowed)})")
        if not re.fullmatch(r"[0-9]{1,12}", num.strip()) or int(num) <= 0:
            raise ValueError(f"{key}={num.strip()}: must be a positive whole number")
        out[key] = int(num)
    return out


def _webhook(spec: str) -> Webhook:
    kind, sep, url = spec.partition("=")
    if not sep or kind not in WEBHOOK_KINDS:  # the spec holds a token: only a short KIND is echoed
        shown = f" (got KIND {kind!r})" if sep and len(kind) <= 20 else ""
        raise ConfigError(f"--webhook: must be KIND=URL with KIND one of {', '.join(WEBHOOK_KINDS)}{shown}")
    url, _, fragment = url.partition("#")
    if fragment and (not fragment.startswith("secret=") or fragment == "secret="):
        raise ConfigError(f"--webhook: {kind} URL: the part after # must be secret=S (value not shown)")
    secret = fragment[len("secret=") :] or None
    parts = urlsplit(url)
    shown = f"{parts.scheme}://{parts.hostname or ''}/..."  # the path and query hold tokens: never echoed
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ConfigError(f"--webhook: {kind} URL {shown} has an invalid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--webhook: {kind} URL {shown} is not an http(s) URL with a host")
    return Webhook(kind, url, secret)


def _check(s: Settings) -> None:
    for name in ("port", "ws_port"):
        port = getattr(s, name)
        if not 0 <= port <= 65535:
            raise ConfigError(f"--{name.replace('_', '-')}: {port} is not a TCP port")
    if s.port == s.ws_port and s.port != 0:
        raise ConfigError("--ws-port: must differ from --port")
    if s.feed != "demo" and not (s.feed.startswith("jsonl:") and len(s.feed) > len("jsonl:")):
        raise ConfigError(f"--feed: {s.feed!r} must be demo, jsonl:PATH or jsonl:-")
    if not 10 <= s.tick_interval_ms <= 60_000:
        raise ConfigError("--tick-interval-ms: must be between 10 and 60000")
    if not (s.heartbeat_s == 0 or 0.1 <= s.heartbeat_s <= 3600):
        raise ConfigError("--heartbeat-s: must be 0 (off) or between 0.1 and 3600 seconds")
    if not 0 < s.ws_slow_close_s <= 3600:
        raise ConfigError("--ws-slow-close-s: must be between 0 and 3600 seconds")
    if not 0 < s.body_timeout_s <= 3600:
        raise ConfigError("--body-timeout-s: must be between 0 and 3600 seconds")
    if not 1 <= s.idle_timeout_s <= 60:  # Granian (in ms) allows at most 60 s
        raise ConfigError("--idle-timeout-s: must be between 1 and 60 seconds")
    if s.uploads_per_ip < 1:
        raise ConfigError("--uploads-per-ip: must be positive")
    if s.market_refresh_s <= 0:
        raise ConfigError("--market-refresh-s: must be positive")
    if s.public_rate <= 0:
        raise ConfigError("--public-rate: must be positive")
    if not 0 < s.ws_handshake_rate <= MAX_RATE:
        raise ConfigError(f"--ws-handshake-rate: must be from 1 to {MAX_RATE}")
    check_engine(s)
    _check_workers(s)
    _check_database(s)
    if s.log_level not in ("debug", "info", "warning", "error"):
        raise ConfigError("--log-level: must be debug, info, warning or error")
    if s.smtp_url is not None:
        parts = urlsplit(s.smtp_url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ConfigError("--smtp-url: must be smtp://[user:pass@]host:port or smtps://... (value not shown)")
    _check_notify(s)


def _check_workers(s: Settings) -> None:
    if not 1 <= s.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers: must be from 1 to {MAX_WORKERS}")
    if not 0 <= s.worker_id <= MAX_WORKERS:
        raise ConfigError("--worker-id: out of range")
    if s.workers > 1 and s.engine is not EngineKind.REDIS:
        raise ConfigError("--workers: several hub processes need --engine redis (they share the feed, rate limits "
                          "and key revocations there)")
    if s.workers > 1 and 0 in (s.port, s.ws_port):
        raise ConfigError("--workers: needs fixed --port and --ws-port (not 0)")


def check_engine(s: Settings) -> None:
    """The engine flags (also used by `keys revoke`, which publishes on the engine)."""
    check_redis_url(s.redis_url)
    if not s.redis_prefix or len(s.redis_prefix) > 64 or not s.redis_prefix.isprintable():
        raise ConfigError("--redis-prefix: must be 1 to 64 printable characters")


def check_redis_url(url: str) -> None:
    """--redis-url, every form (redis, rediss, unix, redis+sentinel), by the parser the engine connects with: its
    shape, port and numeric db; the message names the flag and never repeats the URL (it may hold a password)."""
    from server.core.redis_url import parse_redis_url

    try:
        parse_redis_url(url)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


DATABASE_SHAPE = "must be postgresql://[user[:password]@]host[:port]/dbname"


def check_database_url(url: str) -> None:
    """--database-url names a host and a database, or libpq fills them from the environment (PGHOST, the
    OS user's name) and the hub creates its tables wherever that points. Host and dbname may be given as
    ?host= (a socket directory) and ?dbname= too, as libpq allows. The URL is never echoed (a password)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"--database-url: {DATABASE_SHAPE} (value not shown)")
    hosts = [urlsplit("//" + h) for h in parts.netloc.rpartition("@")[2].split(",")]  # libpq: h1:p1,h2:p2
    try:
        for host in hosts:
            host.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ConfigError("--database-url: invalid port (value not shown)") from None
    query = parse_qs(parts.query)
    if not (all(h.hostname for h in hosts) or query.get("host", [""])[-1]):
        raise ConfigError(f"--database-url: names no host; {DATABASE_SHAPE} (value not shown)")
    if not (unquote(parts.path).strip("/") or query.get("dbname", [""])[-1]):
        raise ConfigError(f"--database-url: names no database; {DATABASE_SHAPE} (value not shown)")


def check_command_flags(ns: argparse.Namespace) -> None:
    """The flags every command shares, checked like `serve`'s before the command runs."""
    if getattr(ns, "database_url", None):
        check_database_url(ns.database_url)
    if any(getattr(ns, name, None) is not None for name in ("engine", "redis_url", "redis_prefix")):
        engine_settings(ns)


def _check_database(s: Settings) -> None:
    if s.database_url is not None:
        check_database_url(s.database_url)
    if not 1 <= s.database_pool <= 1000:
        raise ConfigError("--database-pool: must be from 1 to 1000")


def _check_notify(s: Settings) -> None:
    if s.smtp_url is not None:
        try:
            urlsplit(s.smtp_url).port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            raise ConfigError("--smtp-url: invalid port (value not shown)") from None
        if not s.notify_email:
            raise ConfigError("--notify-email: required when --smtp-url is set")
    elif s.notify_email:
        raise ConfigError("--smtp-url: required when --notify-email is set")
    for flag, address in [("--notify-email", a) for a in s.notify_email] + [("--mail-from", s.mail_from)]:
        addr = parseaddr(address)[1]
        local, at, domain = addr.rpartition("@")
        if not (at and local and domain) or any(c.isspace() or c in "<>,;" for c in addr):
            raise ConfigError(f"{flag}: {address!r} is not an e-mail address")
    if not 0 < s.outbox_base_s <= 86_400:
        raise ConfigError("--outbox-base-s: must be between 0 and 86400 seconds")
    if not 1 <= s.outbox_max_attempts <= 100:
        raise ConfigError("--outbox-max-attempts: must be between 1 and 100")
    if not 0 < s.outbox_timeout_s <= 300:
        raise ConfigError("--outbox-timeout-s: must be between 0 and 300 seconds")
