"""Structured logs: one JSON object per line, whatever the message or traceback holds.

A message with quotes or newlines, and a traceback, stay inside their JSON strings
(orjson escapes them), so every line parses on its own. The traceback is a field
of its own (`traceback`), not glued to the message. Only the message and the
exception go out: never the record's arguments or extras, so nothing reaches a
log that the call site did not put into its message (keys are logged by id).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import orjson

from server.market.timefmt import iso


class JsonFormatter(logging.Formatter):
    def __init__(self, worker: int = 0) -> None:
        super().__init__()
        self.worker = worker  # `serve --workers N`: each line names its hub process (1..N)

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {"ts": iso(record.created), "level": record.levelname, "logger": record.name,
                                    "msg": record.getMessage()}
        if self.worker:
            entry["worker"] = self.worker
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["traceback"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str, stream: TextIO | None = None, worker: int = 0) -> None:
    """Every logger's records as JSON lines on stderr (or `stream`), at `level` and above."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter(worker))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
