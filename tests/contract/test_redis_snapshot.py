"""The public market snapshot with two real hubs on one Redis (SPEC 12): for the same refresh both
serve the same bytes under the same ETag, so one hub's ETag gets a 304 from the other."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ServerProcess
from tests.redis_service import redis_hub_pair, require_redis

WANTED = 4  # refreshes seen answered alike by both hubs


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    flags = ("--public-rate", "100000", "--market-refresh-s", "1")
    with redis_hub_pair(tmp_path / "data", *flags, url=require_redis()) as pair:
        yield pair


def test_both_hubs_serve_one_snapshot_per_refresh_and_honour_each_others_etags(
        hubs: tuple[ServerProcess, ServerProcess]) -> None:
    a, b = hubs
    alike: list[str] = []
    with a.client() as ca, b.client() as cb:
        deadline = time.monotonic() + 20
        while len(alike) < WANTED:
            assert time.monotonic() < deadline, f"only {len(alike)} refreshes seen alike: {alike}"
            for first, other in ((ca, cb), (cb, ca)):
                got = first.get("/api/market")
                updated = got.json()["updated"]
                assert got.headers["etag"] != '""'
                again = other.get("/api/market", headers={"If-None-Match": got.headers["etag"]})
                if again.status_code == 304:  # the other hub serves these very bytes
                    assert again.headers["etag"] == got.headers["etag"]
                    if updated not in alike:
                        alike.append(updated)
                    continue
                assert again.status_code == 200
                # not this snapshot: then never the same refresh with other bytes
                assert again.json()["updated"] != updated, (updated, got.text, again.text)
            time.sleep(0.1)  # polling two other processes across refreshes: nothing to await
        # each category too, by its own ETag
        got = ca.get("/api/market/fx")
        again = cb.get("/api/market/fx", headers={"If-None-Match": got.headers["etag"]})
        assert again.status_code == 304 or again.json()["updated"] != got.json()["updated"]
    for updated in alike:  # every one on a refresh boundary: whole seconds
        assert updated.endswith(".000+08:00"), updated
