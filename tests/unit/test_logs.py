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
