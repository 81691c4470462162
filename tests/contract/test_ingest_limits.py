"""Each account's limits of its dedicated data source (SPEC 20, docs/ingest.md) over real HTTP, on both runtimes: an
operator sets an account's instrument cap and ticks a second with `users limits`; a declaration over the cap is 409
naming it, a lowered cap keeps the instruments held, a raised one takes declarations again; a lowered ticks a second
is 429 with Retry-After for that account (both ingest routes) and not for another account on the same hub, also for
a key the hub holds already (its next key refresh carries the new rate). Bad values exit 2.

Waiting for another process (the key refresh) polls with a deadline: nothing in this process to await."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import RUNTIMES, ServerProcess, run_cli
from tests.contract.test_ingest import INSTRUMENT, account, ingest, key, lines_for, problem, until

RATE = 3000  # the hub's --ingest-rate: the default of an account without its own


@pytest.fixture(scope="module", params=RUNTIMES)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"limits-{request.param}") / "data"
    server = ServerProcess(data_dir, request.param, "--public-rate", "100000", "--trusted-proxies", "127.0.0.1",
                           "--ingest-rate", str(RATE))
    yield server
    code = server.stop()
    assert code == 0, f"server exited with {code}:\n{server.output()}"


def limits(srv: ServerProcess, email: str, *flags: str) -> str:
    out = run_cli(srv.data_dir, "users", "limits", email, *flags)
    assert out.returncode == 0, out.stderr
    return out.stdout


def declare(c: httpx.Client, inst_id: str) -> httpx.Response:
    return c.post("/api/console/instruments", json={"id": inst_id, **INSTRUMENT})


def test_an_operator_lowers_and_raises_an_accounts_instrument_cap(srv: ServerProcess) -> None:
    cap = account(srv, "cap@example.com", namespace="cap")
    listed = cap.get("/api/console/instruments").json()
    defaults = {"instruments": 100, "ticksPerSecond": RATE}
    assert listed["limits"] == defaults == listed["defaults"] and listed["used"] == {"instruments": 0}
    for name in ("a", "b"):
        assert declare(cap, f"cap.{name}").status_code == 201
    assert "2 instruments" in limits(srv, "cap@example.com", "--instruments", "2")
    refused = problem(declare(cap, "cap.c"), 409, "conflict")
    assert refused["limit"] == 2 and "2 declared instruments" in refused["detail"]
    assert "operator" in refused["detail"] and "raise" in refused["detail"]
    limits(srv, "cap@example.com", "--instruments", "1")  # below what it holds: both kept, none added
    listed = cap.get("/api/console/instruments").json()
    assert [i["id"] for i in listed["items"]] == ["cap.a", "cap.b"]
    assert listed["limits"] == {"instruments": 1, "ticksPerSecond": RATE} and listed["used"] == {"instruments": 2}
    assert problem(declare(cap, "cap.c"), 409, "conflict")["limit"] == 1
    limits(srv, "cap@example.com", "--instruments", "3")
    assert declare(cap, "cap.c").status_code == 201
    assert problem(declare(cap, "cap.d"), 409, "conflict")["limit"] == 3
    assert cap.delete("/api/console/instruments/cap.a").status_code == 204  # a deleted one frees its place
    assert declare(cap, "cap.d").status_code == 201
    assert "100 instruments (the default)" in limits(srv, "cap@example.com", "--reset")
    listed = cap.get("/api/console/instruments").json()
    assert listed["limits"] == defaults and listed["used"] == {"instruments": 3}
    details = [e["detail"] for e in cap.get("/api/console/events").json()["items"] if e["kind"] == "limits_changed"]
    assert sorted(details) == ["instruments 1", "instruments 2", "instruments 3",
                               "instruments default, ticks a second default"]


def publisher(srv: ServerProcess, email: str, namespace: str) -> tuple[httpx.Client, str]:
    """An account with one instrument `{namespace}.x` and an ingest key the hub knows."""
    c = account(srv, email, namespace=namespace)
    assert declare(c, f"{namespace}.x").status_code == 201
    secret = key(c, "ingest")
    assert until(lambda: ingest(srv, secret, []).status_code == 200)  # the key's first refresh
    return c, secret


def test_a_lowered_ticks_per_second_is_429_for_that_account_only(srv: ServerProcess) -> None:
    """slow at 2 ticks a second: a batch of 300 passes (the bucket goes about 150 s into debt, so no step of this
    test outlasts it on a loaded machine), the next is 429 with Retry-After on both routes, nothing of it kept; fast,
    on the hub's 3,000, is not held back."""
    slow, slow_key = publisher(srv, "slow@example.com", "slow")
    fast, fast_key = publisher(srv, "fast@example.com", "fast")
    assert "2 ticks a second" in limits(srv, "slow@example.com", "--ticks-per-second", "2")
    assert slow.get("/api/console/instruments").json()["limits"] == {"instruments": 100, "ticksPerSecond": 2}
    assert fast.get("/api/console/instruments").json()["limits"]["ticksPerSecond"] == RATE
    start = time.time() - 60

    def burst(secret: str, ns: str) -> httpx.Response:
        return ingest(srv, secret, lines_for([f"{ns}.x"], start, 300, 0.01))

    # the key the hub holds carries the new rate from its next refresh: a burst of 300 then goes into debt
    refused = until(lambda: (r := burst(slow_key, "slow")).status_code == 429 and r)
    assert refused, "no 429 after the limit was lowered"
    body = problem(refused, 429, "rate_limited")
    assert body["retryAfter"] >= 100 and int(refused.headers["retry-after"]) == body["retryAfter"]
    assert "2 ticks a second" in body["detail"]
    for _ in range(3):  # 900 ticks: within the 3,000 a second of a full bucket
        resp = burst(fast_key, "fast")
        assert resp.status_code == 200 and resp.json()["accepted"] == 300, resp.text

    async def over_ws(secret: str, ns: str) -> dict[str, Any]:
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": secret}) as ws:
            await ws.send(json.dumps({"id": f"{ns}.x", "price": 1, "ts": start + 300}))
            return dict(json.loads(await ws.recv()))

    assert asyncio.run(over_ws(slow_key, "slow"))["error"]["status"] == 429
    assert asyncio.run(over_ws(fast_key, "fast"))["accepted"] == 1
    reader = key(slow)
    assert until(lambda: get_quote(srv, reader).status_code == 200)
    volume = get_quote(srv, reader).json()["volume"]
    assert volume % 300 == 0 and volume >= 300  # whole bursts only: nothing of a refused one kept

    limits(srv, "slow@example.com", "--ticks-per-second", "1000000")  # raised: out of debt at once
    assert until(lambda: burst(slow_key, "slow").status_code == 200)


