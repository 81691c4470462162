"""The calendar notices file: what it accepts, and errors that name the entry and the field."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from server.market.venues.calendar_notices import (
    DEFAULT_NOTICES,
    CalendarFileError,
    load_notices,
    merge,
    parse_notices,
)
from server.market.venues.data import VENUES

IDS = tuple(VENUES)


def test_the_repository_file_parses() -> None:
    notices = parse_notices(DEFAULT_NOTICES.read_text(encoding="utf-8"), "repo", IDS)
    assert notices["cme"].closures[date(2026, 7, 3)] == "Independence Day (observed)"


def test_every_kind_of_entry() -> None:
    text = """
[[closure]]
venue = ["dce", "zce"]
date = 2027-01-04
name = "Exchange notice"

[[opening]]
venue = "ice-eu"
date = 2027-12-27

[[night_cancelled]]
venue = "ine"
date = 2027-01-05

[[known_until]]
venue = "zce"
date = 2027-12-31
"""
    notices = parse_notices(text, "t.toml", IDS)
    assert notices["dce"].closures == {date(2027, 1, 4): "Exchange notice"}
    assert notices["zce"].known_until == date(2027, 12, 31)
    assert notices["ice-eu"].openings == {date(2027, 12, 27)}
    assert notices["ine"].night_cancelled == {date(2027, 1, 5)}


@pytest.mark.parametrize(("text", "message"), [
    ("[[closure]\n", "t.toml: not valid TOML"),
    ('[[holiday]]\nvenue = "dce"\ndate = 2027-01-04\n', "unknown table [[holiday]]"),
    ('[[closure]]\nvenue = "nyse"\ndate = 2027-01-04\nname = "x"\n',
     "[[closure]] #1: field 'venue': unknown venue 'nyse'"),
    ('[[closure]]\nvenue = []\ndate = 2027-01-04\nname = "x"\n', "[[closure]] #1: field 'venue' must be"),
    ('[[closure]]\nvenue = "dce"\nname = "x"\n', "[[closure]] #1: field 'date' must be a TOML date"),
    ('[[closure]]\nvenue = "dce"\ndate = "2027-01-04"\nname = "x"\n', "field 'date' must be a TOML date"),
    ('[[closure]]\nvenue = "dce"\ndate = 2027-01-04T09:00:00\nname = "x"\n', "field 'date' must be a TOML date"),
    ('[[closure]]\nvenue = "dce"\ndate = 2027-01-04\n', "[[closure]] #1: field 'name' is required"),
    ('[[opening]]\nvenue = "dce"\ndate = 2027-01-04\nname = 3\n', "[[opening]] #1: field 'name' must be a string"),
    ('[[opening]]\nvenue = "dce"\ndate = 2027-01-04\nreason = "x"\n', "[[opening]] #1: unknown field 'reason'"),
    ('closure = 3\n', "closure must be an array of tables"),
    ('[[night_cancelled]]\nvenue = "dce"\ndate = 2027-01-04\n[[night_cancelled]]\nvenue = 1\ndate = 2027-01-05\n',
     "[[night_cancelled]] #2: field 'venue'"),
])
def test_bad_input_names_the_place(text: str, message: str) -> None:
    with pytest.raises(CalendarFileError) as err:
        parse_notices(text, "t.toml", IDS)
    assert message in str(err.value)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(CalendarFileError, match=r"nope\.toml: cannot read"):
        load_notices(IDS, missing)


def test_a_run_time_file_extends_the_repository_file(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text('[[closure]]\nvenue = "cme"\ndate = 2027-01-18\nname = "MLK"\n', encoding="utf-8")
    notices = load_notices(IDS, extra)
    assert set(notices["cme"].closures) == {date(2026, 7, 3), date(2027, 1, 18)}
    later = parse_notices('[[known_until]]\nvenue = "cme"\ndate = 2028-06-30\n', "b", IDS)
    assert merge(notices, later)["cme"].known_until == date(2028, 6, 30)
