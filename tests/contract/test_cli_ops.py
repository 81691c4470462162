"""The operator CLI as an operator meets it: bad data dirs and bad flags are one line and an exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from server.store.sql.db import DB_NAME
from tests.conftest import ROOT, run_cli, sqlite_only

HASH = "ab" * 32

# every admin command, with arguments it accepts (files it reads are created by the test)
ADMIN_COMMANDS = [
    ("keys", "create", "--plan", "free"),
    ("keys", "list"),
    ("keys", "revoke", "key_000000000000"),
    ("users", "create", "--email", "ops@example.com", "--password", "long enough pw"),
    ("users", "disable", "ops@example.com"),
    ("content", "import", "{json}"),
    ("receipts", "import", "{json}"),
    ("evidence", "anchor", "--hash", HASH),
    ("candles", "import", "{csv}"),
    ("outbox", "list"),
    ("outbox", "retry", "job_0"),
]


def _args(command: tuple[str, ...], tmp_path: Path) -> list[str]:
    files = {"{json}": tmp_path / "in.json", "{csv}": tmp_path / "in.csv"}
    files["{json}"].write_text("[]")
    files["{csv}"].write_text("id,t,o,h,l,c,v\n")
    return [str(files[a]) if a in files else a for a in command]


def _one_line_error(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 1, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


@sqlite_only
@pytest.mark.parametrize("command", ADMIN_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_admin_commands_refuse_a_data_dir_that_does_not_exist(command: tuple[str, ...], tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "data"
    line = _one_line_error(run_cli(missing, *_args(command, tmp_path)))
    assert str(missing) in line and "does not exist" in line
    assert not missing.exists() and not missing.parent.exists()  # nothing created silently


@sqlite_only
@pytest.mark.parametrize("command", [("keys", "list"), ("users", "disable", "x@example.com"), ("outbox", "list")],
                         ids=lambda c: " ".join(c[:2]))
def test_admin_commands_on_a_regular_file_or_proc(command: tuple[str, ...], tmp_path: Path) -> None:
    a_file = tmp_path / "plain-file"
    a_file.write_text("not a directory")
    line = _one_line_error(run_cli(a_file, *command))
    assert str(a_file) in line and "not a directory" in line
    line = _one_line_error(run_cli(Path("/proc/x"), *command))
    assert "/proc/x" in line


def _serve(data_dir: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "server", "serve", "--data-dir", data_dir, "--port", "0", "--ws-port", "0"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_serve_on_a_regular_file_or_proc_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "plain-file"
    a_file.write_text("not a directory")
    line = _one_line_error(_serve(str(a_file)))
    assert str(a_file) in line and "not a directory" in line
    line = _one_line_error(_serve("/proc/x"))
    assert "cannot create data dir /proc/x" in line


@sqlite_only
def test_a_data_dir_whose_database_is_garbage_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / DB_NAME).write_bytes(b"this is not an SQLite database" * 100)
    line = _one_line_error(run_cli(data, "keys", "list"))
    assert str(data) in line


def test_keys_create_bounds_the_rate(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for rate in ("60000000001", "0", "-3", "1e9", "lots"):
        out = run_cli(data, "keys", "create", "--plan", "enterprise", "--rate", rate)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert "--rate: must be an integer from 1 to 1,000,000,000" in out.stderr
    ok = run_cli(data, "keys", "create", "--plan", "enterprise", "--rate", "1000000000", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["rate"] == 1_000_000_000
    listed = json.loads(run_cli(data, "keys", "list", "--json").stdout)
    assert [k["rate"] for k in listed] == [1_000_000_000]  # the refused ones created nothing


# --- configuration is checked before anything starts (issue 21, SPEC 15) ---------------------------------------

def _config_error(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """Run `market-server CMD` (no test database flags: the bad value is the point); exit 2, one line, returned."""
    import os

    out = subprocess.run([sys.executable, "-m", "server", *cmd], capture_output=True, text=True, timeout=60,
                         cwd=ROOT, env={**os.environ, **(env or {})})
    assert out.returncode == 2, (cmd, out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and out.stdout == "", out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


BAD_DATABASE_URLS = {
    "postgres:/bad": "names no host",
    "postgresql://": "names no host",  # libpq would fill host and database from the environment
    "postgresql://ops:S3CRETPW@127.0.0.1:5432": "names no database",
    "postgresql://ops:S3CRETPW@127.0.0.1:54x2/market": "invalid port",
    "mysql://ops:S3CRETPW@db/market": "must be postgresql://",
}


@pytest.mark.parametrize("command", [("serve",), *ADMIN_COMMANDS, ("db", "migrate")], ids=lambda c: " ".join(c[:2]))
def test_every_command_refuses_a_bad_database_url_in_one_line(command: tuple[str, ...], tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # every bad shape on one command; one (in turn) on each of the others (they share the one check)
    which = [("serve",), *ADMIN_COMMANDS, ("db", "migrate")].index(command) % len(BAD_DATABASE_URLS)
    urls = BAD_DATABASE_URLS if command[:2] == ("keys", "create") else dict([list(BAD_DATABASE_URLS.items())[which]])
    for url, reason in urls.items():
        line = _config_error([*_args(command, tmp_path), "--data-dir", str(data), "--database-url", url])
        assert line.startswith("market-server: configuration error: --database-url: ") and reason in line, line
        assert "S3CRETPW" not in line
    assert list(data.iterdir()) == []  # nothing created, in SQLite or anywhere


def test_the_database_url_may_name_host_and_database_as_libpq_parameters() -> None:
    from server.config import ConfigError, check_database_url

    check_database_url("postgresql:///market?host=/var/run/postgresql")  # a socket directory
    check_database_url("postgresql://db1:5432,db2:5432/market?target_session_attrs=read-write")
    check_database_url("postgres://u@127.0.0.1?dbname=market")
    with pytest.raises(ConfigError, match="names no database"):
        check_database_url("postgresql://127.0.0.1/?dbname=")


SERVE_BAD_VALUES = [
    (("--plan-rate", "free=abc"), "--plan-rate: free=abc: must be a positive whole number"),
    (("--plan-rate", "free"), "--plan-rate: must be PLAN=N"),
    (("--ws-max-conn", "gold=5"), "--ws-max-conn: unknown plan 'gold'"),
    (("--engine", "bogus"), "--engine: must be memory or redis (got 'bogus')"),
    (("--runtime", "tomcat"), "--runtime: must be granian or robyn"),
    (("--redis-url", "redis://127.0.0.1:6379/abc"), "--redis-url: the database must be a number"),
    (("--redis-url", "redis://:pw@127.0.0.1:6379/0?db=1"), "--redis-url: give the database in the path"),
    (("--redis-url", "unix:///run/redis.sock?db=x"), "--redis-url: the database must be a number"),
    (("--redis-url", "redis+sentinel://:pw@127.0.0.1:26379/mymaster/x"), "--redis-url: the database must be a number"),
    (("--port", "abc"), "--port: must be a whole number (got 'abc')"),
    (("--tick-interval-ms", "1e3"), "--tick-interval-ms: must be a whole number"),
    (("--market-refresh-s", "nan"), "--market-refresh-s: must be a number"),
    (("--clock-start", "yesterday"), "--clock-start: must be epoch seconds or an ISO 8601 time"),
    (("--database-pool", "lots"), "--database-pool: must be a whole number"),
]


@pytest.mark.parametrize(("flags", "message"), SERVE_BAD_VALUES, ids=lambda v: v[0] if isinstance(v, tuple) else "")
def test_serve_refuses_a_bad_value_naming_the_flag_before_anything_starts(
        flags: tuple[str, ...], message: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    line = _config_error(["serve", "--data-dir", str(data), *flags])
    assert line.startswith("market-server: configuration error: ") and message in line, line
    assert "pw@" not in line and not data.exists()  # not even the data dir was made


def test_a_bad_value_from_the_environment_is_the_same_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    line = _config_error(["serve", "--data-dir", str(data)], env={"MARKET_PORT": "eighty"})
    assert line == "market-server: configuration error: --port: must be a whole number (got 'eighty')"
    line = _config_error(["keys", "list", "--data-dir", str(tmp_path)],
                         env={"MARKET_DATABASE_URL": "postgresql://"})
    assert "--database-url: names no host" in line


@pytest.mark.parametrize(("flags", "message"), [
    (("--engine", "bogus"), "--engine: must be memory or redis (got 'bogus')"),
    (("--engine", "redis", "--redis-url", "redis://127.0.0.1:6379/abc"), "--redis-url: the database must be a number"),
    (("--redis-prefix", ""), "--redis-prefix: must be 1 to 64 printable characters"),
], ids=["engine", "redis-db", "prefix"])
def test_keys_revoke_refuses_bad_engine_flags_before_revoking(flags: tuple[str, ...], message: str,
                                                              tmp_path: Path) -> None:
    line = _config_error(["keys", "revoke", "key_000000000000", "--data-dir", str(tmp_path), *flags])
    assert line == f"market-server: configuration error: {message}" or message in line, line


def test_a_bad_command_line_is_one_line_too(tmp_path: Path) -> None:
    line = _config_error(["keys", "create", "--data-dir", str(tmp_path)])
    assert "the following arguments are required: --plan" in line and "--help" in line
