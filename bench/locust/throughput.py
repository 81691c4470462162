"""REST throughput on the hot keyed endpoints, with an enterprise key.

Weighted mix of what a dashboard polls: the quote list (all and by kind), single quotes,
candles (90 and 30 days), spreads and inventories. Each user keeps its connections open
and sends as fast as the server answers unless `--pace-s` gives it a pause.

    MARKET_KEY=<enterprise key> locust -f bench/locust/throughput.py --headless \\
        --host https://market.example.com -u 50 -r 10 --run-time 2m --csv results/throughput

Give the key a rate above what you intend to send (`market-server keys create --plan
enterprise --rate 100000000`): a 429 counts as a failure here, because a throttled run
measures the limit, not the capacity. At the end the suite prints requests/s, p50/p99
per endpoint and a verdict; the exit code is 1 when any request failed (or none ran).
"""

from __future__ import annotations

import random
from typing import Any

from _support import FAIL, PASS, Verdict, option, report_verdicts
from locust import FastHttpUser, events, task

FALLBACK_IDS = ("brent", "wti", "methanol", "pta", "usdcny")


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--key", env_var="MARKET_KEY", default="", is_secret=True,
                        help="an enterprise API key with a high rate (env MARKET_KEY)")
    parser.add_argument("--pace-s", env_var="MARKET_PACE_S", type=float, default=0.0,
                        help="pause between one user's requests, seconds (default 0: closed loop)")
    parser.add_argument("--max-requests", env_var="MARKET_MAX_REQUESTS", type=int, default=0,
                        help="stop the run once this many requests were sent in all (default 0: --run-time decides)")


class HotEndpointsUser(FastHttpUser):
    network_timeout = 10.0
    connection_timeout = 10.0

    def on_start(self) -> None:
        key = option(self.environment, "key", "")
        if not key:
            raise RuntimeError("set MARKET_KEY (or --key) to an enterprise API key")
        self.headers = {"X-SERVICE-Key": key}
        self.pace = float(option(self.environment, "pace_s", 0.0))
        self.ids = self._instrument_ids()

    def _instrument_ids(self) -> list[str]:
        with self.client.get("/api/v1/quotes", headers=self.headers, name="/api/v1/quotes",
                             catch_response=True) as resp:
            if resp.status_code != 200:
                resp.failure(f"HTTP {resp.status_code}")
                return list(FALLBACK_IDS)
            return [q["id"] for q in resp.json()["quotes"]] or list(FALLBACK_IDS)

    def wait_time(self) -> float:  # type: ignore[override]
        return self.pace

    def _get(self, path: str, name: str) -> None:
        with self.client.get(path, headers=self.headers, name=name, catch_response=True) as resp:
            if resp.status_code != 200:
                resp.failure(f"HTTP {resp.status_code}")
        limit = int(option(self.environment, "max_requests", 0))
        if limit and self.environment.stats.total.num_requests >= limit and self.environment.runner is not None:
            self.environment.runner.quit()  # a run bounded by count: the same work on a fast or a loaded machine

    @task(6)
    def quotes(self) -> None:
        self._get("/api/v1/quotes", "/api/v1/quotes")

    @task(2)
    def quotes_by_kind(self) -> None:
        self._get("/api/v1/quotes?kind=" + random.choice(("oil", "chem", "fx")), "/api/v1/quotes?kind=[kind]")

    @task(4)
    def quote(self) -> None:
        self._get("/api/v1/quotes/" + random.choice(self.ids), "/api/v1/quotes/[id]")

    @task(4)
    def kline(self) -> None:
        self._get("/api/v1/kline/" + random.choice(self.ids), "/api/v1/kline/[id]")

    @task(1)
    def kline_30(self) -> None:
        self._get(f"/api/v1/kline/{random.choice(self.ids)}?days=30", "/api/v1/kline/[id]?days=30")

    @task(2)
    def spreads(self) -> None:
        self._get("/api/v1/spreads", "/api/v1/spreads")

    @task(2)
    def inventory(self) -> None:
        self._get("/api/v1/inventory", "/api/v1/inventory")


@events.quitting.add_listener
def _verdict(environment: Any, **_kw: Any) -> None:
    total = environment.stats.total
    rows = []
    for entry in sorted(environment.stats.entries.values(), key=lambda e: e.name):
        p50, p99 = entry.get_response_time_percentile(0.5), entry.get_response_time_percentile(0.99)
        rows.append(Verdict(
            entry.name, PASS if entry.num_failures == 0 else FAIL,
            f"{entry.num_requests} req, {entry.total_rps:,.0f} req/s, p50 {p50:.0f} ms, p99 {p99:.0f} ms",
            "no failures", f"{entry.num_failures} failed" if entry.num_failures else "",
        ))
    ok = total.num_requests > 0 and total.num_failures == 0
    rows.append(Verdict("total", PASS if ok else FAIL,
                        f"{total.num_requests} req, {total.total_rps:,.0f} req/s, "
                        f"p99 {total.get_response_time_percentile(0.99):.0f} ms",
                        "requests and no failures", f"{total.num_failures} failed" if total.num_failures else ""))
    environment.process_exit_code = report_verdicts(environment, "REST throughput", rows)
