"""Usage metering per API key (SPEC 17): plain counters in memory, no I/O, taken and written by a flusher.

The hot path pays one list increment: `cell[0] += 1` on the key's cell, which the pipeline keeps beside the key's
bucket and rate (a defaultdict increment by bucket name cost ~900 instructions a request, bench/instructions.py).
The Redis engine's awaited hot path counts `hits[bucket] += 1` by bucket name ("key:<id>"). Everything else (the
per-status split, WebSocket connections) is a method call off the hot path; the stream's messages are counted per
subscription group and added by a collector at each take. `take(now)` returns what was counted since
the previous take, under the Asia/Shanghai date of the moment that window began, and starts again from zero: the
flusher (server/api/console/flush.py) takes at least every few seconds and at each local midnight, so a day's
counts are that day's to within one flush's latency.

Counters are touched from the event loop and, on Robyn, from its request thread; an increment racing a swap may
land in the counters just taken (counted in the next flush's write, or lost if that flush already ran: one count).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date

KEY_BUCKET = "key:"
SHANGHAI_OFFSET_S = 8 * 3600  # Asia/Shanghai keeps UTC+8 all year (no daylight saving since 1991)
DAY_S = 86400
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def local_day(ts: float) -> str:
    """The Asia/Shanghai date of an epoch time, YYYY-MM-DD (server/market/timefmt.local_date, without importing up)."""
    return date.fromordinal(_EPOCH_ORDINAL + int((ts + SHANGHAI_OFFSET_S) // DAY_S)).isoformat()


def next_midnight(ts: float) -> float:
    """The epoch time of the next Asia/Shanghai midnight after `ts`."""
    return ((ts + SHANGHAI_OFFSET_S) // DAY_S + 1) * DAY_S - SHANGHAI_OFFSET_S


class UsageMeter:
    __slots__ = ("cells", "client_errors", "collectors", "hits", "refused", "requests", "since", "ws_connections",
                 "ws_messages")

    def __init__(self, now: float = 0.0) -> None:
        self.since = now
        # key id -> [requests answered on the hot path]: a list the pipeline keeps per known key and bumps with
        # `cell[0] += 1` (a list index is the cheapest counter Python has); never swapped, read and lowered by take
        self.cells: dict[str, list[int]] = {}
        self.collectors: list[Callable[[UsageMeter], None]] = []
        self._fresh()

    def cell(self, key_id: str) -> list[int]:
        """The key's hot-path counter (made once per key, kept)."""
        found = self.cells.get(key_id)
        if found is None:
            found = self.cells[key_id] = [0]
        return found

    def _fresh(self) -> None:
        self.hits: defaultdict[str, int] = defaultdict(int)  # "key:<id>" -> requests answered on the hot path
        self.requests: defaultdict[str, int] = defaultdict(int)  # key id -> other requests (any status)
        self.refused: defaultdict[str, int] = defaultdict(int)  # key id -> 429s
        self.client_errors: defaultdict[str, int] = defaultdict(int)  # key id -> other 4xx
        self.ws_connections: defaultdict[str, int] = defaultdict(int)
        self.ws_messages: defaultdict[str, int] = defaultdict(int)

    def answered(self, key_id: str, status: int) -> None:
        """A keyed request answered outside the hot path (the pipeline's `handle`)."""
        self.requests[key_id] += 1
        if status == 429:
            self.refused[key_id] += 1
        elif 400 <= status < 500:
            self.client_errors[key_id] += 1

    def ws_opened(self, key_id: str) -> None:
        self.ws_connections[key_id] += 1

    def ws_delivered(self, key_id: str, messages: int) -> None:
        if messages:
            self.ws_messages[key_id] += messages

    def collect_with(self, collector: Callable[[UsageMeter], None]) -> None:
        """`collector(meter)` runs at each take, before the counters are swapped: it adds what its part counts
        its own way (the stream's frames per subscription group, server/stream/delivery/registry.py)."""
        self.collectors.append(collector)

    def take(self, now: float) -> tuple[str, dict[tuple[str, str], tuple[int, int, int, int, int]], set[str]]:
        """(the day the window began, (key id, day) -> (requests, refused, client errors, ws connections,
        ws messages), the keys used) since the last take; the counters start again from zero."""
        for collect in self.collectors:
            collect(self)
        day = local_day(self.since)
        hits, requests, refused, errors = self.hits, self.requests, self.refused, self.client_errors
        conns, messages = self.ws_connections, self.ws_messages
        self._fresh()
        self.since = now
        for bucket, n in list(hits.items()):
            if bucket.startswith(KEY_BUCKET):
                requests[bucket[len(KEY_BUCKET):]] += n
        for key_id, cell in list(self.cells.items()):
            n = cell[0]
            if n:
                cell[0] -= n  # not `= 0`: an increment made meanwhile (another thread) stays for the next take
                requests[key_id] += n
        keys = set(requests) | set(conns) | set(messages)
        counts = {(k, day): (requests.get(k, 0), refused.get(k, 0), errors.get(k, 0), conns.get(k, 0),
                             messages.get(k, 0)) for k in keys}
        return day, counts, set(requests) | set(conns)
