"""Rate-limit conformance suite: proves each limit exactly and prints PASS/FAIL.

For each bucket (a free key, a professional key, the public endpoints per client IP):

1. probe once, check `X-RateLimit-Limit`, then wait `X-RateLimit-Reset` seconds so the
   bucket is full (GCRA: a limit of N/min allows a burst of N, then one every 60/N s);
2. burst requests as fast as possible (a pool of concurrent requests) until the first 429
   and count the 200s: with a full bucket the count must be N, plus at most one refill per
   60/N seconds that the burst lasted (a free key's burst of 60 takes far less than 1 s,
   so it must be exactly 60);
3. every 429 must carry `Retry-After` (integer >= 1, at most ceil(60/N) + 1), zero
   `X-RateLimit-Remaining` and an RFC 9457 problem body with code `rate_limited` and the
   same `retryAfter`;
4. after waiting `Retry-After` seconds one request must succeed again.

Run headless against any deployment (keys from the environment, nothing is printed of them):

    MARKET_FREE_KEY=... MARKET_PRO_KEY=... locust -f bench/locust/ratelimits.py --headless \\
        --host https://market.example.com -u 1 -r 1 --run-time 5m --csv results/ratelimits

Limits default to the server's defaults and read the same flags/env as `market-server serve`:
`--plan-rate free=60,professional=600` (MARKET_PLAN_RATE), `--public-rate 60` (MARKET_PUBLIC_RATE).
A check whose key is not given is SKIPped. The run ends by itself when the checks are done;
the exit code is 0 only when no check FAILed and at least one PASSed. With `--csv PREFIX` the
verdicts also go to PREFIX_verdicts.csv next to locust's own CSV files.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import gevent
import gevent.event
from _support import FAIL, PASS, SKIP, Verdict, option, report_verdicts
from locust import FastHttpUser, events, task
from locust.exception import StopUser

DEFAULT_PUBLIC_PATHS = "/api/market,/api/news,/api/research"


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--free-key", env_var="MARKET_FREE_KEY", default="", is_secret=True,
                       help="a free-plan API key (env MARKET_FREE_KEY)")
    parser.add_argument("--pro-key", env_var="MARKET_PRO_KEY", default="", is_secret=True,
                       help="a professional-plan API key (env MARKET_PRO_KEY)")
    parser.add_argument("--plan-rate", env_var="MARKET_PLAN_RATE", default="free=60,professional=600",
                       help="the deployment's per-plan requests/minute (default free=60,professional=600)")
    parser.add_argument("--public-rate", env_var="MARKET_PUBLIC_RATE", type=int, default=60,
                       help="the deployment's public requests/minute per IP (default 60)")
    parser.add_argument("--public-paths", env_var="MARKET_PUBLIC_PATHS", default=DEFAULT_PUBLIC_PATHS,
                       help="public GET paths sharing the per-IP bucket; empty to skip that check")
    parser.add_argument("--settle-max-s", env_var="MARKET_SETTLE_MAX_S", type=float, default=65.0,
                       help="longest wait for a bucket to refill before its burst (default 65)")
    parser.add_argument("--burst-concurrency", env_var="MARKET_BURST_CONCURRENCY", type=int, default=16,
                       help="requests in flight during a burst (default 16)")


@dataclass(frozen=True, slots=True)
class Bucket:
    name: str
    limit: int
    paths: tuple[str, ...]
    headers: dict[str, str]

    @property
    def interval_s(self) -> float:
        return 60.0 / self.limit


@dataclass(slots=True)
class Outcome:
    status: int
    at: float
    headers: dict[str, str]
    body: bytes = b""


@dataclass(slots=True)
class Report:
    verdicts: list[Verdict] = field(default_factory=list)
    completed: bool = False


_REPORT_ATTR = "market_ratelimit_report"


@events.init.add_listener
def _init(environment: Any, **_kw: Any) -> None:
    setattr(environment, _REPORT_ATTR, Report())


def _report(environment: Any) -> Report:
    report: Report | None = getattr(environment, _REPORT_ATTR, None)
    if report is None:
        report = Report()
        setattr(environment, _REPORT_ATTR, report)
    return report


def plan_rates(text: str) -> dict[str, int]:
    rates = {"free": 60, "professional": 600}
    for item in text.split(","):
        plan, _, num = item.partition("=")
        if plan.strip():
            rates[plan.strip()] = int(num)
    return rates


def buckets(environment: Any) -> list[Bucket | Verdict]:
    """The buckets to check; a SKIP verdict for each one that lacks its key or paths."""
    rates = plan_rates(option(environment, "plan_rate", "free=60,professional=600"))
    out: list[Bucket | Verdict] = []
    for plan, opt in (("free", "free_key"), ("professional", "pro_key")):
        key = option(environment, opt, "")
        name = f"{plan} key"
        if key:
            out.append(Bucket(name, rates[plan], ("/api/v1/quotes",), {"X-SERVICE-Key": key}))
        else:
            env = "MARKET_FREE_KEY" if plan == "free" else "MARKET_PRO_KEY"
            out.append(Verdict(name, SKIP, "-", f"{rates[plan]}/min", f"no key: set {env}"))
    paths = tuple(p.strip() for p in option(environment, "public_paths", DEFAULT_PUBLIC_PATHS).split(",") if p.strip())
    public_rate = int(option(environment, "public_rate", 60))
    if paths:
        out.append(Bucket("public per IP", public_rate, paths, {}))
    else:
        out.append(Verdict("public per IP", SKIP, "-", f"{public_rate}/min", "no public paths"))
    return out


class RateLimitChecker(FastHttpUser):
    """One user runs every check in turn, then ends the run."""

    fixed_count = 1
    concurrency = 64
    network_timeout = 10.0
    connection_timeout = 10.0

    @task
    def check_all(self) -> None:
        report = _report(self.environment)
        for item in buckets(self.environment):
            report.verdicts.extend([item] if isinstance(item, Verdict) else self.check(item))
        report.completed = True
        gevent.spawn(self.environment.runner.quit)
        raise StopUser()

    # --- one bucket --------------------------------------------------------------
    def check(self, bucket: Bucket) -> list[Verdict]:
        settled, ready = self.settle(bucket)
        verdicts = [settled]
        if not ready:
            return verdicts
        concurrency = max(1, min(int(option(self.environment, "burst_concurrency", 16)), self.concurrency))
        started, outcomes = self.burst(bucket, concurrency, max_requests=bucket.limit * 2 + 100)
        verdicts.append(burst_verdict(bucket, started, outcomes))
        refused = [o for o in outcomes if o.status == 429]
        if not refused:
            return verdicts
        verdicts.append(refusal_verdict(bucket, refused))
        verdicts.append(self.recovery(bucket, refused[-1]))
        return verdicts

    def get(self, bucket: Bucket, path: str, label: str) -> Outcome:
        with self.client.get(path, headers=bucket.headers, name=f"{bucket.name} {label}",
                             catch_response=True) as resp:
            status = resp.status_code
            if status in (200, 429):
                resp.success()
            else:
                resp.failure(f"unexpected status {status}")
            headers = {k.lower(): v for k, v in (resp.headers or {}).items()}
            body = (resp.content or b"") if status != 200 else b""
            return Outcome(status, time.perf_counter(), headers, body)

    def settle(self, bucket: Bucket) -> tuple[Verdict, bool]:
        """Probe, check the advertised limit, wait until the bucket is full; (verdict, ready to burst)."""
        deadline = time.monotonic() + float(option(self.environment, "settle_max_s", 65.0))
        while True:
            probe = self.get(bucket, bucket.paths[0], "probe")
            if probe.status not in (200, 429):
                return Verdict(f"{bucket.name}: limit header", FAIL, f"HTTP {probe.status}", "200",
                               f"probe of {bucket.paths[0]} failed"), False
            wait = _int(probe.headers.get("x-ratelimit-reset" if probe.status == 200 else "retry-after"))
            if wait is None or time.monotonic() + wait > deadline:
                return Verdict(f"{bucket.name}: limit header", FAIL, f"wait {wait}", "a full bucket",
                               "bucket does not refill within --settle-max-s"), False
            gevent.sleep(wait + 0.05)
            if probe.status == 200:
                break
        advertised = _int(probe.headers.get("x-ratelimit-limit"))
        ok = advertised == bucket.limit
        verdict = Verdict(f"{bucket.name}: limit header", PASS if ok else FAIL, f"X-RateLimit-Limit {advertised}",
                          f"{bucket.limit}", "" if ok else "the deployment advertises another limit")
        return verdict, True

    def burst(self, bucket: Bucket, concurrency: int, max_requests: int) -> tuple[float, list[Outcome]]:
        outcomes: list[Outcome] = []
        issued = itertools.count()
        stop = gevent.event.Event()

        def worker() -> None:
            while not stop.is_set():
                n = next(issued)
                if n >= max_requests:
                    return
                outcome = self.get(bucket, bucket.paths[n % len(bucket.paths)], "burst")
                outcomes.append(outcome)
                if outcome.status != 200:
                    stop.set()

        started = time.perf_counter()
        gevent.joinall([gevent.spawn(worker) for _ in range(concurrency)], timeout=60.0)
        return started, outcomes

    def recovery(self, bucket: Bucket, last: Outcome) -> Verdict:
        retry_after = _int(last.headers.get("retry-after")) or 1
        gevent.sleep(max(0.0, last.at + retry_after - time.perf_counter()) + 0.02)
        again = self.get(bucket, bucket.paths[0], "after Retry-After")
        ok = again.status == 200
        return Verdict(f"{bucket.name}: Retry-After honoured", PASS if ok else FAIL, f"HTTP {again.status}",
                       "200", f"after waiting Retry-After: {retry_after} s")


def burst_verdict(bucket: Bucket, started: float, outcomes: list[Outcome]) -> Verdict:
    """Allowed requests in a burst from a full bucket: N, plus one per interval the burst lasted."""
    check = f"{bucket.name}: burst"
    statuses = {o.status for o in outcomes}
    allowed = sum(o.status == 200 for o in outcomes)
    if statuses - {200, 429}:
        return Verdict(check, FAIL, f"statuses {sorted(statuses)}", "only 200 then 429")
    span = (max(o.at for o in outcomes) - started) if outcomes else 0.0
    most = bucket.limit + math.floor(span / bucket.interval_s)
    expected = f"{bucket.limit}" if most == bucket.limit else f"{bucket.limit}..{most}"
    measured = f"{allowed} x 200 then 429 ({len(outcomes)} requests in {span * 1000:.0f} ms)"
    if 429 not in statuses:
        return Verdict(check, FAIL, f"{allowed} x 200, no 429", expected, "the limit was never enforced")
    ok = bucket.limit <= allowed <= most
    note = "" if ok else ("fewer than the limit: was the bucket in use?" if allowed < bucket.limit
                          else "more than GCRA allows")
    return Verdict(check, PASS if ok else FAIL, measured, expected, note)


def refusal_verdict(bucket: Bucket, refused: list[Outcome]) -> Verdict:
    """Every 429: Retry-After in [1, ceil(60/N) + 1], Remaining 0, problem body rate_limited."""
    ceiling = math.ceil(bucket.interval_s) + 1
    problems = [p for o in refused if (p := _refusal_problem(o, ceiling))]
    retry = sorted({o.headers.get("retry-after", "?") for o in refused})
    measured = f"{len(refused)} x 429, Retry-After {','.join(retry)} s"
    expected = f"Retry-After 1..{ceiling}, code rate_limited"
    return Verdict(f"{bucket.name}: 429 response", FAIL if problems else PASS, measured, expected,
                   problems[0] if problems else "")


def _refusal_problem(o: Outcome, ceiling: int) -> str | None:
    retry_after = _int(o.headers.get("retry-after"))
    if retry_after is None or not 1 <= retry_after <= ceiling:
        return f"Retry-After {o.headers.get('retry-after')!r} out of range"
    if o.headers.get("x-ratelimit-remaining") != "0":
        return f"X-RateLimit-Remaining {o.headers.get('x-ratelimit-remaining')!r} on a 429"
    if not o.headers.get("content-type", "").startswith("application/problem+json"):
        return f"content type {o.headers.get('content-type')!r}"
    try:
        body = json.loads(o.body)
    except ValueError:
        return "429 body is not JSON"
    if body.get("code") != "rate_limited" or body.get("status") != 429:
        return f"problem code {body.get('code')!r} status {body.get('status')!r}"
    if body.get("retryAfter") != retry_after:
        return f"retryAfter {body.get('retryAfter')!r} differs from Retry-After {retry_after}"
    return None


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


@events.quitting.add_listener
def _verdict(environment: Any, **_kw: Any) -> None:
    report = _report(environment)
    verdicts = list(report.verdicts)
    if not report.completed:
        verdicts.append(Verdict("all checks completed", FAIL, "run ended early", "every check run",
                                "raise --run-time"))
    environment.process_exit_code = report_verdicts(environment, "Rate-limit verdicts", verdicts)
