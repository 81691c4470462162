"""Helpers shared by the locust suites: verdict tables, CSV side files, option lookups.

Locust puts a locustfile's directory on sys.path, so the suites import this as `_support`.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(slots=True)
class Verdict:
    check: str
    outcome: str  # PASS, FAIL or SKIP
    measured: str
    expected: str
    note: str = ""


def option(environment: Any, name: str, default: Any = None) -> Any:
    """A parsed command-line option of this run (None when locust runs as a library without options)."""
    opts = getattr(environment, "parsed_options", None)
    return getattr(opts, name, default) if opts is not None else default


def csv_prefix(environment: Any) -> str | None:
    return option(environment, "csv_prefix")


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    line = "+".join("-" * (w + 2) for w in widths)
    print(f"\n{title}\n{line}")
    print(" | ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)))
    print(line)
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    print(line, flush=True)


def write_csv(path: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def report_verdicts(environment: Any, title: str, verdicts: Sequence[Verdict], suffix: str = "verdicts") -> int:
    """Print the verdict table, write PREFIX_<suffix>.csv when --csv was given; the exit code to use."""
    header = ("check", "verdict", "measured", "expected", "note")
    rows = [(v.check, v.outcome, v.measured, v.expected, v.note) for v in verdicts]
    print_table(title, header, rows)
    prefix = csv_prefix(environment)
    if prefix:
        write_csv(f"{prefix}_{suffix}.csv", header, rows)
    failed = any(v.outcome == FAIL for v in verdicts)
    passed = any(v.outcome == PASS for v in verdicts)
    overall = FAIL if failed or not passed else PASS
    print(f"OVERALL: {overall}", flush=True)
    return 0 if overall == PASS else 1
