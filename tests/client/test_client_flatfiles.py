"""The Python client's flat files (SPEC 18): the listing typed, a download checked against its sha256, a broken
download resumed with Range (a relay cuts the first response mid-body), a corrupt partial file caught by the
checksum, and `market-client flatfiles` listing and downloading from the command line."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import redirect_stderr
from datetime import date
from pathlib import Path

import pytest
from market_client import ChecksumMismatch, Forbidden, MarketClient
from market_client.cli import main

from tests.contract.test_flatfile_routes import Hub, start_hub


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    started = start_hub(tmp_path_factory.mktemp("client-flat"), "granian")
    yield started
    assert started.srv.stop() == 0, started.srv.output()


class CutOnce:
    """A TCP relay to the hub that, on its first connection, passes the response head and `body_bytes` bytes of
    the body, then resets both sides; later connections pass everything. It keeps each request's head."""

    def __init__(self, port: int, body_bytes: int) -> None:
        self.target, self.body_bytes = port, body_bytes
        self.heads: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        first = True
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client, first), daemon=True).start()
            first = False

    def _relay(self, client: socket.socket, cut: bool) -> None:
        server = socket.create_connection(("127.0.0.1", self.target))
        head = b""
        while b"\r\n\r\n" not in head:
            piece = client.recv(65536)
            if not piece:
                return
            head += piece
        self.heads.append(head)
        server.sendall(head)
        sent = b""
        while piece := server.recv(65536):
            sent += piece
            end = sent.find(b"\r\n\r\n")
            if cut and end >= 0 and len(sent) >= end + 4 + self.body_bytes:
                client.sendall(sent[:end + 4 + self.body_bytes])
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                break
            if not cut:
                client.sendall(piece)
                sent = b""
        client.close()
        server.close()

    def close(self) -> None:
        self.listener.close()


def test_list_and_download(hub: Hub, tmp_path: Path) -> None:
    with MarketClient(hub.srv.base, hub.key) as api:
        files = api.flatfiles("ticks", date(2026, 11, 16), "2026-11-18").files
        assert [(f.date, f.format, f.rows) for f in files] == [(date(2026, 11, 17), "csv.gz", 5)]
        path = api.download_flatfile(files[0], tmp_path)
        assert path == tmp_path / "ticks-2026-11-17.csv.gz"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == files[0].sha256
        assert not path.with_name(path.name + ".part").exists()
        with MarketClient(hub.srv.base, hub.free) as free, pytest.raises(Forbidden) as refused:
            free.flatfiles("ticks")
        assert refused.value.code == "plan_required"


def test_a_broken_download_resumes_where_it_broke(hub: Hub, tmp_path: Path) -> None:
    with MarketClient(hub.srv.base, hub.key) as api:
        entry = api.flatfiles("ticks", "2026-11-17", "2026-11-17", "parquet").files[0]
    relay = CutOnce(hub.srv.port, body_bytes=100)
    try:
        with MarketClient(f"http://127.0.0.1:{relay.port}", hub.key) as api:
            path = api.download_flatfile(entry, tmp_path)
    finally:
        relay.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256 and path.stat().st_size == entry.bytes
    assert len(relay.heads) == 2 and b"range: bytes=100-" in relay.heads[1].lower(), relay.heads
    assert f'if-range: "{entry.sha256}"'.encode() in relay.heads[1].lower()


def test_a_corrupt_part_is_caught_by_the_checksum(hub: Hub, tmp_path: Path) -> None:
    with MarketClient(hub.srv.base, hub.key) as api:
        entry = api.flatfiles("candles-1m", "2026-11-17", "2026-11-17").files[0]
        part = tmp_path / "candles-1m-2026-11-17.csv.gz.part"
        part.write_bytes(b"\0" * 10)  # a part that is not this file's beginning: resumed, then refused
        with pytest.raises(ChecksumMismatch):
            api.download_flatfile(entry, tmp_path)
        assert not part.exists() and not (tmp_path / "candles-1m-2026-11-17.csv.gz").exists()
        part.write_bytes(b"\0" * (entry.bytes + 5))  # longer than the file: started over
        assert api.download_flatfile(entry, tmp_path).stat().st_size == entry.bytes


def test_the_cli_lists_and_downloads(hub: Hub, tmp_path: Path) -> None:
    out = io.StringIO()
    base = ["--url", hub.srv.base, "--key", hub.key, "--from", "2026-11-16", "--to", "2026-11-18"]
    assert main(["flatfiles", "candles-1d", *base], out) == 0
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["2026-11-16", "2026-11-17"]
    assert [line.split()[1] for line in lines] == ["missing", "missing"]  # each day's condition, after its date
    out = io.StringIO()
    assert main(["flatfiles", "candles-1d", *base, "--download", str(tmp_path)], out) == 0
    assert out.getvalue().count(" ok\n") == 2 and (tmp_path / "candles-1d-2026-11-17.csv.gz").exists()
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["flatfiles", "ticks", "--url", hub.srv.base, "--key", hub.free], io.StringIO()) == 1
    assert "plan_required" in err.getvalue()


def test_a_venues_files(hub: Hub, tmp_path: Path) -> None:
    """issue 39 item 9: `venue=` lists a venue's own files (methanol's only, for zce: brent is ICE's), downloaded
    under a name that says the venue, beside the all-venue file of the same day."""
    with MarketClient(hub.srv.base, hub.key) as api:
        files = api.flatfiles("ticks", "2026-11-16", "2026-11-18", venue="zce").files
        assert [(f.venue, f.date, f.rows) for f in files] == [("zce", date(2026, 11, 17), 3)]
        # SPEC 20: three ticks in a day of sessions, --stale-after 60 s: degraded, with its gaps counted
        assert files[0].condition == "degraded" and files[0].gaps > 0
        assert files[0].url == "/api/v1/flatfiles/zce/ticks/2026-11-17.csv.gz"
        path = api.download_flatfile(files[0], tmp_path)
        assert path == tmp_path / "zce-ticks-2026-11-17.csv.gz"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == files[0].sha256
        every = api.flatfiles("ticks", "2026-11-16", "2026-11-18").files
        assert every[0].venue is None and every[0].rows == 5
        assert every[0].condition == "missing"  # the worst over the venues trading that date: most had no tick
        assert api.download_flatfile(every[0], tmp_path) == tmp_path / "ticks-2026-11-17.csv.gz"
    out = io.StringIO()
    base = ["--url", hub.srv.base, "--key", hub.key, "--from", "2026-11-16", "--to", "2026-11-18"]
    assert main(["flatfiles", "ticks", *base, "--venue", "ice-eu", "--json"], out) == 0
    assert [json.loads(line)["url"] for line in out.getvalue().splitlines()] == [
        "/api/v1/flatfiles/ice-eu/ticks/2026-11-17.csv.gz"]
