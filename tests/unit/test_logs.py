"""JSON log lines: one object per line, whatever the message or the traceback holds."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest

from server.logs import configure_logging


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    configure_logging("info", stream)
    yield stream
    root.handlers[:], root.level = saved[0], saved[1]


def test_a_traceback_stays_in_one_json_line_in_its_own_field(captured: io.StringIO) -> None:
    log = logging.getLogger("market.test")
    try:
        raise ValueError('bad "value"\nsecond line')
    except ValueError:
        log.exception('handler failed request_id=%s path=%s', "r-1", '/a "quoted"\npath\\x')
    log.info("after")
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2
    entry = orjson.loads(lines[0])
    assert entry["level"] == "ERROR" and entry["logger"] == "market.test"
    assert entry["msg"] == 'handler failed request_id=r-1 path=/a "quoted"\npath\\x'
    assert entry["traceback"].startswith("Traceback (most recent call last):")
    assert entry["traceback"].rstrip().endswith('ValueError: bad "value"\nsecond line')
    assert "Traceback" not in entry["msg"]
    assert entry["ts"].endswith("+08:00")
    assert orjson.loads(lines[1])["msg"] == "after" and "traceback" not in orjson.loads(lines[1])


def test_levels_below_the_configured_one_are_dropped(captured: io.StringIO) -> None:
    logging.getLogger("market.test").debug("noise")
    assert captured.getvalue() == ""


def test_a_background_round_failure_is_one_warning_when_storage_is_away_else_an_error_with_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    import psycopg

    from server.core.background import log_round_failure

    log = logging.getLogger("market.test")
    caplog.set_level(logging.INFO, logger="market.test")
    try:
        raise psycopg.OperationalError("connection failed: connection to server at \"127.0.0.1\", port 1 failed\n"
                                       "DETAIL: the second line is not logged")
    except psycopg.OperationalError as exc:
        log_round_failure(log, "key refresh", exc)
    try:
        raise KeyError("a bug")
    except KeyError as exc:
        log_round_failure(log, "outbox round", exc)
    away, bug = caplog.records
    assert (away.levelname, away.exc_info) == ("WARNING", None)
    assert away.getMessage() == ('key refresh failed: storage unavailable (OperationalError: connection failed: '
                                 'connection to server at "127.0.0.1", port 1 failed)')
    assert bug.levelname == "ERROR" and bug.getMessage() == "outbox round failed" and bug.exc_info is not None
