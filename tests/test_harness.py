"""The test harness itself: ports picked for a server can be taken before it binds them."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import conftest
from tests.conftest import ServerProcess, free_ports


def test_free_ports_are_distinct() -> None:
    for _ in range(50):
        ports = free_ports(3)
        assert len(set(ports)) == 3


def test_a_server_whose_port_was_taken_meanwhile_starts_again_on_new_ports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # another process binds the port between free_ports() and the server's own bind
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        picks: Iterator[list[int]] = iter([[taken, free_ports(1)[0]]])
        real = conftest.free_ports
        monkeypatch.setattr(conftest, "free_ports", lambda n: next(picks, None) or real(n))
        srv = ServerProcess(tmp_path / "data", "granian")
        try:
            assert srv.port != taken
            assert httpx.get(srv.base + "/readyz", timeout=5).status_code == 200
        finally:
            assert srv.stop() == 0, srv.output()
