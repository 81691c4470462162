"""Mutation testing (issue 46): mutmut over the modules where a wrong line loses data or lets someone in.

    nice -n 19 .venv/bin/python bench/mutation.py                      # every module below (slow: hours of CPU)
    nice -n 19 .venv/bin/python bench/mutation.py --module byte_range  # one module, by a part of its path
    nice -n 19 .venv/bin/python bench/mutation.py --module byte_range --survivors   # and each survivor's diff
    (`python -m bench.mutation byte_range` is the same; `--time-limit S` bounds each module's run, default 1800 s)

Each module is run in a scratch copy of the repository (server/, tests/, pyproject.toml with a [tool.mutmut]
section of its own), so nothing here touches the work tree; mutmut mutates only that module and runs only the
module's own fast test files (in-process tests: a test that starts a server does not see mutmut's mutants).
Prints one line per module: killed / mutants and the score. Not in .ci/run: it is slow. docs/testing.md keeps
the scores as a floor and says why mutmut.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the test files that hold it (cheap, in-process); the order of issue 46's list
MODULES: dict[str, list[str]] = {
    "server/store/history/archive.py": ["tests/unit/test_archive_sqlite.py", "tests/unit/test_history_threads.py"],
    "server/store/history/archive_sqlite.py": ["tests/unit/test_archive_sqlite.py"],
    "server/store/accounts/key_cache.py": ["tests/unit/test_auth_keys.py"],
    "server/store/accounts/console_repo.py": ["tests/unit/test_console_core.py"],
    "server/api/auth/tokens.py": ["tests/unit/test_public_tokens.py"],  # the console's sessions (JWT)
    "server/core/limits.py": ["tests/unit/test_ratelimit.py"],
    "server/core/login_throttle.py": ["tests/unit/test_login_throttle.py"],
    "server/market/venues/clock.py": ["tests/unit/test_venues.py"],
    "server/market/venues/day_calendars.py": ["tests/unit/test_day_calendars.py", "tests/unit/test_venues.py",
                                              "tests/unit/test_calendar_notices.py"],
    "server/store/flatfiles/byte_range.py": ["tests/unit/test_flatfiles.py"],
}
STATUS = re.compile(r"^\s+(\S+): (.+)$")


def scratch_copy(module: str, tests: list[str]) -> Path:
    work = Path(tempfile.mkdtemp(prefix="mutation-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules")
    for part in ("server", "tests"):
        shutil.copytree(ROOT / part, work / part, ignore=ignore)
    section = (f'\n[tool.mutmut]\nsource_paths = ["server"]\nonly_mutate = ["{module}"]\n'
               f"pytest_add_cli_args = [\"-q\", \"-p\", \"no:xdist\", \"-p\", \"no:cacheprovider\"]\n"
               f"pytest_add_cli_args_test_selection = {tests!r}\n").replace("'", '"')
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + section)
    return work


def run(module: str, tests: list[str], show_survivors: bool, time_limit: float) -> tuple[int, int, list[str]]:
    """(killed, mutants, survivors) of one module; one child at a time (a shared 2-core machine), at most
    `time_limit` seconds (then the mutants not checked yet count as survivors, named "not checked")."""
    work = scratch_copy(module, tests)
    mutmut = [sys.executable, "-m", "mutmut"]
    try:
        child = subprocess.Popen([*mutmut, "run", "--max-children", "1"], cwd=work, stdout=subprocess.DEVNULL,
                                 start_new_session=True)
        try:
            child.wait(time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGTERM)  # mutmut and its forked test runner: its own session
            child.wait()
            print(f"{module}: stopped after {time_limit:.0f} s", file=sys.stderr)
        out = subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True,
                             check=True).stdout
        statuses = {m.group(1): m.group(2) for m in map(STATUS.match, out.splitlines()) if m}
        # a timeout is a mutant the tests caught too (an endless loop: they did not pass), as mutmut counts it
        survivors = sorted(name for name, status in statuses.items() if status not in ("killed", "timeout"))
        if show_survivors:
            for name in survivors:
                print(subprocess.run([*mutmut, "show", name], cwd=work, capture_output=True, text=True).stdout)
        return len(statuses) - len(survivors), len(statuses), survivors
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run the modules whose path contains one of these")
    parser.add_argument("--module", action="append", default=[], help="the same as `only`, repeatable")
    parser.add_argument("--time-limit", type=float, default=1800.0, help="seconds per module (default 1800)")
    parser.add_argument("--survivors", action="store_true", help="print each surviving mutant's diff")
    ns = parser.parse_args()
    only = [*ns.only, *ns.module]
    chosen = {m: t for m, t in MODULES.items() if not only or any(part in m for part in only)}
    if not chosen:
        parser.error(f"no module matches {only}; the modules: {', '.join(MODULES)}")
    for module, tests in chosen.items():
        killed, total, survivors = run(module, tests, ns.survivors, ns.time_limit)
        score = 100.0 * killed / total if total else 100.0
        print(f"{module}: {killed}/{total} killed, score {score:.1f}%"
              + (f"; survivors: {', '.join(survivors)}" if survivors else ""), flush=True)


if __name__ == "__main__":
    main()
