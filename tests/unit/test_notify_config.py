"""A misconfigured notification channel is refused at start, with an error naming the flag and no secret."""

from __future__ import annotations

import subprocess
import sys

import pytest

from server.cli import build_parser
from server.config import ConfigError, Settings, Webhook, settings_from_args


def settings(*args: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["serve", *args]))


def test_channels_parse() -> None:
    s = settings(
        "--smtp-url", "smtps://bot:pw@mail.example.com", "--notify-email", "a@x.cn, b@x.cn",
        "--mail-from", "Market <noreply@x.cn>",
        "--webhook", "dingtalk=https://oapi.dingtalk.com/robot/send?access_token=T#secret=SEC",
        "--webhook", "wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K",
        "--outbox-base-s", "0.5", "--outbox-max-attempts", "3", "--outbox-timeout-s", "2",
    )
    assert s.notify_email == ("a@x.cn", "b@x.cn") and s.mail_from == "Market <noreply@x.cn>"
    assert s.webhooks == (
        Webhook("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=T", "SEC"),
        Webhook("wecom", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K", None),
    )
    assert (s.outbox_base_s, s.outbox_max_attempts, s.outbox_timeout_s) == (0.5, 3, 2.0)


def test_outbox_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MARKET_OUTBOX_BASE_S", "0.25")
    assert settings().outbox_base_s == 0.25


@pytest.mark.parametrize(("args", "flag"), [
    (["--webhook", "slack=https://hooks.slack.com/services/T/B/XYZSECRETPATH"], "--webhook"),
    (["--webhook", "wecom=ftp://qyapi.weixin.qq.com/send?key=TOKSECRET"], "--webhook: wecom URL"),
    (["--webhook", "generic=https:///nohost?token=TOKSECRET"], "--webhook: generic URL"),
    (["--webhook", "generic=http://h.example:99999/x?token=TOKSECRET"], "invalid port"),
    (["--webhook", "dingtalk=https://oapi.dingtalk.com/robot/send?access_token=TOKSECRET#sekret=S"], "secret=S"),
    (["--webhook", "feishu=https://open.feishu.cn/hook/TOKSECRET#secret="], "secret=S"),
    (["--smtp-url", "http://u:TOKSECRET@mail.example", "--notify-email", "a@x.cn"], "--smtp-url"),
    (["--smtp-url", "smtp://u:TOKSECRET@mail.example:70000", "--notify-email", "a@x.cn"], "--smtp-url"),
    (["--smtp-url", "smtp://u:TOKSECRET@mail.example:587"], "--notify-email: required"),
    (["--notify-email", "a@x.cn"], "--smtp-url: required"),
    (["--smtp-url", "smtp://mail.example", "--notify-email", "not-an-address"], "--notify-email"),
    (["--smtp-url", "smtp://mail.example", "--notify-email", "a@x.cn", "--mail-from", "me"], "--mail-from"),
    (["--outbox-base-s", "0"], "--outbox-base-s"),
    (["--outbox-max-attempts", "0"], "--outbox-max-attempts"),
    (["--outbox-timeout-s", "nan?"], "--outbox-timeout-s"),
])
def test_bad_channels_are_refused_naming_the_flag(args: list[str], flag: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings(*args)
    assert flag in str(err.value)
    assert "SECRET" not in str(err.value)  # tokens in paths, queries and passwords are never echoed


def test_the_server_refuses_to_start(tmp_path: object) -> None:
    cmd = [sys.executable, "-m", "server", "serve", "--data-dir", str(tmp_path),
           "--webhook", "dingtalk=oapi.dingtalk.com/robot/send?access_token=TOKSECRET"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "configuration error: --webhook: dingtalk URL" in out.stderr and "TOKSECRET" not in out.stderr
