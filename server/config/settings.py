"""One typed settings object, built from flags and MARKET_* env, validated once.

`Settings` is every group of server/config/groups.py at once (its fields are theirs, so `Settings(port=0)` and
`settings.port` work wherever the whole is wanted: the CLI, tests, benchmarks); `settings.group(FeedSettings)`
is the one group a part is handed. Every `serve` flag also reads env `MARKET_<FLAG>` (dashes as underscores,
e.g. MARKET_WS_PORT); a flag on the command line wins over the env.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TypeVar

from server.config.groups import (
    AuthSettings,
    EngineKind,
    EngineSettings,
    FeedSettings,
    Group,
    HttpSettings,
    LimitSettings,
    NotifySettings,
    ProcessSettings,
    SiteSettings,
    StorageSettings,
    StreamSettings,
)
from server.config.parsers import check_database_url_text, check_redis_url_text
from server.config.setting import ConfigError, add_option, check_fields, flagged, read_group, spec_of

BENCH_STATIC_PATH = "/__bench/static"

G = TypeVar("G", bound=Group)


class ServiceUnreachable(Exception):
    """A service the settings name (Redis, ...) cannot be reached while the hub starts: one line, exit 1."""


# The groups in the order their flags appear in `serve --help` and are checked.
GROUPS: tuple[type[Group], ...] = (HttpSettings, FeedSettings, SiteSettings, LimitSettings, StreamSettings,
                                   NotifySettings, AuthSettings, ProcessSettings, EngineSettings, StorageSettings)


@dataclass(frozen=True)
class Settings(HttpSettings, FeedSettings, SiteSettings, LimitSettings, StreamSettings, NotifySettings,
               AuthSettings, ProcessSettings, EngineSettings, StorageSettings):
    """Every setting of a hub (the groups' fields, flat); a part receives `group(...)`, only what it reads."""

    def group(self, kind: type[G]) -> G:
        """This settings' values of one group, as that group (what the root hands a part)."""
        return kind(**{f.name: getattr(self, f.name) for f in fields(kind)})  # type: ignore[arg-type]

    def check(self) -> None:
        """Every field's check, each group's rules, then the rules across groups; the first error is raised."""
        for kind in GROUPS:
            part = self.group(kind)
            check_fields(part)
            part.check()
        _check_workers(self)


def _check_workers(s: Settings) -> None:
    if s.workers > 1 and s.engine is not EngineKind.REDIS:
        raise ConfigError("--workers: several hub processes need --engine redis (they share the feed, rate limits "
                          "and key revocations there)")
    if s.workers > 1 and 0 in (s.port, s.ws_port):
        raise ConfigError("--workers: needs fixed --port and --ws-port (not 0)")


def add_serve_args(parser: argparse.ArgumentParser) -> None:
    """Every setting's option, group by group."""
    for kind in GROUPS:
        for f, flag in flagged(kind):
            add_option(parser, f, flag)


def settings_from_args(ns: argparse.Namespace) -> Settings:
    """Validate everything once; a ConfigError names the bad flag."""
    values: dict[str, object] = {}
    for kind in GROUPS:
        values.update(read_group(kind, ns))
    settings = Settings(**values)  # type: ignore[arg-type]
    settings.check()
    return settings


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """--data-dir and --database-url, which every command takes."""
    for f, flag in flagged(StorageSettings):
        if spec_of(f).common:
            add_option(parser, f, flag)


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """--engine/--redis-url/--redis-prefix for a command that must tell the hubs (e.g. `keys revoke`)."""
    for f, flag in flagged(EngineSettings):
        add_option(parser, f, flag)


HISTORY_FLAGS = ("retention", "clock_start")  # what a command writing the history judges rows by, as `serve` would


def add_history_args(parser: argparse.ArgumentParser) -> None:
    """--retention and (hidden, tests) --clock-start for a command that writes the history (`ticks import`)."""
    for group in (StorageSettings, ProcessSettings):
        for f, flag in flagged(group):
            if f.name in HISTORY_FLAGS:
                add_option(parser, f, flag)


def history_settings(ns: argparse.Namespace) -> Settings:
    """The retention and the clock of a command's history flags, parsed and checked like `serve`'s."""
    values = {name: value for name, value in {**read_group(StorageSettings, ns), **read_group(ProcessSettings, ns)}
              .items() if name in HISTORY_FLAGS}
    return Settings(**values)  # type: ignore[arg-type]


def engine_settings(ns: argparse.Namespace) -> Settings:
    """The engine part of the settings from a command's flags, validated like `serve`'s."""
    settings = Settings(**read_group(EngineSettings, ns))  # type: ignore[arg-type]
    check_engine(settings)
    return settings


def check_engine(s: EngineSettings) -> None:
    """The engine flags (also used by `keys revoke`, which publishes on the engine)."""
    check_fields(EngineSettings(engine=s.engine, redis_url=s.redis_url, redis_prefix=s.redis_prefix))


def check_redis_url(url: str) -> None:
    """--redis-url, every form, by the parser the engine connects with; the message never repeats the URL."""
    check_redis_url_text(url)


def check_database_url(url: str) -> None:
    """--database-url: a PostgreSQL URL naming (or letting libpq find) a host and a database; never echoed."""
    check_database_url_text(url)


def check_command_flags(ns: argparse.Namespace) -> None:
    """The flags every command shares, checked like `serve`'s before the command runs."""
    if getattr(ns, "database_url", None):
        check_database_url(ns.database_url)
    if any(getattr(ns, name, None) is not None for name in ("engine", "redis_url", "redis_prefix")):
        engine_settings(ns)


def settings_clock(s: ProcessSettings) -> Callable[[], float]:
    """The server's clock: real time, or real time shifted so that it read `clock_start` when this was called."""
    if s.clock_start is None:
        return time.time
    offset = s.clock_start - time.time()
    return lambda: time.time() + offset


