"""WebSocket quote stream: tick latency and gaps in `seq`, per instrument.

Each user holds one plain WebSocket (websocket-client, cooperative under locust's gevent)
to `/ws/quotes?key=...`, reads the snapshot, optionally narrows the subscription, and then
reads every frame. Locust request events (type "WS"):

- `connect`: handshake time; a refused handshake (401/403/429) is a failure naming the status;
- `snapshot`: time from connect to the first message;
- `tick`: now - the tick's `ts` (the server's clock: loopback or NTP-synced hosts only);
- `pong`: round trip of a `{"op":"ping"}` every `--ping-s` seconds;
- `seq gap`: a failure per gap, naming the instrument and how many ticks are missing.

With `--candles 1m,1d` (SPEC 14) each user also subscribes to live candles of those intervals: `candle`
events (final frames: now - the bucket's end), a failure per non-final frame that follows the previous one
of its (id, interval) by less than 0.5 s (the server sends at most one a second), and `heartbeat` events
(the gap since the previous heartbeat; a gap over twice `--heartbeat-s` is a failure: a stale stream).

`seq` counts each instrument's ticks from 1 per server start (the snapshot's `epoch`), so a
jump from 7 to 9 is one missed tick: the server conflates ticks for a client that cannot
keep up. Gaps are counted within a connection; after a reconnect the new snapshot
resynchronises the client, so missed ticks across a reconnect are reported as reconnects.

    MARKET_KEY=<professional or enterprise key> locust -f bench/locust/ws_stream.py --headless \\
        --host https://market.example.com --ws-url wss://market.example.com/ws/quotes \\
        -u 20 -r 5 --run-time 2m --csv results/websocket

A key admits only its plan's connections (professional 5, enterprise 50 by default), and one
client IP only `--ws-handshake-rate` handshakes a minute (default 120, then 429):
`MARKET_KEY` may list several keys, comma-separated, which users take in turn. Without
`--ws-url` the URL is the host of `--host` on port 8001. The exit code is 1 when a
connection failed, no tick arrived, or any gap was seen (unless `--allow-gaps`).
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit

import gevent
import orjson
import websocket
from _support import FAIL, PASS, Verdict, csv_prefix, option, report_verdicts, write_csv
from locust import User, events, task
from locust.exception import StopUser

DEFAULT_WS_PORT = 8001


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--key", env_var="MARKET_KEY", default="", is_secret=True,
                        help="professional/enterprise API key(s), comma-separated (env MARKET_KEY)")
    parser.add_argument("--ws-url", env_var="MARKET_WS_URL", default="",
                        help="ws(s)://HOST:PORT/ws/quotes (default: --host's host on port 8001)")
    parser.add_argument("--ids", env_var="MARKET_WS_IDS", default="",
                        help="comma-separated instrument ids to subscribe to (default: all)")
    parser.add_argument("--ping-s", env_var="MARKET_WS_PING_S", type=float, default=5.0,
                        help="seconds between pings (pong round trip events); default 5")
    parser.add_argument("--candles", env_var="MARKET_WS_CANDLES", default="",
                        help="comma-separated candle intervals to subscribe to (1m,5m,15m,1h,1d; default none)")
    parser.add_argument("--heartbeat-s", env_var="MARKET_HEARTBEAT_S", type=float, default=5.0,
                        help="the server's --heartbeat-s (a gap over twice it fails); default 5")
    parser.add_argument("--allow-gaps", action="store_true", default=False,
                        help="do not fail the run for gaps in seq (e.g. a deliberately slow client)")


@dataclass(slots=True)
class InstrumentStats:
    ticks: int = 0
    gaps: int = 0
    missing: int = 0
    stale: int = 0  # seq not above the last one seen (duplicate or out of order)


@dataclass(slots=True)
class StreamReport:
    connects: int = 0
    refused: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    disconnects: int = 0
    instruments: dict[str, InstrumentStats] = field(default_factory=lambda: defaultdict(InstrumentStats))
    users: itertools.count = field(default_factory=itertools.count)  # type: ignore[type-arg]
    candles: int = 0
    finals: int = 0
    too_fast: int = 0  # non-final frames of one (id, interval) less than 0.5 s apart
    heartbeats: int = 0
    stale: int = 0  # heartbeat gaps over twice --heartbeat-s
    stopped: bool = False  # the test stopped: readers count nothing more


_REPORT_ATTR = "market_stream_report"


def _report(environment: Any) -> StreamReport:
    report: StreamReport | None = getattr(environment, _REPORT_ATTR, None)
    if report is None:
        report = StreamReport()
        setattr(environment, _REPORT_ATTR, report)
    return report


def stream_url(environment: Any, key: str) -> str:
    url = option(environment, "ws_url", "")
    if not url:
        host = urlsplit(environment.host or "http://127.0.0.1")
        scheme = "wss" if host.scheme == "https" else "ws"
        url = f"{scheme}://{host.hostname}:{DEFAULT_WS_PORT}/ws/quotes"
    return f"{url}{'&' if '?' in url else '?'}key={quote(key, safe='')}"


def tick_time(ts: str) -> float:
    """Epoch seconds of an ISO 8601 timestamp with offset."""
    return datetime.fromisoformat(ts).timestamp()


class QuoteStreamUser(User):
    """One WebSocket per user: connect, snapshot, then every tick until the run ends."""

    def on_start(self) -> None:
        keys = [k.strip() for k in option(self.environment, "key", "").split(",") if k.strip()]
        if not keys:
            raise RuntimeError("set MARKET_KEY (or --key) to a professional or enterprise API key")
        report = _report(self.environment)
        self.key = keys[next(report.users) % len(keys)]
        self.ids = [i.strip() for i in option(self.environment, "ids", "").split(",") if i.strip()]
        self.ping_s = float(option(self.environment, "ping_s", 5.0))
        self.candles = [c.strip() for c in option(self.environment, "candles", "").split(",") if c.strip()]
        self.heartbeat_s = float(option(self.environment, "heartbeat_s", 5.0))
        self.ws: websocket.WebSocket | None = None
        self.reader: gevent.Greenlet | None = None
        self.pings: dict[int, float] = {}
        self.req_ids = itertools.count(1)

    def wait_time(self) -> float:
        return self.ping_s

    def _event(self, name: str, started: float, length: int = 0, exc: Exception | None = None,
               response_time: float | None = None) -> None:
        elapsed = (time.perf_counter() - started) * 1000.0 if response_time is None else response_time
        self.environment.events.request.fire(request_type="WS", name=name, response_time=elapsed,
                                             response_length=length, exception=exc, context={})

    @task
    def keep_streaming(self) -> None:
        """(Re)connect when needed, then ping; the reader greenlet handles everything received."""
        if self.ws is None or self.reader is None or self.reader.dead:
            self.connect()
        if self.ws is not None:
            req_id = next(self.req_ids)
            self.pings[req_id] = time.perf_counter()
            self.send({"op": "ping", "reqId": req_id})

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.ws.send(orjson.dumps(message).decode())  # type: ignore[union-attr]
        except (OSError, websocket.WebSocketException) as exc:
            self._event("send", time.perf_counter(), exc=exc)

    def connect(self) -> None:
        report = _report(self.environment)
        started = time.perf_counter()
        try:
            ws = websocket.create_connection(stream_url(self.environment, self.key), timeout=10,
                                             enable_multithread=False)
        except websocket.WebSocketBadStatusException as exc:
            report.refused[str(exc.status_code)] += 1
            self._event("connect", started, exc=RuntimeError(f"handshake refused: HTTP {exc.status_code}"))
            raise StopUser() from None
        except (OSError, websocket.WebSocketException) as exc:
            report.refused[type(exc).__name__] += 1
            self._event("connect", started, exc=exc)
            raise StopUser() from None
        self._event("connect", started)
        report.connects += 1
        first = ws.recv()
        self._event("snapshot", started, len(first))
        snapshot = orjson.loads(first)
        if snapshot.get("type") != "snapshot":
            self._event("snapshot", started, exc=RuntimeError("first message is not a snapshot"))
        ws.settimeout(None)
        self.ws = ws
        if self.candles:
            ids = self.ids or [q["id"] for q in snapshot.get("quotes", [])]
            self.send({"op": "subscribe", "ids": ids, "candles": self.candles, "reqId": "bench"})
        elif self.ids:
            self.send({"op": "subscribe", "ids": self.ids, "reqId": "bench"})
        self.reader = gevent.spawn(self.read, ws, report)

    def read(self, ws: websocket.WebSocket, report: StreamReport) -> None:
        last: dict[str, int] = {}
        candle_at: dict[tuple[str, str], float] = {}
        beat_at: list[float] = []
        while True:
            try:
                raw = ws.recv()
            except (OSError, websocket.WebSocketException) as exc:
                if self.ws is ws:  # not closed by on_stop
                    report.disconnects += 1
                    self._event("disconnect", time.perf_counter(), exc=exc)
                    self.ws = None
                return
            now = time.time()
            if report.stopped:
                return
            msg = orjson.loads(raw)
            kind = msg.get("type")
            if kind == "tick":
                self.on_tick(msg, now, len(raw), last, report)
            elif kind == "candle":
                self.on_candle(msg, now, len(raw), candle_at, report)
            elif kind == "heartbeat":
                report.heartbeats += 1
                gap = now - beat_at[0] if beat_at else 0.0
                beat_at[:] = [now]
                exc = None
                if gap > 2 * self.heartbeat_s:
                    report.stale += 1
                    exc = RuntimeError(f"{gap:.1f} s since the previous heartbeat")
                self._event("heartbeat", 0.0, len(raw), exc=exc, response_time=gap * 1000.0)
            elif kind == "pong":
                sent = self.pings.pop(msg.get("reqId"), None)  # type: ignore[arg-type]
                if sent is not None:
                    self._event("pong", sent, len(raw))
            elif kind == "snapshot":
                last.clear()  # a new subscription set starts a new baseline
            elif kind == "error":
                self._event("error message", time.perf_counter(), len(raw),
                            exc=RuntimeError(f"{msg.get('code')}: {msg.get('detail')}"))

    def on_tick(self, msg: dict[str, Any], now: float, length: int, last: dict[str, int],
                report: StreamReport) -> None:
        inst, seq = msg["id"], int(msg["seq"])
        stats = report.instruments[inst]
        stats.ticks += 1
        self._event("tick", 0.0, length, response_time=max(0.0, (now - tick_time(msg["ts"])) * 1000.0))
        prev = last.get(inst)
        if prev is not None:
            if seq <= prev:
                stats.stale += 1
                return
            if seq > prev + 1:
                stats.gaps += 1
                stats.missing += seq - prev - 1
                self._event("seq gap", 0.0, exc=RuntimeError(f"{inst}: {seq - prev - 1} missing"), response_time=0)
        last[inst] = seq

    def on_candle(self, msg: dict[str, Any], now: float, length: int, candle_at: dict[tuple[str, str], float],
                  report: StreamReport) -> None:
        report.candles += 1
        if msg["final"]:
            report.finals += 1
            seconds = {"1m": 60, "5m": 300, "15m": 900, "1h": 3600}.get(msg["interval"])
            late = now - (tick_time(msg["t"]) + seconds) if seconds else 0.0
            self._event("candle final", 0.0, length, response_time=max(0.0, late * 1000.0))
            return
        key = (msg["id"], msg["interval"])
        prev = candle_at.get(key)
        candle_at[key] = now
        exc = None
        if prev is not None and now - prev < 0.5:
            report.too_fast += 1
            exc = RuntimeError(f"{key}: {now - prev:.2f} s after the previous frame")
        self._event("candle", 0.0, length, exc=exc, response_time=0.0)

    def on_stop(self) -> None:
        ws, self.ws = self.ws, None
        if self.reader is not None:
            self.reader.kill(block=True, timeout=2)  # one greenlet reads at a time: stop ours first
        if ws is not None:
            ws.close(timeout=2)


@events.test_stop.add_listener
def _stopped(environment: Any, **_kw: Any) -> None:
    _report(environment).stopped = True


@events.quitting.add_listener
def _verdict(environment: Any, **_kw: Any) -> None:
    report = _report(environment)
    insts = report.instruments
    ticks = sum(s.ticks for s in insts.values())
    gaps = sum(s.gaps for s in insts.values())
    missing = sum(s.missing for s in insts.values())
    stale = sum(s.stale for s in insts.values())
    refused = sum(report.refused.values())
    allow_gaps = bool(option(environment, "allow_gaps", False))
    tick = environment.stats.get("tick", "WS")
    pong = environment.stats.get("pong", "WS")
    gap_insts = sorted(i for i, s in insts.items() if s.gaps)
    verdicts = [
        Verdict("connections", PASS if report.connects and not refused else FAIL,
                f"{report.connects} open, {refused} refused", "all open",
                ", ".join(f"{k}: {v}" for k, v in sorted(report.refused.items()))),
        Verdict("ticks received", PASS if ticks else FAIL, f"{ticks} over {len(insts)} instruments", "> 0"),
        Verdict("seq gaps", PASS if gaps == 0 or allow_gaps else FAIL,
                f"{gaps} gaps, {missing} ticks missing", "0" if not allow_gaps else "reported only",
                ", ".join(gap_insts[:8]) + (" ..." if len(gap_insts) > 8 else "")),
        Verdict("duplicate or out-of-order seq", PASS if stale == 0 else FAIL, f"{stale}", "0"),
        Verdict("tick latency", PASS if tick.num_requests else FAIL,
                f"p50 {tick.get_response_time_percentile(0.5):.0f} ms, "
                f"p99 {tick.get_response_time_percentile(0.99):.0f} ms", "reported",
                "now - tick ts (server clock)"),
        Verdict("pong round trip", PASS if pong.num_failures == 0 else FAIL,
                f"{pong.num_requests} pongs, p99 {pong.get_response_time_percentile(0.99):.0f} ms", "reported"),
        Verdict("unexpected disconnects", PASS if report.disconnects == 0 else FAIL, f"{report.disconnects}", "0"),
        Verdict("heartbeats", PASS if report.stale == 0 else FAIL,
                f"{report.heartbeats} heartbeats, {report.stale} gaps over 2x --heartbeat-s", "no stale gap"),
    ]
    if option(environment, "candles", ""):
        verdicts += [
            Verdict("candle frames", PASS if report.candles else FAIL,
                    f"{report.candles} ({report.finals} final)", "> 0"),
            Verdict("non-final candle rate", PASS if report.too_fast == 0 else FAIL,
                    f"{report.too_fast} within 0.5 s of the previous", "<= 1 per (id, interval) per second"),
        ]
    prefix = csv_prefix(environment)
    if prefix:
        write_csv(f"{prefix}_ws_gaps.csv", ("instrument", "ticks", "gaps", "missing", "stale"),
                  [(i, s.ticks, s.gaps, s.missing, s.stale) for i, s in sorted(insts.items())])
    environment.process_exit_code = report_verdicts(environment, "WebSocket stream", verdicts)
