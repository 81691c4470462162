"""A client generated from the live /openapi.json with openapi-python-client authenticates with X-SERVICE-Key
(no prefix) and calls the API: what a client developer would do first (README "Client developers")."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess

ENGINE_NEUTRAL = "the generated client against /openapi.json"

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "market_api_generated"

pytestmark = pytest.mark.skipif(not GENERATOR.exists(), reason="openapi-python-client (dev extra) is not installed")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("generated-client") / "data", "granian")
    yield srv
    assert srv.stop() == 0, srv.output()


@pytest.fixture(scope="module")
def generated(api: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    work = tmp_path_factory.mktemp("generated")
    spec = work / "openapi.json"
    spec.write_bytes(httpx.get(api.base + "/openapi.json").content)
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # its ruff hooks
    out = subprocess.run([str(GENERATOR), "generate", "--path", str(spec), "--meta", "none",
                          "--output-path", str(work / PACKAGE)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    # a warning means part of our document could not be turned into code: a real defect of the document, but for
    # one known limit of the generator: it makes no code for a JSON-lines body (SPEC 20's POST /api/v1/ingest,
    # application/x-ndjson; docs/ingest.md), so it skips that one publishing route and says so
    said = out.stdout + out.stderr
    known = re.compile(r"WARNING parsing POST /api/v1/ingest within \w+\. Endpoint will not be generated\.\s*\n\s*\n"
                       r"(?:Unsupported content type application/(?:x-ndjson|jsonl|json-lines)\s*\n)+")
    rest = known.sub("", said)
    assert "WARNING" not in rest and ("Warning" not in rest or said != rest), said
    sys.path.insert(0, str(work))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(work))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        shutil.rmtree(work, ignore_errors=True)


def test_the_documented_security_scheme_is_an_api_key_header(api: ServerProcess) -> None:
    spec = httpx.get(api.base + "/openapi.json").json()
    assert spec["components"]["securitySchemes"]["ServiceKey"] == {"type": "apiKey", "in": "header",
                                                                   "name": "X-SERVICE-Key"}


def test_generated_client_calls_two_endpoints_with_the_key(api: ServerProcess, generated: Any) -> None:
    get_quotes = importlib.import_module(f"{PACKAGE}.api.market_data.get_quotes")
    get_kline = importlib.import_module(f"{PACKAGE}.api.market_data.get_kline")
    models = importlib.import_module(f"{PACKAGE}.models")
    # as README "Client developers" says: the key goes in X-SERVICE-Key as it is, with no "Bearer " prefix
    client = generated.AuthenticatedClient(base_url=api.base, token=api.demo_key, prefix="",
                                           auth_header_name="X-SERVICE-Key", raise_on_unexpected_status=True)
    with client:
        quotes = get_quotes.sync_detailed(client=client)
        assert quotes.status_code == 200, quotes.content
        assert isinstance(quotes.parsed, models.QuoteList)
        assert quotes.parsed.count == len(quotes.parsed.quotes) >= 40
        brent = next(q for q in quotes.parsed.quotes if q.id == "brent")
        assert brent.price > 0 and brent.unit.en == "USD/bbl"
        kline = get_kline.sync_detailed("brent", client=client, days=5)
        assert kline.status_code == 200, kline.content
        assert isinstance(kline.parsed, models.CandleSeries)
        assert len(kline.parsed.series) == 5 and kline.parsed.id == "brent"
    # a wrong key: the generated client parses the documented problem
    wrong = generated.AuthenticatedClient(base_url=api.base, token="mk_wrong", prefix="",
                                          auth_header_name="X-SERVICE-Key")
    with wrong:
        refused = get_quotes.sync_detailed(client=wrong)
    assert refused.status_code == 401
    assert isinstance(refused.parsed, models.Problem) and refused.parsed.code.value == "unauthorized"
