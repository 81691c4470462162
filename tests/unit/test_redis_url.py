"""`--redis-url` parsing (server/core/redis_url.py): every accepted form, and one clear line for each bad one."""

from __future__ import annotations

import pytest

from server.core.redis_url import RedisTarget, parse_redis_url


def test_plain_url_with_an_acl_user_and_a_db() -> None:
    t = parse_redis_url("redis://alice:s%40cret@cache.internal:6380/3")
    assert (t.scheme, t.host, t.port, t.db) == ("redis", "cache.internal", 6380, 3)
    assert (t.username, t.password) == ("alice", "s@cret")
    assert not t.tls and not t.sentinel
    assert t.location() == "redis://cache.internal:6380/3"  # no credentials


def test_defaults_and_a_password_without_a_user() -> None:
    t = parse_redis_url("redis://127.0.0.1")
    assert (t.host, t.port, t.db, t.username, t.password) == ("127.0.0.1", 6379, 0, None, None)
    t = parse_redis_url("redis://:pw@[::1]:7000/")
    assert (t.host, t.port, t.db, t.username, t.password) == ("::1", 7000, 0, None, "pw")
    assert t.location() == "redis://[::1]:7000/0"


def test_tls_with_its_options() -> None:
    t = parse_redis_url("rediss://u:p@h:6390/1?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=REQUIRED"
                        "&ssl_check_hostname=false")
    assert t.tls and t.scheme == "rediss" and t.db == 1
    assert t.tls_options == {"ssl_ca_certs": "/etc/ca.pem", "ssl_cert_reqs": "required", "ssl_check_hostname": False}


def test_unix_socket() -> None:
    t = parse_redis_url("unix://:pw@/run/redis/redis.sock?db=2")
    assert (t.path, t.db, t.password) == ("/run/redis/redis.sock", 2, "pw")
    assert t.location() == "unix:///run/redis/redis.sock?db=2"


def test_sentinel_with_several_nodes_a_service_and_a_db() -> None:
    t = parse_redis_url("redis+sentinel://app:pw@10.0.0.1:26379,10.0.0.2,[fd00::3]:26380/market-main/4"
                        "?sentinel_password=spw")
    assert t.sentinel and t.service == "market-main" and t.db == 4
    assert t.sentinels == (("10.0.0.1", 26379), ("10.0.0.2", 26379), ("fd00::3", 26380))
    assert (t.username, t.password, t.sentinel_username, t.sentinel_password) == ("app", "pw", None, "spw")
    assert t.location() == "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379,[fd00::3]:26380/market-main/4"
    assert parse_redis_url("rediss+sentinel://h/svc").tls
    assert parse_redis_url("redis+sentinel://h:1/svc").db == 0


@pytest.mark.parametrize(("url", "says"), [
    ("redis://127.0.0.1:6379/abc", "database must be a number"),
    ("redis://127.0.0.1:6379/-1", "database must be a number"),
    ("redis://127.0.0.1:6379/0/1", "database must be a number"),
    ("redis://127.0.0.1:6379/99999999", "database must be a number"),
    ("redis://h/1?db=2", "not as ?db="),
    ("redis://h:0/0", "port must be a number from 1 to 65535"),
    ("redis://h:65536/0", "port must be a number from 1 to 65535"),
    ("redis://h:port/0", "port must be a number from 1 to 65535"),
    ("redis://:6379/0", "a host is required"),
    ("redis://", "a host is required"),
    ("redis://bad host/0", "must be"),
    ("redis://h\u00e9/0", "host name may hold"),
    ("redis://[zz]:1/0", "IPv6"),
    ("redis://onlyuser@h/0", "credentials must be user:password@"),
    ("http://h:6379/0", "must be redis://"),
    ("h:6379", "must be redis://"),
    ("", "must be redis://"),
    ("redis://h/0#frag", "fragment"),
    ("redis://h/0?ssl_ca_certs=/x", "ssl_* options need rediss://"),
    ("rediss://h/0?ssl_cert_reqs=maybe", "ssl_cert_reqs must be"),
    ("rediss://h/0?ssl_check_hostname=perhaps", "ssl_check_hostname must be"),
    ("rediss://h/0?timeout=3", "unknown option 'timeout'"),
    ("rediss://h/0?ssl_ca_certs=", "exactly one non-empty value"),
    ("rediss://h/0?ssl_ca_certs=a&ssl_ca_certs=b", "exactly one non-empty value"),
    ("redis://h/0?sentinel_password=x", "sentinel_* options need redis+sentinel://"),
    ("unix://relative.sock", "absolute socket path"),
    ("unix:///run/r.sock?db=x", "database must be a number"),
    ("redis+sentinel://h:26379", "needs the service name"),
    ("redis+sentinel://h:26379/", "needs the service name"),
    ("redis+sentinel:///svc", "at least one Sentinel"),
    ("redis+sentinel://h:26379,/svc", "a host is required"),
    ("redis+sentinel://h:26379,h:26379/svc", "listed twice"),
    ("redis+sentinel://h:x/svc", "port must be a number"),
    ("redis+sentinel://h/svc/abc", "database must be a number"),
    ("redis+sentinel://h/svc/0/1", "nothing after"),
    ("redis+sentinel://h/sv%20c", "service name may hold"),
    ("redis+sentinel://h/svc?sentinel_username=u", "sentinel_username needs sentinel_password"),
])
def test_bad_urls_get_one_line_naming_the_flag_and_not_the_value(url: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_redis_url(url)
    message = str(caught.value)
    assert message.startswith("--redis-url: ") and says in message, message
    assert "\n" not in message
    if url:
        assert url not in message  # it may hold a password


def test_a_password_never_shows_in_a_message() -> None:
    with pytest.raises(ValueError) as caught:
        parse_redis_url("redis://user:hunter2@h:6379/notadb")
    assert "hunter2" not in str(caught.value)


def test_the_target_is_frozen_and_comparable() -> None:
    assert parse_redis_url("redis://h:1/2") == RedisTarget("redis", 2, host="h", port=1)
    with pytest.raises(AttributeError):
        parse_redis_url("redis://h").db = 3  # type: ignore[misc]
