"""Client tests: the `market_client` package from client/ against a real server (one runtime, granian).

client/ is put on sys.path, so the dev .venv needs no install step for it
(test_install.py checks that `pip install ./client` works on its own).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT, ServerProcess

CLIENT_DIR = ROOT / "client"
if str(CLIENT_DIR) not in sys.path:
    sys.path.insert(0, str(CLIENT_DIR))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One granian server per module: the client speaks HTTP and WebSocket, the runtime is not its concern."""
    data_dir = tmp_path_factory.mktemp("client") / "data"
    srv = ServerProcess(data_dir, "granian", "--public-rate", "100000")
    yield srv
    code = srv.stop()
    assert code == 0, f"server exited with {code}:\n{srv.output()}"


@pytest.fixture(scope="module")
def key(server: ServerProcess) -> str:
    return server.demo_key
