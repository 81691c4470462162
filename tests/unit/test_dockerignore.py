"""`.dockerignore` keeps the virtualenv, the data dir (demo key, JWT secret), git and caches out of
`docker build .`, and keeps everything the Dockerfile copies in.

Docker's rules (moby patternmatcher): each line is a path pattern relative to the context root, `*` and
`?` stay within one path segment, `**` spans any number of segments, `!` re-includes, the last matching
line wins, and a path is excluded when it or any directory above it is.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _regex(pattern: str) -> re.Pattern[str]:
    out = ""
    for part in re.split(r"(\*\*/?|\*|\?)", pattern.strip("/")):
        if part.startswith("**"):
            out += "(?:.*/)?" if part.endswith("/") else ".*"
        elif part == "*":
            out += "[^/]*"
        elif part == "?":
            out += "[^/]"
        else:
            out += re.escape(part)
    return re.compile(out + r"\Z")


def _rules() -> list[tuple[bool, re.Pattern[str]]]:
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    return [(not r.startswith("!"), _regex(r.removeprefix("!"))) for r in rules]


def excluded(path: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        verdict = None
        for exclude, rx in rules:
            if rx.match(prefix):
                verdict = exclude
        if verdict:
            return True
    return False


def test_secrets_virtualenvs_git_and_caches_stay_out() -> None:
    rules = _rules()
    for path in (".venv/bin/python", "data/demo-key.txt", "data/jwt-secret", "data/market.db", ".git/HEAD",
                 "server/__pycache__/hub.cpython-311.pyc", "server/api/x.pyc", "client/build/lib/market_client/cli.py",
                 "client/market_client.egg-info/PKG-INFO", "node_modules/a/index.js",
                 "clients/typescript/node_modules/a/index.js", ".mypy_cache/3.11/x.json", ".ruff_cache/x",
                 ".pytest_cache/v", "bench/results/run.json", "test-artifacts/trace.zip", "build/lib/server/hub.py",
                 "other/data/demo-key.txt", "tests/.venv/bin/python"):
        assert excluded(path, rules), f"{path} would be sent to the builder"


def test_everything_the_image_copies_is_sent() -> None:
    rules = _rules()
    copied = [src for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("COPY ")
              for src in line.split()[1:-1] if not src.startswith("--")]
    assert {"pyproject.toml", "requirements.lock", "README.md", "server"} <= set(copied)
    tracked = subprocess.run(["git", "ls-files", *copied], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert len(tracked) > 50
    left_out = [path for path in tracked if excluded(path, rules)]
    assert not left_out, f"the Dockerfile copies these but .dockerignore drops them: {left_out[:10]}"
    assert not excluded("server/web/index.html", rules) and not excluded("server/web/app.js", rules)