def get_quote(srv: ServerProcess, secret: str) -> httpx.Response:
    return httpx.get(srv.base + "/api/v1/quotes/slow.x", headers={"X-SERVICE-Key": secret}, timeout=10.0)


def test_bad_limits_exit_2_with_a_message(srv: ServerProcess) -> None:
    account(srv, "bad@example.com")
    for flags, named in ((("--instruments", "-1"), "--instruments"), (("--instruments", "many"), "--instruments"),
                         (("--instruments", "10001"), "--instruments"), (("--ticks-per-second", "0"),
                                                                          "--ticks-per-second"),
                         (("--ticks-per-second", "1.5"), "--ticks-per-second"),
                         (("--reset", "--instruments", "5"), "--reset")):
        out = run_cli(srv.data_dir, "users", "limits", "bad@example.com", *flags)
        assert out.returncode == 2, (flags, out.stderr)
        assert named in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr
    assert "from 0 to 10000" in run_cli(srv.data_dir, "users", "limits", "bad@example.com", "--instruments",
                                        "x").stderr
    out = run_cli(srv.data_dir, "users", "limits", "nobody@example.com", "--instruments", "5")
    assert out.returncode == 1 and "no account" in out.stderr
    shown = limits(srv, "bad@example.com")  # no flag: what is in force, nothing changed
    assert "100 instruments (the default)" in shown and "--ingest-rate (the default)" in shown
