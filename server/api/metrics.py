"""Prometheus metrics: plain-int counters and fixed-bucket histograms.

Written here rather than with prometheus_client because every HTTP request
and every delivered tick increments these: a dict increment on the event loop
thread costs a fraction of prometheus_client's locked `labels().inc()`. All
updates happen on the hub's single event-loop thread; `render` is a read.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

Labels = tuple[tuple[str, str], ...]


class Counter:
    def __init__(self, name: str, help_text: str) -> None:
        self.name, self.help = name, help_text
        self.values: defaultdict[Labels, float] = defaultdict(float)

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        self.values[labels] += amount

    def value(self, labels: Labels = ()) -> float:
        return self.values.get(labels, 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        lines += [f"{self.name}{_fmt(lbl)} {v:g}" for lbl, v in sorted(self.values.items())]
        return lines


class Gauge:
    """A gauge read from a callback at scrape time (no bookkeeping on hot paths)."""

    def __init__(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        self.name, self.help, self.read = name, help_text, read

    def render(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge", f"{self.name} {self.read():g}"]


class Histogram:
    def __init__(self, name: str, help_text: str, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.name, self.help, self.buckets = name, help_text, buckets
        self.counts: dict[Labels, list[int]] = {}
        self.sums: defaultdict[Labels, float] = defaultdict(float)

    def observe(self, value: float, labels: Labels = ()) -> None:
        counts = self.counts.get(labels)
        if counts is None:
            counts = self.counts[labels] = [0] * (len(self.buckets) + 1)
        counts[bisect_left(self.buckets, value)] += 1
        self.sums[labels] += value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for labels, counts in sorted(self.counts.items()):
            cumulative = 0
            for bound, n in zip((*self.buckets, float("inf")), counts, strict=True):
                cumulative += n
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                lines.append(f"{self.name}_bucket{_fmt((*labels, ('le', le)))} {cumulative}")
            lines.append(f"{self.name}_sum{_fmt(labels)} {self.sums[labels]:g}")
            lines.append(f"{self.name}_count{_fmt(labels)} {cumulative}")
        return lines


class Registry:
    def __init__(self) -> None:
        self._metrics: list[Counter | Gauge | Histogram] = []

    def counter(self, name: str, help_text: str) -> Counter:
        return self._add(Counter(name, help_text))

    def histogram(self, name: str, help_text: str) -> Histogram:
        return self._add(Histogram(name, help_text))

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> Gauge:
        return self._add(Gauge(name, help_text, read))

    def _add(self, metric):  # type: ignore[no-untyped-def]
        self._metrics.append(metric)
        return metric

    def render(self) -> bytes:
        lines: list[str] = []
        for metric in self._metrics:
            lines += metric.render()
        return ("\n".join(lines) + "\n").encode()


def _fmt(labels: Labels) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class HttpMetrics:
    """The metrics the HTTP pipeline updates."""

    def __init__(self, registry: Registry) -> None:
        self.requests = registry.counter("market_http_requests_total", "HTTP requests by route and status.")
        self.latency = registry.histogram("market_http_request_seconds", "HTTP handling time by route.")
        self.rate_limited = registry.counter("market_rate_limit_refusals_total", "Requests refused with 429.")
