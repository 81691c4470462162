"""Issue 45's bad input on a hub that holds stored history and flat files, both runtimes: every date, instant and
number the API takes is read by one rule (server/api/core/query.py, docs/input-rules.md), so each request below
answers 4xx with a problem document naming the field, never a 500.

The hub is tests/contract/test_flatfile_routes.py's: a fake clock (Wednesday 2026-11-18 14:20 in Shanghai) and
Tuesday's ticks and candles imported with the CLI before it starts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RUNTIMES
from tests.contract.test_flatfile_routes import Hub, start_hub

PASSWORD = "correct horse"
BIG = "9" * 4301  # one digit past CPython's int() limit for text


@pytest.fixture(scope="module", params=RUNTIMES)
def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    started = start_hub(tmp_path_factory.mktemp(f"input-{request.param}"), request.param)
    yield started
    assert started.srv.stop() == 0, started.srv.output()


@pytest.fixture(scope="module")
def console(hub: Hub) -> Iterator[httpx.Client]:
    with hub.srv.client() as c:
        assert c.post("/api/auth/register", json={"email": "rules@example.com", "password": PASSWORD}).status_code \
            == 201
        token = c.post("/api/auth/login", json={"email": "rules@example.com", "password": PASSWORD}).json()["token"]
        c.headers["Authorization"] = f"Bearer {token}"
        yield c


def problem(resp: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = resp.json()
    assert body["status"] == status and body["detail"]
    if field is not None:
        assert [e["field"] for e in body["errors"]] == [field], body
    return body


@pytest.mark.parametrize(("path", "params", "field"), [
    # venue calendars: a year the calendar does not know, and the ends of the date type
    ("/api/v1/venues/shfe/calendar", {"from": "2003-12-31", "to": "2004-01-02"}, "from"),
    ("/api/v1/venues/shfe/calendar", {"from": "9999-12-31", "to": "9999-12-31"}, "from"),
    ("/api/v1/venues/ice-eu/calendar", {"from": "0001-01-01", "to": "0001-12-31"}, "from"),
    ("/api/v1/venues/shfe/calendar", {"from": "2026-W48-1", "to": "2026-11-30"}, "from"),
    # flat-file listings
    ("/api/v1/flatfiles", {"to": "0001-01-01"}, "to"),
    ("/api/v1/flatfiles", {"from": "9999-12-31", "to": "9999-12-31"}, "to"),
    ("/api/v1/flatfiles", {"from": "20261123xx"}, "from"),
    ("/api/v1/flatfiles", {"from": "1969-12-31", "to": "1970-01-01"}, "from"),
    # range queries: instants beyond the years the service takes, in every form
    ("/api/v1/kline/brent", {"interval": "1d", "from": "9999-12-31T23:59:59Z"}, "from"),
    ("/api/v1/kline/brent", {"interval": "1d", "to": "0001-01-01"}, "to"),
    ("/api/v1/kline/brent", {"interval": "1d", "to": "0001-01-01T00:00:00+14:00"}, "to"),
    ("/api/v1/kline/brent", {"interval": "1m", "from": "-1"}, "from"),
    ("/api/v1/kline/brent", {"interval": "1m", "from": "9999999999999999"}, "from"),
    ("/api/v1/kline/brent", {"interval": "1m", "from": "20261118T103000+0800"}, "from"),  # basic format
    ("/api/v1/kline/brent", {"interval": "1m", "limit": BIG}, "limit"),
    ("/api/v1/udf/history", {"symbol": "brent", "resolution": "1D", "from": "253402300800", "to": "1763433000"},
     "from"),
    ("/api/v1/udf/history", {"symbol": "brent", "resolution": "1D", "to": "-5"}, "to"),
    ("/api/v1/udf/history", {"symbol": "brent", "resolution": "1D", "to": "1763433000", "countback": BIG},
     "countback"),
])
def test_extreme_dates_and_numbers_are_400(hub: Hub, path: str, params: dict[str, str], field: str) -> None:
    problem(hub.get(path, params=params), 400, field)


def test_a_calendar_names_the_first_year_it_knows(hub: Hub) -> None:
    venues = {v["id"]: v for v in hub.get("/api/v1/venues").json()["venues"]}
    known_from = venues["shfe"]["calendarKnownFrom"]
    assert known_from == "2004-01-01" and venues["ice-eu"]["calendarKnownFrom"] == "1970-01-01"
    body = problem(hub.get("/api/v1/venues/shfe/calendar", params={"from": "2003-12-01", "to": "2003-12-31"}), 400,
                   "from")
    assert known_from in body["detail"]
    first = hub.get("/api/v1/venues/shfe/calendar", params={"from": known_from, "to": "2004-01-02"})
    assert first.status_code == 200, first.text  # 2 January looks back to 2003 for its night session: no 500
    assert [d["date"] for d in first.json()["days"]] == ["2004-01-02"]
    last = hub.get("/api/v1/venues/shfe/calendar", params={"from": "9999-12-01", "to": "9999-12-30"})
    assert last.status_code == 200 and last.json()["days"], last.text


@pytest.mark.parametrize("name", ["1970-01-01.csv.gz", "0001-01-01.csv.gz", "9999-12-31.csv.gz",
                                  "9999-12-30.parquet", "20261117xx.csv.gz", "2026-W47-2.csv.gz",
                                  "2026-321.csv.gz", "2026-11-17 .csv.gz"])
def test_flat_files_of_no_canonical_date_are_404(hub: Hub, name: str) -> None:
    problem(hub.get(f"/api/v1/flatfiles/ticks/{name}"), 404)


@pytest.mark.parametrize("path", ["/api/v1/flatfiles/ticks%2f2026-11-17.csv.gz",
                                  "/api/v1/flatfiles/ticks%2F2026-11-17.parquet",
                                  "/api/v1/flatfiles%2Fticks/2026-11-17.csv.gz",
                                  "/api/v1/flatfiles/ticks/ticks%2f2026-11-17.csv.gz",
                                  "/api/v1/flatfiles/ticks/..%2f2026-11-17.csv.gz"])
def test_an_encoded_slash_is_no_separator(hub: Hub, path: str) -> None:
    """`%2F` is part of a segment, never a separator (issue 45): no file is served under it on Robyn, which gives
    the raw path. Granian's RSGI scope has only the percent-decoded path (no raw one to be had, granian#166), so
    there `ticks%2f2026-11-17` cannot be told from `ticks/2026-11-17`: it is that same file, canonical name and
    all, and nothing else (docs/input-rules.md). When Granian gives a raw path this fails and is made one rule."""
    resp = hub.get(path)
    canonical = path.replace("%2f", "/").replace("%2F", "/")
    if hub.srv.runtime == "robyn" or "ticks/ticks" in canonical or ".." in canonical:  # decoded: still no file
        problem(resp, 404)
    else:
        whole = hub.get(canonical)
        assert whole.status_code == 200 and resp.status_code == 200 and resp.content == whole.content


def test_a_range_of_4301_digits(hub: Hub) -> None:
    url = "/api/v1/flatfiles/ticks/2026-11-17.csv.gz"
    whole = hub.get(url)
    assert whole.status_code == 200
    size = len(whole.content)
    suffix = hub.get(url, headers={"Range": f"bytes=-{BIG}"})
    assert suffix.status_code == 206 and suffix.headers["content-range"] == f"bytes 0-{size - 1}/{size}"
    body = problem(hub.get(url, headers={"Range": f"bytes={BIG}-"}), 416)
    assert body["code"] == "range_not_satisfiable"


@pytest.mark.parametrize(("params", "field"), [
    ({"from": "9999-12-31"}, "from"), ({"to": "0001-01-01"}, "to"), ({"from": "9999-12-30"}, "from"),
    ({"from": "9999-12-30", "to": "9999-12-30"}, None),
    ({"to": "1970-01-01"}, None), ({"from": "2026-11-18", "to": "2026-11-17"}, "from"),
    ({"from": "2026-W47-2"}, "from"), ({"when": "2026-11-17"}, "when"),
])
def test_console_usage_dates(console: httpx.Client, params: dict[str, str], field: str | None) -> None:
    resp = console.get("/api/console/usage", params=params)
    if field is None:
        assert resp.status_code == 200, resp.text
        assert resp.json()["from"] <= resp.json()["to"]
    else:
        problem(resp, 400, field)


def test_a_nul_in_a_query_parameter(hub: Hub, console: httpx.Client) -> None:
    problem(console.get("/api/console/usage", params={"key": "key_\x00x"}), 400, "key")
    problem(hub.get("/api/v1/udf/search", params={"query": "br\x00"}), 400, "query")


def test_if_none_match_is_evaluated_before_range(hub: Hub) -> None:
    url = "/api/v1/flatfiles/ticks/2026-11-17.csv.gz"
    etag = hub.get(url).headers["etag"]
    for ranged in ("bytes=0-9", "bytes=999999-"):  # a satisfiable range and one past the end: 304 both (RFC 9110)
        resp = hub.get(url, headers={"If-None-Match": etag, "Range": ranged})
        assert resp.status_code == 304 and resp.content == b"", (ranged, resp.status_code)
    assert hub.get(url, headers={"If-None-Match": '"other"', "Range": "bytes=0-9"}).status_code == 206


def test_a_browser_may_resume_a_download_cross_origin(hub: Hub) -> None:
    url = "/api/v1/flatfiles/ticks/2026-11-17.csv.gz"
    pre = httpx.options(hub.srv.base + url, headers={"Origin": "https://app.example",
                                                     "Access-Control-Request-Method": "GET",
                                                     "Access-Control-Request-Headers": "range, if-range"})
    assert pre.status_code == 204
    allowed = {h.strip().lower() for h in pre.headers["access-control-allow-headers"].split(",")}
    assert {"range", "if-range", "x-service-key"} <= allowed
    part = hub.get(url, headers={"Origin": "https://app.example", "Range": "bytes=0-9"})
    assert part.status_code == 206
    exposed = {h.strip().lower() for h in part.headers["access-control-expose-headers"].split(",")}
    assert {"content-range", "etag", "content-length"} <= exposed


def test_a_nul_in_a_path_parameter_is_no_such_thing(hub: Hub, console: httpx.Client) -> None:
    """Before the router refused it, a key id holding NUL reached PostgreSQL and answered 500
    (MARKET_TEST_STORAGE=postgresql runs this on it)."""
    problem(console.patch("/api/console/keys/key_%00x", json={"label": "x"}), 404)
    problem(console.delete("/api/console/keys/key_%00x"), 404)
    problem(hub.get("/api/v1/instruments/brent%00"), 404)
