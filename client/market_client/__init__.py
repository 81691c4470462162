"""Python client for the commodity market service (SPEC section 13).

REST: `MarketClient` (blocking) and `AsyncMarketClient` (asyncio), one method per endpoint,
typed results (`market_client.models`), problem documents raised as typed exceptions
(`market_client.errors`), 429 retried after `Retry-After`.
Stream: `stream()` / `AsyncMarketClient.stream()`, a resuming WebSocket iterator of
`Snapshot`, `Tick`, `Gap`, ... events (`market_client.events`).
"""

from market_client.errors import (
    BadRequest,
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
from market_client.events import ErrorMessage, Event, Gap, Pong, Snapshot, Subscribed, Tick
from market_client.models import Candle, CandleSeries, Quote, QuoteExtended, QuoteList
from market_client.rest import AsyncMarketClient, MarketClient
from market_client.stream import QuoteStream, stream

__version__ = "0.1.0"
__all__ = [
    "AsyncMarketClient", "BadRequest", "Candle", "CandleSeries", "Conflict", "ErrorMessage", "Event", "Forbidden",
    "Gap",
    "MarketClient", "MarketError", "NotFound", "Pong", "ProblemError", "Quote", "QuoteExtended", "QuoteList",
    "QuoteStream", "RateLimited", "ServerError", "Snapshot", "StreamError", "Subscribed", "Tick",
    "TransportError", "Unauthorized", "stream",
]
