"""What `stream()` yields: the server's messages as typed events, plus `Gap`, which the client makes.

Server messages are a msgspec tagged union on ``type`` (SPEC section 7). A message of a
type this client does not know is skipped, so a newer server does not break it.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from market_client.models import Quote


class Snapshot(msgspec.Struct, tag="snapshot", tag_field="type", rename="camel", frozen=True, kw_only=True):
    """Current quotes of the subscribed set; `seqs` names the last tick each price includes, in the
    history `epoch` (a resume asks from there)."""

    updated: datetime | None
    quotes: list[Quote]
    epoch: str | None = None
    seqs: dict[str, int] = msgspec.field(default_factory=dict)

    def __str__(self) -> str:
        prices = ", ".join(f"{q.id} {q.price_text}" for q in self.quotes[:5])
        more = f", ... ({len(self.quotes)} quotes)" if len(self.quotes) > 5 else ""
        return f"snapshot epoch={self.epoch}: {prices}{more}"


class Tick(msgspec.Struct, tag="tick", tag_field="type", frozen=True, kw_only=True):
    id: str
    price: float
    change: float
    ts: datetime
    seq: int
    bid: float | None = None  # a futures product's tick (SPEC 19): the book, open interest, the day's volume
    ask: float | None = None
    oi: int | None = None
    vol: float | None = None

    def __str__(self) -> str:
        at = self.ts.isoformat(timespec="milliseconds")
        return f"tick {self.id} {self.price:,.4f} ({self.change:+,.4f}) seq={self.seq} at {at}"


class Subscribed(msgspec.Struct, tag="subscribed", tag_field="type", rename="camel", frozen=True, kw_only=True):
    ids: list[str]
    req_id: str | int | None = None
    recovered: bool | None = None
    candles: list[str] | None = None
    resolved: dict[str, str] | None = None  # continuous ids named (methanol.c.0) -> the contract each named (SPEC 19)


class CandleUpdate(msgspec.Struct, tag="candle", tag_field="type", frozen=True, kw_only=True):
    """A live candle of a subscribed interval (SPEC 14). `final: False`: the bucket is still filling (at most
    one such update per second per id and interval, the latest state); `final: True`: the bucket is closed
    and this is what `/kline` returns for it. `t` is as in `/kline` (a date for 1d, else the bucket's start
    with offset); `seq` the last tick included (None for a final candle the client fetched with a range
    query after a reconnect, see `CandleGap`)."""

    id: str
    interval: str
    t: str
    open: float = msgspec.field(name="o")
    high: float = msgspec.field(name="h")
    low: float = msgspec.field(name="l")
    close: float = msgspec.field(name="c")
    volume: float = msgspec.field(name="v")
    final: bool
    seq: int | None = None

    def __str__(self) -> str:
        state = "final" if self.final else "live"
        return (f"candle {self.id} {self.interval} {self.t} o={self.open:,} h={self.high:,} l={self.low:,} "
                f"c={self.close:,} v={self.volume:,.0f} {state}")


class Heartbeat(msgspec.Struct, tag="heartbeat", tag_field="type", frozen=True, kw_only=True):
    """Sent every `--heartbeat-s` (default 5 s), after the ticks it accounts for: `seqs` is the last tick seq of
    each subscribed id. The stream treats silence for two intervals as a dead connection and reconnects."""

    ts: datetime
    seqs: dict[str, int] = msgspec.field(default_factory=dict)

    def __str__(self) -> str:
        return f"heartbeat at {self.ts.isoformat(timespec='milliseconds')}: {len(self.seqs)} ids"


class Pong(msgspec.Struct, tag="pong", tag_field="type", rename="camel", frozen=True, kw_only=True):
    ts: datetime | None = None
    req_id: str | int | None = None


class ErrorMessage(msgspec.Struct, tag="error", tag_field="type", rename="camel", frozen=True, kw_only=True):
    code: str
    detail: str
    req_id: str | int | None = None


class Gap(msgspec.Struct, frozen=True, kw_only=True):
    """Ticks the client knows it did not get and could not recover.

    `missed` maps each instrument to (first missed seq, last missed seq); the last is None when
    unknown (the server answered `recovered: false`; a fresh `Snapshot` follows with current
    prices). `reason`: "not_recovered" (resume refused: history no longer held, or a new
    `epoch`, e.g. a server restart), or "seq_jump" (a live tick skipped seqs, e.g. a slow
    client's conflated buffer). `epoch` is the history the seqs belong to.
    """

    reason: str
    missed: dict[str, tuple[int, int | None]]
    epoch: str | None = None

    @property
    def ids(self) -> list[str]:
        return list(self.missed)

    def __str__(self) -> str:
        missed = ", ".join(f"{i} {a}..{'?' if b is None else b}" for i, (a, b) in self.missed.items())
        return f"gap ({self.reason}): {missed}"


class CandleGap(msgspec.Struct, frozen=True, kw_only=True):
    """Final candles the stream missed while it was disconnected (candle frames are not replayed on resume):
    the buckets with `start <= t < end` of `id` at `interval`, of which those in `open` (seen only while still
    filling) or after `last` (the latest bucket seen) were not seen final. `AsyncMarketClient.stream()` fills
    the gap itself (it yields the fetched candles as final `CandleUpdate`s, `seq` None, instead of this
    event); a bare `stream()` yields it, for `candles(id, interval, start=gap.start, end=gap.end)`."""

    id: str
    interval: str
    start: str
    end: str
    last: str
    open: tuple[str, ...] = ()

    def wanted(self, t: str) -> bool:
        """Whether a bucket fetched for this gap was missed (not one already seen final)."""
        return t in self.open or t > self.last

    def __str__(self) -> str:
        return f"candle gap {self.id} {self.interval}: {self.start} <= t < {self.end}"


ServerMessage = Snapshot | Tick | Subscribed | Pong | ErrorMessage | CandleUpdate | Heartbeat
Event = Snapshot | Tick | Subscribed | Pong | ErrorMessage | Gap | CandleUpdate | Heartbeat | CandleGap

decoder: msgspec.json.Decoder[ServerMessage] = msgspec.json.Decoder(ServerMessage)  # type: ignore[arg-type]
