"""Parsers and checks of the settings that take more than a number: plan tables, networks, instants, webhooks,
Redis and PostgreSQL URLs. A parser raises ValueError(what is wrong) and the caller names the flag; a URL check
raises the ConfigError itself (its message names the flag and never repeats the URL: it may hold a password)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import ZoneInfo

from server.config.setting import ConfigError, shown

PLANS = ("free", "professional", "enterprise")
WEBHOOK_KINDS = ("wecom", "dingtalk", "feishu", "generic")
DEFAULT_PLAN_RATE = {"free": 60, "professional": 600}
DEFAULT_WS_MAX_CONN = {"professional": 5, "enterprise": 50}
DATABASE_SHAPE = "must be postgresql://[user[:password]@]host[:port]/dbname"


@dataclass(frozen=True, slots=True)
class Webhook:
    kind: str
    url: str
    secret: str | None = None


def pairs(text: str, allowed: tuple[str, ...]) -> dict[str, int]:
    """`plan=N,plan=N`: each plan one of `allowed`, each N a positive whole number."""
    out: dict[str, int] = {}
    for item in text.split(","):
        key, sep, num = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"must be PLAN=N[,PLAN=N...] (got {shown(item)})")
        if key not in allowed:
            raise ValueError(f"unknown plan {shown(key)} (plans: {', '.join(allowed)})")
        if not re.fullmatch(r"[0-9]{1,12}", num.strip()) or int(num) <= 0:
            raise ValueError(f"{key}={num.strip()}: must be a positive whole number")
        out[key] = int(num)
    return out


def plan_rate(text: str) -> dict[str, int]:
    """--plan-rate: the plans it names replace their default rates."""
    return {**DEFAULT_PLAN_RATE, **pairs(text, PLANS)}


def ws_max_conn(text: str) -> dict[str, int]:
    """--ws-max-conn: the plans it names replace their default connection counts."""
    return {**DEFAULT_WS_MAX_CONN, **pairs(text, PLANS)}


HISTORY_KINDS = ("ticks", "1m", "5m", "15m", "1h", "1d")  # server/store/history/retention.py's kinds (SPEC 18)


def retention_days(text: str) -> dict[str, int]:
    """--retention: `kind=days,...` for the kinds that differ from the defaults (0 keeps forever)."""
    out: dict[str, int] = {}
    for item in text.split(","):
        key, sep, num = item.partition("=")
        key = key.strip()
        if not sep or key not in HISTORY_KINDS:
            raise ValueError(f"must be KIND=DAYS[,KIND=DAYS...] with KIND one of {', '.join(HISTORY_KINDS)} "
                             f"(got {shown(item)})")
        if not re.fullmatch(r"[0-9]{1,6}", num.strip()):
            raise ValueError(f"{key}={num.strip()}: must be a whole number of days (0 keeps forever)")
        out[key] = int(num)
    return out


def networks(text: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in text.split(",") if v.strip())


def parse_instant(text: str) -> float:
    """Epoch seconds, or ISO 8601 (a naive time is Asia/Shanghai), as epoch seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"must be epoch seconds or an ISO 8601 time (got {shown(text)})") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=ZoneInfo("Asia/Shanghai"))
    return parsed.timestamp()


def webhook(spec: str) -> Webhook:
    """KIND=URL[#secret=S] as a Webhook; the URL's path and query hold tokens and are never echoed."""
    kind, sep, url = spec.partition("=")
    if not sep or kind not in WEBHOOK_KINDS:  # the spec holds a token: only a short KIND is echoed
        shown_kind = f" (got KIND {kind!r})" if sep and len(kind) <= 20 else ""
        raise ValueError(f"must be KIND=URL with KIND one of {', '.join(WEBHOOK_KINDS)}{shown_kind}")
    url, _, fragment = url.partition("#")
    if fragment and (not fragment.startswith("secret=") or fragment == "secret="):
        raise ValueError(f"{kind} URL: the part after # must be secret=S (value not shown)")
    secret = fragment[len("secret=") :] or None
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.hostname or ''}/..."
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ValueError(f"{kind} URL {where} has an invalid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{kind} URL {where} is not an http(s) URL with a host")
    return Webhook(kind, url, secret)


def check_redis_url_text(url: str) -> None:
    """--redis-url, every form (redis, rediss, unix, redis+sentinel), by the parser the engine connects with: its
    shape, port and numeric db."""
    from server.core.redis_url import parse_redis_url

    try:
        parse_redis_url(url)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def check_database_url_text(url: str | None) -> None:
    """--database-url names a host and a database, or libpq fills them from the environment (PGHOST, the
    OS user's name) and the hub creates its tables wherever that points. Host and dbname may be given as
    ?host= (a socket directory) and ?dbname= too, as libpq allows."""
    if url is None:
        return
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
