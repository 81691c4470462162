"""SPEC 20 in the Python client (issue 42 item 6): `status()`, `incidents()` and `quality()` on both clients, typed,
against real servers: the demo hub (an incident opened with the CLI) and a JSONL hub whose archive holds a Friday
with a gap (tests/contract/test_status.py's set-up)."""

from __future__ import annotations

import asyncio
import time
from datetime import date, datetime
from pathlib import Path

from market_client import AsyncMarketClient, MarketClient
from market_client import status as st

from tests.conftest import ServerProcess, run_cli
from tests.contract.test_status import MONDAY, _start


def test_status_and_incidents_are_typed_and_keyless(server: ServerProcess) -> None:
    out = run_cli(server.data_dir, "incidents", "open", "--title", "Slow stream", "--impact", "minor",
                  "--component", "stream")
    assert out.returncode == 0, out.stderr
    inc_id = out.stdout.split()[1]
    with MarketClient(server.base) as api:  # no key
        deadline = time.monotonic() + 10
        while not [i for i in api.status().incidents if i.id == inc_id]:  # the hub's board reads every 2 s
            assert time.monotonic() < deadline, "the incident never showed"
            time.sleep(0.05)
        status = api.status()
        assert isinstance(status, st.Status) and status.status.indicator in ("minor", "major", "critical")
        assert {c.id for c in status.components} >= {"rest", "stream", "storage", "notifications", "feed:ice-eu"}
        assert all(isinstance(c.updated_at, datetime) and c.updated_at.utcoffset() is not None
                   for c in status.components)
        inc = next(i for i in status.incidents if i.id == inc_id)
        assert (inc.name, inc.impact, inc.components, inc.automatic) == ("Slow stream", "minor", ["stream"], False)
        assert inc.updates[0].status == "investigating" and inc.resolved_at is None
        listed = api.incidents()
        assert isinstance(listed, st.IncidentList) and inc_id in {i.id for i in listed.incidents}
        assert isinstance(listed.as_of, datetime)

    async def run() -> None:
        async with AsyncMarketClient(server.base) as api:
            status, listed = await asyncio.gather(api.status(), api.incidents())
            assert inc_id in {i.id for i in status.incidents} and inc_id in {i.id for i in listed.incidents}

    asyncio.run(run())


def test_quality_lists_a_degraded_day_with_its_gaps(tmp_path: Path) -> None:
    srv, _ = _start(tmp_path, MONDAY)
    try:
        key = srv.create_key("professional")[1]
        with MarketClient(srv.base, key) as api:
            answer = api.quality("ice-eu", date(2026, 11, 20), "2026-11-20")
        assert isinstance(answer, st.QualityList)
        day, = [d for d in answer.days if d.condition != "missing"]
        assert (day.date, day.venue, day.condition) == (date(2026, 11, 20), "ice-eu", "degraded")
        gap = next(g for g in day.gaps if g.start.isoformat().startswith("2026-11-20T20:00:01"))
        assert gap.end == datetime.fromisoformat("2026-11-20T20:10:00+08:00")
        assert day.last_modified == datetime.fromisoformat("2026-11-20T20:10:00+08:00")

        async def run() -> st.QualityList:
            async with AsyncMarketClient(srv.base, key) as api:
                return await api.quality(venue="ice-eu", start="2026-11-20", end="2026-11-20")

        assert asyncio.run(run()) == answer
    finally:
        assert srv.stop() == 0, srv.output()[-3000:]
