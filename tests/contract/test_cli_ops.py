"""The operator CLI as an operator meets it: bad data dirs and bad flags are one line and an exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from server.store.db import DB_NAME
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
