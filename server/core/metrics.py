"""Prometheus metrics: plain counters updated on the hot path, exposed by prometheus_client.

Every HTTP request and every delivered tick updates these, so an update is a
dict increment keyed by a label tuple the caller builds once and keeps (the
labelled child, cached: `App.handle` keeps one per (route, status)). Measured
in process (bench/metrics_cost.py): prometheus_client's own locked
`labels(...).inc()` + `observe()` cost about three times as much per request.
Updates happen on the hub's event-loop thread, or (Robyn's sync handlers) under `App.lock`; collecting copies
each dict's keys in one C call first, so a series added meanwhile by another thread cannot break a scrape.

The exposition is prometheus_client's: at scrape time the `Registry` is a
custom collector that turns these values into metric families, and
`generate_latest` writes the text format (exact values, `1.23456789e+08`
rather than `:g`'s six digits, label escaping, `+Inf` buckets).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

Labels = tuple[tuple[str, str], ...]


class Counter:
    def __init__(self, name: str, help_text: str) -> None:
        self.name, self.help = name, help_text
        self.values: defaultdict[Labels, float] = defaultdict(int)
        self._cells: dict[Labels, list[float]] = {}

    def inc(self, labels: Labels = (), amount: float = 1) -> None:
        self.values[labels] += amount

    def cell(self, labels: Labels) -> list[float]:
        """A one-element list a hot path adds to (`cell[0] += 1`) instead of `inc(labels)`: no label tuple is
        hashed per update. Counted with the series' `inc` updates; one cell per series, kept for good."""
        cell = self._cells.get(labels)
        if cell is None:
            cell = self._cells[labels] = [0]
        return cell

    def value(self, labels: Labels = ()) -> float:
        cell = self._cells.get(labels)
        return self.values.get(labels, 0) + (cell[0] if cell is not None else 0)

    def totals(self) -> dict[Labels, float]:
        """Every series' value: its `inc` updates and its cell's together."""
        totals = dict(self.values)
        for labels, cell in list(self._cells.items()):
            totals[labels] = totals.get(labels, 0) + cell[0]
        return totals

    def collect(self) -> Metric:
        totals = self.totals()
        family = CounterMetricFamily(self.name, self.help, labels=_names(list(totals)))
        for labels, value in sorted(totals.items()):
            family.add_metric([v for _, v in labels], value)
        return family


class Gauge:
    """A gauge read from a callback at scrape time (no bookkeeping on hot paths)."""

    def __init__(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        self.name, self.help, self.read = name, help_text, read

    def collect(self) -> Metric:
        return GaugeMetricFamily(self.name, self.help, value=self.read())


class Histogram:
    """Per series one list: the count of each bucket (the last one +Inf), then the sum of the values observed."""

    def __init__(self, name: str, help_text: str, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.name, self.help, self.buckets = name, help_text, buckets
        self.counts: dict[Labels, list[float]] = {}

    def series(self, labels: Labels = ()) -> list[float]:
        """The series' list, which a hot path updates itself (`s[bisect_left(buckets, v)] += 1; s[-1] += v`)
        instead of `observe(v, labels)`: no label tuple is hashed per update."""
        counts = self.counts.get(labels)
        if counts is None:
            counts = self.counts[labels] = [0] * (len(self.buckets) + 2)
        return counts

    def observe(self, value: float, labels: Labels = ()) -> None:
        counts = self.counts.get(labels)
        if counts is None:
            counts = self.series(labels)
        counts[bisect_left(self.buckets, value)] += 1  # bucket i holds buckets[i-1] < value <= buckets[i]
        counts[-1] += value

    def collect(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.help, labels=_names(list(self.counts)))
        bounds = [floatToGoString(b) for b in self.buckets] + ["+Inf"]
        for labels, series in sorted(self.counts.items()):
            cumulative, buckets = 0, []
            for bound, n in zip(bounds, series[:-1], strict=True):
                cumulative += int(n)
                buckets.append((bound, cumulative))
            family.add_metric([v for _, v in labels], buckets, series[-1])
        return family


class Registry(Collector):
    """The process's metrics; a prometheus_client collector, rendered by `generate_latest`."""

    def __init__(self) -> None:
        self._metrics: list[Counter | Gauge | Histogram] = []

    def counter(self, name: str, help_text: str) -> Counter:
        metric = Counter(name, help_text)
        self._metrics.append(metric)
        return metric

    def histogram(self, name: str, help_text: str) -> Histogram:
        metric = Histogram(name, help_text)
        self._metrics.append(metric)
        return metric

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> Gauge:
        metric = Gauge(name, help_text, read)
        self._metrics.append(metric)
        return metric

    def collect(self) -> Iterator[Metric]:
        for metric in self._metrics:
            yield metric.collect()

    def render(self) -> bytes:
        return generate_latest(self)


def _names(series: Iterable[Labels]) -> list[str]:
    """The label names of a metric's series (every series of one metric has the same names)."""
    names: list[str] | None = None
    for labels in series:
        these = [n for n, _ in labels]
        if names is None:
            names = these
        elif these != names:
            raise ValueError(f"label names {these} differ from {names} within one metric")
    return names or []


class HttpMetrics:
    """The metrics the HTTP pipeline updates."""

    def __init__(self, registry: Registry) -> None:
        self.requests = registry.counter("market_http_requests_total", "HTTP requests by route and status.")
        self.latency = registry.histogram("market_http_request_seconds", "HTTP handling time by route.")
        self.rate_limited = registry.counter("market_rate_limit_refusals_total", "Requests refused with 429.")
        self.compressed = registry.counter("market_http_compressed_bodies_total",
                                           "Response bodies compressed, by coding (once per body and coding).")
