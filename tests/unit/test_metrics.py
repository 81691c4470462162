"""The /metrics exposition read back with prometheus_client's own text parser: exact values."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from server.core.metrics import HttpMetrics, Registry

QUOTES_200 = (("route", "quotes"), ("status", "200"))
QUOTES = (("route", "quotes"),)


def _samples(registry: Registry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = registry.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_counter_above_a_million_is_exact() -> None:
    registry = Registry()
    http = HttpMetrics(registry)
    http.requests.inc(QUOTES_200, 123_456_789)
    http.requests.inc(QUOTES_200)
    ticks = registry.counter("market_ticks_applied_total", "Ticks.")
    ticks.inc(amount=2**53)  # the largest integer a float64 holds exactly
    samples = _samples(registry)
    assert samples[("market_http_requests_total", (("route", "quotes"), ("status", "200")))] == 123_456_790
    assert samples[("market_ticks_applied_total", ())] == 2**53


def test_histogram_buckets_sum_and_count_are_exact() -> None:
    registry = Registry()
    http = HttpMetrics(registry)
    for value in (0.0005, 0.0007, 0.003, 7.0):  # on a bound, inside, between, beyond the last
        http.latency.observe(value, QUOTES)
    samples = _samples(registry)
    bucket = {dict(labels)["le"]: v for (name, labels), v in samples.items()
              if name == "market_http_request_seconds_bucket"}
    assert bucket["0.0005"] == 1 and bucket["0.001"] == 2 and bucket["0.0025"] == 2
    assert bucket["0.005"] == 3 and bucket["2.5"] == 3 and bucket["+Inf"] == 4
    assert samples[("market_http_request_seconds_count", QUOTES)] == 4
    assert samples[("market_http_request_seconds_sum", QUOTES)] == 0.0005 + 0.0007 + 0.003 + 7.0


def test_gauges_label_escaping_and_families() -> None:
    registry = Registry()
    registry.gauge("market_outbox_backlog", "Jobs waiting.", lambda: 1_234_567)
    refusals = registry.counter("market_ws_handshake_refusals_total", "Refused handshakes by reason.")
    refusals.inc((("reason", 'odd "quoted"\\ \n value'),), 3)
    text = registry.render().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["market_outbox_backlog"].type == "gauge"
    assert families["market_outbox_backlog"].samples[0].value == 1_234_567
    refused = families["market_ws_handshake_refusals"]
    assert refused.type == "counter"
    assert refused.samples[0].labels == {"reason": 'odd "quoted"\\ \n value'} and refused.samples[0].value == 3
