"""Where the demo key is, on every start (issue 22: starts after the first said nothing about it)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ServerProcess


def _start_and_stop(data: Path) -> str:
    srv = ServerProcess(data, "granian")
    assert srv.stop() == 0, srv.output()
    return srv.output()


def test_every_start_says_where_the_demo_key_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key_file = data / "demo-key.txt"
    first = _start_and_stop(data)
    secret = key_file.read_text().strip()
    assert f"saved to {key_file}" in first and secret in first
    again = _start_and_stop(data)
    assert secret not in again and "shown once" not in again  # never printed twice
    assert f"the API key made on the first start is in {key_file}" in again
    assert f"keys create --plan professional --data-dir {data}" in again
    key_file.unlink()
    gone = _start_and_stop(data)
    assert f"was shown on the first start ({key_file} is gone)" in gone and secret not in gone
    assert f"{key_file}" not in _start_and_stop_without_demo_key(data)


def _start_and_stop_without_demo_key(data: Path) -> str:
    srv = ServerProcess(data, "granian", "--no-demo-key")
    assert srv.stop() == 0, srv.output()
    return srv.output()
