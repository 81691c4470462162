"""Settings declared once (issue 33 item 4): every field of `Settings` is one group's `setting(...)`, and the
options, env names, parsing and checks all come from that declaration."""

from __future__ import annotations

import argparse
import ast
from dataclasses import fields
from pathlib import Path

import pytest

from server.config import GROUPS, ConfigError, NotifySettings, Settings, add_serve_args, env_name, settings_from_args
from server.config.setting import Kind, flag_of, spec_of

CONFIG_DIR = Path(__file__).resolve().parents[2] / "server" / "config"


def test_every_field_is_declared_once_in_one_group() -> None:
    owners: dict[str, str] = {}
    for group in GROUPS:
        for f in fields(group):
            assert f.name not in owners, f"{f.name} is declared in {owners[f.name]} and {group.__name__}"
            owners[f.name] = group.__name__
            spec_of(f)  # a setting(...), not a bare field
    assert set(owners) == {f.name for f in fields(Settings)}


def test_options_and_env_names_follow_the_declarations(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    for group in GROUPS:
        for f in fields(group):
            flag = flag_of(f)
            if flag is None:
                continue
            kind = spec_of(f).kind
            if kind is Kind.TEXT:
                assert getattr(parser.parse_args([f"--{flag}", "v"]), f.name) == "v"
            elif kind is Kind.APPEND:
                assert getattr(parser.parse_args([f"--{flag}", "v"]), f.name)[-1] == "v"
            else:
                parser.parse_args([f"--{flag}"])
    _, left = parser.parse_known_args(["--login-rate", "1"])  # declared with flag=None: set only in code
    assert left == ["--login-rate", "1"]
    monkeypatch.setenv(env_name("tick-interval-ms"), "500")
    assert env_name("tick-interval-ms") == "MARKET_TICK_INTERVAL_MS"
    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    assert settings_from_args(parser.parse_args([])).tick_interval_ms == 500


def test_a_bad_value_names_its_flag() -> None:
    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    for argv, message in ((["--seed", "x"], "--seed: must be a whole number (got 'x')"),
                          (["--outbox-max-attempts", "0"], "--outbox-max-attempts: must be between 1 and 100")):
        with pytest.raises(ConfigError) as err:
            settings_from_args(parser.parse_args(argv))
        assert str(err.value) == message


def test_a_group_holds_only_its_own_fields() -> None:
    notify = Settings(outbox_max_attempts=3, port=9).group(NotifySettings)
    assert type(notify) is NotifySettings and notify.outbox_max_attempts == 3
    assert not hasattr(notify, "port")


def test_hidden_and_switch_kinds() -> None:
    kinds = {flag_of(f): spec_of(f).kind for g in GROUPS for f in fields(g)}
    assert kinds["no-demo-key"] is Kind.OFF_SWITCH and kinds["ws-deflate"] is Kind.TOGGLE
    assert kinds["webhook"] is Kind.APPEND and kinds["bench-static"] is Kind.SWITCH


def test_config_imports_no_part_it_configures() -> None:
    for path in CONFIG_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("server."):
                assert node.module.startswith(("server.config", "server.core")), f"{path.name}: {node.module}"
