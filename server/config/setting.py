"""How one setting is declared, and everything derived from that declaration.

A setting is a dataclass field of its group (server/config/groups.py) made with `setting(...)`: its default,
its `--flag` (the field's name with dashes, unless `flag=` says otherwise), its env name (`MARKET_<FLAG>`,
dashes as underscores), its help (None: a hidden flag), its parser (text -> value) and its check
(value -> None, or what is wrong). From these `add_options` makes the argparse options and `read_group`
turns a parsed command line into the group's values, so a flag is written once (uvicorn's `config.py`,
granian's `cli.py` keep each option whole in the same way).

Every text option is collected as text (argparse's default is the env's text) and parsed here: a bad
value is one `ConfigError` naming the flag, exit code 2, never an argparse type error.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import Field, dataclass, field, fields
from enum import Enum, StrEnum
from typing import Any

SPEC = "setting"  # the key of a field's metadata that holds its Spec
MAX_SHOWN = 40  # a bad value is echoed up to this many characters (never for URLs and secrets)
FALSE_WORDS = ("0", "false", "no", "off")


class ConfigError(ValueError):
    """A setting is invalid; the message names the flag."""


class Kind(Enum):
    """How a flag is given on the command line."""

    TEXT = "text"  # --flag VALUE (env: the value)
    APPEND = "append"  # --flag VALUE, repeatable (env: values separated by spaces)
    SWITCH = "switch"  # --flag turns it on (env: any non-empty text)
    OFF_SWITCH = "off"  # --flag turns it off (no env)
    TOGGLE = "toggle"  # --flag / --no-flag (env: 0, false, no or off turn it off)


@dataclass(frozen=True)
class Spec:
    help: str | None  # None: a hidden flag (tests, tuning)
    parse: Callable[[str], Any]  # raises ValueError(what is wrong): "--flag: <message>"
    check: Callable[[Any], str | None] | None  # None when the value is fine, else what is wrong
    flag: str | None  # None: no flag (set only in code)
    kind: Kind
    metavar: str | None
    fill: bool  # the option always holds text (the default's when neither flag nor env gives one)
    blank_env_unset: bool  # an empty env value counts as unset
    common: bool  # every command takes it (--data-dir, --database-url), not only `serve`


def setting(default: Any = None, help: str | None = None, *, parse: Callable[[str], Any] = str,
            check: Callable[[Any], str | None] | None = None, flag: str | None = "", kind: Kind = Kind.TEXT,
            metavar: str | None = None, factory: Callable[[], Any] | None = None, fill: bool = False,
            blank_env_unset: bool = False, common: bool = False) -> Any:
    """A field of a settings group, with everything its flag needs (see the module doc)."""
    spec = Spec(help, parse, check, flag, kind, metavar, fill, blank_env_unset, common)
    if factory is not None:
        return field(default_factory=factory, metadata={SPEC: spec})
    return field(default=default, metadata={SPEC: spec})


def spec_of(f: Field[Any]) -> Spec:
    return f.metadata[SPEC]  # type: ignore[no-any-return]


def flag_of(f: Field[Any]) -> str | None:
    """The field's flag without dashes in front ("ws-port"), or None for a setting with no flag."""
    flag = spec_of(f).flag
    return f.name.replace("_", "-") if flag == "" else flag


def flagged(group: type) -> Iterator[tuple[Field[Any], str]]:
    for f in fields(group):
        flag = flag_of(f)
        if flag is not None:
            yield f, flag


def env_name(flag: str) -> str:
    return "MARKET_" + flag.upper().replace("-", "_")


def env_default(flag: str) -> str | None:
    return os.environ.get(env_name(flag))


def add_option(parser: argparse.ArgumentParser, f: Field[Any], flag: str) -> None:
    """The argparse option of one field; its dest is the field's name."""
    spec = spec_of(f)
    help_text = spec.help if spec.help is not None else argparse.SUPPRESS
    env = env_default(flag)
    if spec.blank_env_unset and not env:
        env = None
    if spec.kind is Kind.TEXT:
        default = env if env is not None or not spec.fill else str(f.default)
        parser.add_argument(f"--{flag}", dest=f.name, default=default, metavar=spec.metavar, help=help_text)
    elif spec.kind is Kind.APPEND:
        parser.add_argument(f"--{flag}", dest=f.name, action="append", default=[w for w in (env or "").split(" ") if w],
                            metavar=spec.metavar, help=help_text)
    elif spec.kind is Kind.SWITCH:
        parser.add_argument(f"--{flag}", dest=f.name, action="store_true", default=bool(env), help=help_text)
    elif spec.kind is Kind.OFF_SWITCH:
        parser.add_argument(f"--{flag}", dest=f.name, action="store_false", help=help_text)
    else:
        parser.add_argument(f"--{flag}", dest=f.name, action=argparse.BooleanOptionalAction,
                            default=(env or "1").lower() not in FALSE_WORDS, help=help_text)


def read_value(f: Field[Any], flag: str, value: Any) -> Any:
    """The option's value (text, a list of texts or a bool) as the setting; a ConfigError names the flag."""
    spec = spec_of(f)
    try:
        if spec.kind is Kind.TEXT:
            return spec.parse(str(value))
        if spec.kind is Kind.APPEND:
            return tuple(spec.parse(v) for v in value)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(f"--{flag}: {exc}") from None
    return bool(value)


def read_group(group: type, ns: argparse.Namespace) -> dict[str, Any]:
    """The values the command line (or env) gave for `group`'s flags; a flag given neither keeps its default."""
    values = {}
    for f, flag in flagged(group):
        value = getattr(ns, f.name, None)
        if value is not None:
            values[f.name] = read_value(f, flag, value)
    return values


def check_fields(obj: Any) -> None:
    """Each field's own check, in declaration order; the first complaint is the error, naming the flag."""
    for f in fields(obj):
        spec = spec_of(f)
        if spec.check is None:
            continue
        complaint = spec.check(getattr(obj, f.name))
        if complaint is not None:
            raise ConfigError(f"--{flag_of(f) or f.name}: {complaint}")


# --- parsers: text -> value, ValueError(what is wrong) ---------------------------------------------------------


def shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...")


def integer(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", text.strip()):
        raise ValueError(f"must be a whole number (got {shown(text)})")
    return int(text)


def number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"must be a number (got {shown(text)})")
    return value


def choice(enum: type[StrEnum]) -> Callable[[str], StrEnum]:
    allowed = [c.value for c in enum]

    def parse(text: str) -> StrEnum:
        if text not in allowed:
            raise ValueError(f"must be {' or '.join(allowed)} (got {shown(text)})")
        return enum(text)

    return parse


def comma_list(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def between(low: float, high: float, message: str) -> Callable[[float], str | None]:
    """A check: low <= value <= high, else `message`."""
    return lambda value: None if low <= value <= high else message


def above(low: float, high: float, message: str) -> Callable[[float], str | None]:
    """A check: low < value <= high, else `message`."""
    return lambda value: None if low < value <= high else message
