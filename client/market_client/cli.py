"""`market-client`: quotes as a table, or a live tick per line.

    market-client quotes [--kind oil] [--ids brent,wti] [--json]
    market-client watch brent wti [--count N] [--candles 1m,1d] [--json]
    market-client flatfiles ticks [--from 2026-11-02] [--to 2026-11-06] [--format parquet] [--venue zce]
                            [--download DIR]

Every command takes `--key` (else env MARKET_KEY), `--url` (default http://127.0.0.1:8000)
and, for `watch`, `--ws-url` (default: the port the server's /api/config names, else 8001).
Exit codes: 0 ok, 1 the server refused (the problem's detail is printed), 2 usage, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TextIO

import msgspec

from market_client import models as m
from market_client.errors import MarketError, ProblemError
from market_client.events import CandleGap, CandleUpdate, Gap, Snapshot, Tick
from market_client.rest import AsyncMarketClient, MarketClient


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get("MARKET_URL", "http://127.0.0.1:8000"),
                        help="HTTP base URL (env MARKET_URL; default %(default)s)")
    common.add_argument("--key", default=os.environ.get("MARKET_KEY"), help="API key (default: env MARKET_KEY)")
    common.add_argument("--json", action="store_true", help="JSON output (one object per line for watch)")
    parser = argparse.ArgumentParser(prog="market-client", description="Client for the commodity market service.")
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quotes", parents=[common], help="quotes as a table")
    q.add_argument("--kind", choices=["oil", "chem", "fx"])
    q.add_argument("--ids", help="comma-separated instrument ids")
    w = sub.add_parser("watch", parents=[common], help="live ticks, one line each")
    w.add_argument("ids", nargs="*", help="instrument ids (default: all)")
    w.add_argument("--ws-url", help="WebSocket URL (default: ws://HOST:<port from /api/config>/ws/quotes)")
    w.add_argument("--count", type=int, help="stop after this many ticks")
    w.add_argument("--candles", help="also live candles of these intervals, comma-separated (1m,5m,15m,1h,1d)")
    f = sub.add_parser("flatfiles", parents=[common], help="a closed trading day's files: list or download")
    f.add_argument("dataset", choices=["ticks", "candles-1m", "candles-1d"])
    f.add_argument("--from", dest="start", help="first trading day, YYYY-MM-DD (default: 30 days before --to)")
    f.add_argument("--to", dest="end", help="last trading day, YYYY-MM-DD (default: today)")
    f.add_argument("--format", choices=["csv.gz", "parquet"], default="csv.gz")
    f.add_argument("--venue", help="a venue's own files (e.g. zce): its instruments, from its close plus 2 minutes")
    f.add_argument("--download", metavar="DIR", help="download every file listed into DIR (resumed, sha256 checked)")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    try:
        if args.command == "quotes":
            return _quotes(args, out)
        if args.command == "flatfiles":
            return _flatfiles(args, out)
        return asyncio.run(_watch(args, out))
    except ProblemError as exc:
        print(f"market-client: {exc.status} {exc.code}: {exc.detail}", file=sys.stderr)
        return 1
    except MarketError as exc:
        print(f"market-client: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _quotes(args: argparse.Namespace, out: TextIO) -> int:
    ids = [i for i in args.ids.split(",") if i] if args.ids else None
    with MarketClient(args.url, args.key) as api:
        result = api.quotes(kind=args.kind, ids=ids)
    if args.json:
        out.write(msgspec.json.encode(result).decode() + "\n")
    else:
        out.write(format_table(result.quotes))
    return 0


def _flatfiles(args: argparse.Namespace, out: TextIO) -> int:
    """List the files (date, condition, rows, bytes, sha256, url), or download each into --download (one line per file:
    the path, its bytes and sha256, checked)."""
    with MarketClient(args.url, args.key) as api:
        files = api.flatfiles(args.dataset, args.start, args.end, args.format, args.venue).files
        for entry in files:
            if args.download:
                path = api.download_flatfile(entry, args.download)
                row: Any = {"path": str(path), "bytes": entry.bytes, "sha256": entry.sha256}
                text = f"{path}  {entry.bytes} bytes  sha256 {entry.sha256} ok"
            else:
                row = m.to_builtins(entry)
                text = (f"{entry.date}  {entry.condition or '-':<9}  {entry.rows:>9} rows  {entry.bytes:>11} bytes  "
                        f"{entry.sha256}  {entry.url}")
            out.write((msgspec.json.encode(row).decode() if args.json else text) + "\n")
    if not files:
        print(f"market-client: no {args.dataset} files in that range", file=sys.stderr)
    return 0


def format_table(quotes: list[m.Quote]) -> str:
    """Prices and changes with each instrument's own decimals (those of its `priceText`), percentages with 2,
    times with their zone (the server's, +08:00 by default)."""
    head = ("id", "kind", "name", "price", "change", "change%", "unit", "updated")
    rows = [head] + [(
        q.id, q.kind, q.name.en, _num(q.price, q.decimals), _num(q.change, q.decimals, signed=True),
        _num(q.change_pct, 2, signed=True), q.unit.en, _time(q.updated),
    ) for q in quotes]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    numeric = {3, 4, 5}
    lines = ["  ".join(cell.rjust(w) if i in numeric else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True))) for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _num(value: float | None, places: int, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+,.{places}f}" if signed else f"{value:,.{places}f}"


def _time(value: datetime | None) -> str:
    return value.isoformat(sep=" ", timespec="seconds") if value else "-"


async def _watch(args: argparse.Namespace, out: TextIO) -> int:
    seen = 0
    places: dict[str, int] = {}  # per instrument, from the snapshot's priceText
    async with AsyncMarketClient(args.url, args.key) as api:
        options: dict[str, Any] = {"ws_url": args.ws_url} if args.ws_url else {}
        if args.candles:
            options["candles"] = [i for i in args.candles.split(",") if i]
        async with api.stream(args.ids or None, **options) as events:
            async for event in events:
                if isinstance(event, Tick):
                    out.write(_tick_line(event, places.get(event.id, 2), args.json))
                    out.flush()
                    seen += 1
                    if args.count is not None and seen >= args.count:
                        return 0
                elif isinstance(event, CandleUpdate):
                    out.write(msgspec.json.encode(event).decode() + "\n" if args.json else f"{event}\n")
                    out.flush()
                elif isinstance(event, Gap | CandleGap):
                    print(f"# {event}", file=sys.stderr)
                elif isinstance(event, Snapshot):
                    places.update((q.id, q.decimals) for q in event.quotes)
                    print(f"# snapshot: {len(event.quotes)} quotes, epoch {event.epoch}", file=sys.stderr)
    return 0


def _tick_line(t: Tick, places: int, as_json: bool) -> str:
    if as_json:
        return msgspec.json.encode(t).decode() + "\n"
    price, change = _num(t.price, places), _num(t.change, places, signed=True)
    return f"{t.ts.isoformat(timespec='milliseconds')}  {t.id:<14} {price:>14} {change:>12}  seq={t.seq}\n"
