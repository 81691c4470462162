"""`--redis-url`: parsed and checked in one place, without I/O (config validation calls it before anything starts).

Accepted forms (SPEC 12, 15):

- `redis://[[user]:pass@]host[:port][/db]`: one Redis (port 6379, db 0 by default); `user` is an ACL user;
- `rediss://...`: the same over TLS (`?ssl_ca_certs=PATH`, `ssl_certfile`, `ssl_keyfile`,
  `ssl_cert_reqs=none|optional|required`, `ssl_check_hostname=true|false`);
- `unix://[[user]:pass@]PATH[?db=N]`: a local socket;
- `redis+sentinel://[[user]:pass@]host[:port][,host[:port]...]/SERVICE[/db]`: the master of `SERVICE`
  as the Sentinels at those addresses name it (port 26379 by default), followed through a failover.
  `user:pass` are the data nodes' credentials; Sentinels that want their own give
  `?sentinel_username=...&sentinel_password=...`. `rediss+sentinel://` speaks TLS to both.

`parse_redis_url` returns a `RedisTarget` or raises ValueError with one line that names the flag and
never repeats the URL (it may hold a password). server/engine/redis_client.py builds every client
(async, sync, auto-pipelined) from a `RedisTarget`, so what is accepted here is what connects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote

FLAG = "--redis-url"
FORMS = ("redis://[user:pass@]host:port/db, rediss://..., unix://PATH or "
         "redis+sentinel://[user:pass@]host:port[,host:port...]/SERVICE[/db]")
SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel")
TLS_OPTIONS = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs", "ssl_check_hostname")
SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password")
CERT_REQS = ("none", "optional", "required")
BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
MAX_DB = 1 << 20  # Redis has 16 databases unless configured otherwise; anything larger is a typo
_DIGITS = re.compile(r"[0-9]{1,7}")
_SERVICE = re.compile(r"[A-Za-z0-9._-]{1,128}")
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}")


@dataclass(frozen=True)
class RedisTarget:
    """Where the Redis engine connects (see the module doc); `location()` is safe to log."""

    scheme: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    host: str | None = None  # redis://, rediss://
    port: int = 6379
    path: str | None = None  # unix://
    sentinels: tuple[tuple[str, int], ...] = ()  # redis+sentinel://
    service: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None
    tls: bool = False
    tls_options: dict[str, str | bool] = field(default_factory=dict)  # redis-py's ssl_* keyword arguments

    @property
    def sentinel(self) -> bool:
        return bool(self.sentinels)

    def location(self) -> str:
        """The target without its credentials, for messages and logs."""
        if self.path is not None:
            return f"unix://{self.path}" + (f"?db={self.db}" if self.db else "")
        if self.sentinel:
            nodes = ",".join(f"{_bracket(h)}:{p}" for h, p in self.sentinels)
            return f"{self.scheme}://{nodes}/{self.service}/{self.db}"
        return f"{self.scheme}://{_bracket(self.host or '')}:{self.port}/{self.db}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _fail(what: str) -> ValueError:
    return ValueError(f"{FLAG}: {what} (value not shown)")


def parse_redis_url(url: str) -> RedisTarget:
    """The `RedisTarget` of `url`, or ValueError("--redis-url: ...") naming what is wrong. No I/O."""
    if not isinstance(url, str) or not url.isprintable() or any(c.isspace() for c in url):
        raise _fail(f"must be {FORMS}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in SCHEMES:
        raise _fail(f"must be {FORMS}")
    if "#" in rest:
        raise _fail("a fragment (#...) is not allowed")
    rest, _, query = rest.partition("?")
    options = _options(query, scheme)
    tls = scheme.startswith("rediss")
    tls_options = {k: v for k, v in options.items() if k in TLS_OPTIONS}
    if tls_options and not tls:
        raise _fail("ssl_* options need rediss:// or rediss+sentinel://")
    if scheme == "unix":
        return _unix(rest, options)
    credentials, at, netloc = rest.rpartition("@")
    if not at:
        credentials = ""
    netloc, slash, path = netloc.partition("/")
    username, password = _credentials(credentials)
    if "db" in options:
        raise _fail("give the database in the path (/N), not as ?db=")
    if scheme.endswith("+sentinel"):
        return _sentinel(scheme, netloc, path if slash else "", username, password, options, tls, tls_options)
    if not all(k in TLS_OPTIONS for k in options):
        raise _fail("sentinel_* options need redis+sentinel://")
    host, port = _address(netloc, 6379)
    db = _db(path) if slash else 0
    return RedisTarget(scheme, db, username, password, host=host, port=port, tls=tls, tls_options=tls_options)


def _options(query: str, scheme: str) -> dict[str, str | bool]:
    try:
        raw = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query), max_num_fields=16)
    except ValueError:
        raise _fail("its query (?...) cannot be read") from None
    out: dict[str, str | bool] = {}
    for name, values in raw.items():
        if name not in (*TLS_OPTIONS, *SENTINEL_OPTIONS, "db"):
            raise _fail(f"unknown option {name[:40]!r}; known: {', '.join((*TLS_OPTIONS, *SENTINEL_OPTIONS))}")
        if len(values) != 1 or not values[0]:
            raise _fail(f"option {name} needs exactly one non-empty value")
        value = values[0]
        if name == "ssl_cert_reqs" and value.lower() not in CERT_REQS:
            raise _fail("ssl_cert_reqs must be none, optional or required")
        if name == "ssl_check_hostname":
            if value.lower() not in BOOLEANS:
                raise _fail("ssl_check_hostname must be true or false")
            out[name] = BOOLEANS[value.lower()]
            continue
        out[name] = value.lower() if name == "ssl_cert_reqs" else value
    if any(k in SENTINEL_OPTIONS for k in out) and not scheme.endswith("+sentinel"):
        raise _fail("sentinel_* options need redis+sentinel://")
    return out


def _credentials(text: str) -> tuple[str | None, str | None]:
    if not text:
        return None, None
    user, colon, password = text.partition(":")
    if not colon:  # redis-py reads a lone `x@` as a password; say so rather than guess
        raise _fail("credentials must be user:password@ or :password@")
    return (unquote(user) or None), unquote(password)


def _address(text: str, default_port: int) -> tuple[str, int]:
    if text.startswith("["):  # [IPv6]:port
        host, bracket, after = text[1:].partition("]")
        if not bracket or not host or (after and not after.startswith(":")):
            raise _fail("a host in [brackets] must be an IPv6 address: [::1]:6379")
        port_text = after[1:] if after else ""
        if not re.fullmatch(r"[0-9A-Fa-f:.]+", host):
            raise _fail("a host in [brackets] must be an IPv6 address: [::1]:6379")
    else:
        host, _, port_text = text.partition(":")
        if not host:
            raise _fail("a host is required")
        if not _HOST.fullmatch(host):
            raise _fail("a host name may hold letters, digits, '.', '-' and '_' only")
    if not port_text:
        return host, default_port
    if not _DIGITS.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise _fail("the port must be a number from 1 to 65535")
    return host, int(port_text)


def _db(text: str) -> int:
    if text == "":
        return 0
    if not _DIGITS.fullmatch(text) or int(text) >= MAX_DB:
        raise _fail("the database must be a number (redis://host:6379/0)")
    return int(text)


def _unix(rest: str, options: dict[str, str | bool]) -> RedisTarget:
    credentials, at, path = rest.rpartition("@")
    username, password = _credentials(credentials if at else "")
    if not path.startswith("/") or len(path) < 2:
        raise _fail("unix:// needs an absolute socket path (unix:///run/redis.sock?db=0)")
    if any(k != "db" for k in options):
        raise _fail("unix:// takes only ?db=N")
    db = _db(str(options.get("db", "")))
    return RedisTarget("unix", db, username, password, path=unquote(path))


def _sentinel(scheme: str, netloc: str, path: str, username: str | None, password: str | None,
              options: dict[str, str | bool], tls: bool, tls_options: dict[str, str | bool]) -> RedisTarget:
    if not netloc:
        raise _fail("redis+sentinel:// needs at least one Sentinel host:port")
    nodes = tuple(_address(part, 26379) for part in netloc.split(","))
    if len(set(nodes)) != len(nodes):
        raise _fail("a Sentinel address is listed twice")
    service, _, db_text = path.partition("/")
    if not service:
        raise _fail("redis+sentinel:// needs the service name: redis+sentinel://host:26379/SERVICE[/db]")
    if not _SERVICE.fullmatch(service):
        raise _fail("the Sentinel service name may hold letters, digits, '.', '-' and '_' only")
    if "/" in db_text:
        raise _fail("redis+sentinel:// takes /SERVICE[/db] and nothing after")
    db = _db(db_text)
    sentinel_user = options.get("sentinel_username")
    sentinel_password = options.get("sentinel_password")
    if sentinel_user is not None and sentinel_password is None:
        raise _fail("sentinel_username needs sentinel_password")
    return RedisTarget(scheme, db, username, password, sentinels=nodes, service=service,
                       sentinel_username=str(sentinel_user) if sentinel_user is not None else None,
                       sentinel_password=str(sentinel_password) if sentinel_password is not None else None,
                       tls=tls, tls_options=tls_options)
