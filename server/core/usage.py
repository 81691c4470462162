"""Usage metering per API key (SPEC 17): plain counters in memory, no I/O, taken and written by a flusher.

The hot path pays one dict increment: `hits[bucket] += 1` with the bucket name it already holds ("key:<id>").
Everything else (the per-status split, WebSocket counts) is a method call off the hot path. `take(now)` swaps in
empty counters and returns what was counted since the previous take, under the Asia/Shanghai date of the moment
that window began: the flusher (server/api/console/flush.py) takes at least every few seconds and at each local
midnight, so a day's counts are that day's to within one flush's latency.

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
    __slots__ = ("client_errors", "hits", "refused", "requests", "since", "ws_connections", "ws_messages")

    def __init__(self, now: float = 0.0) -> None:
        self.since = now
        self._fresh()

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

    def counting(self, key_id: str, write: Callable[[bytes], object]) -> Callable[[bytes], object]:
        """A session's write that counts each write to the client as one message of its key."""

        def counted(data: bytes) -> object:
            self.ws_messages[key_id] += 1
            return write(data)

        return counted

    def take(self, now: float) -> tuple[str, dict[tuple[str, str], tuple[int, int, int, int, int]], set[str]]:
        """(the day the window began, (key id, day) -> (requests, refused, client errors, ws connections,
        ws messages), the keys used) since the last take; the counters start again from zero."""
        day = local_day(self.since)
        hits, requests, refused, errors = self.hits, self.requests, self.refused, self.client_errors
        conns, messages = self.ws_connections, self.ws_messages
        self._fresh()
        self.since = now
        for bucket, n in list(hits.items()):
            if bucket.startswith(KEY_BUCKET):
                requests[bucket[len(KEY_BUCKET):]] += n
        keys = set(requests) | set(conns) | set(messages)
        counts = {(k, day): (requests.get(k, 0), refused.get(k, 0), errors.get(k, 0), conns.get(k, 0),
                             messages.get(k, 0)) for k in keys}
        return day, counts, set(requests) | set(conns)
