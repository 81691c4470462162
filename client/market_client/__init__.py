"""Python client for the commodity market service (SPEC section 13).

REST: `MarketClient` (blocking) and `AsyncMarketClient` (asyncio), one method per endpoint,
typed results (`market_client.models`), problem documents raised as typed exceptions
(`market_client.errors`), 429 retried after `Retry-After`.
Candles: `candles(id, interval, start=, end=)` pages through range queries (`next`).
Stream: `stream()` / `AsyncMarketClient.stream()`, a resuming WebSocket iterator of
`Snapshot`, `Tick`, `Gap`, `CandleUpdate`, `Heartbeat`, ... events (`market_client.events`);
two missed heartbeats make it reconnect and resume.
"""

from market_client.console import AsyncConsole, Console
from market_client.errors import (
    BadRequest,
    ChecksumMismatch,
    Conflict,
    Forbidden,
    MarketError,
    NotFound,
    ProblemError,
    RateLimited,
    ServerError,
    StreamError,
    TransportError,
    Unauthorized,
)
from market_client.events import (
    CandleGap,
    CandleUpdate,
    ErrorMessage,
    Event,
    Gap,
    Heartbeat,
    Pong,
    Snapshot,
    Subscribed,
    Tick,
)
from market_client.models import Candle, CandleSeries, FlatFile, FlatFileList, Quote, QuoteExtended, QuoteList
from market_client.rest import AsyncMarketClient, MarketClient
from market_client.stream import QuoteStream, stream

__version__ = "0.1.0"
__all__ = [
    "AsyncConsole",
    "AsyncMarketClient",
    "BadRequest",
    "Candle",
    "CandleGap",
    "CandleSeries",
    "CandleUpdate",
    "ChecksumMismatch",
    "Conflict",
    "Console",
    "ErrorMessage",
    "Event",
    "FlatFile",
    "FlatFileList",
    "Forbidden",
    "Gap",
    "Heartbeat",
    "MarketClient",
    "MarketError",
    "NotFound",
    "Pong",
    "ProblemError",
    "Quote",
    "QuoteExtended",
    "QuoteList",
    "QuoteStream",
    "RateLimited",
    "ServerError",
    "Snapshot",
    "StreamError",
    "Subscribed",
    "Tick",
    "TransportError",
    "Unauthorized",
    "stream",
]
