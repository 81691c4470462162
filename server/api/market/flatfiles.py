"""Flat files (SPEC 18): a closed trading day's ticks or candles as one CSV.gz or Parquet file, for bulk download.

- `GET /api/v1/flatfiles?dataset=&from=&to=&format=&venue=` lists the files of the closed trading days in the range
  (both dates included, at most 366 days; `to` defaults to today, `from` to 30 days before `to`; `dataset` one of
  ticks, candles-1m, candles-1d, or left out for all three; `format` csv.gz, the default, or parquet):
  `{files: [{dataset, date, format, url, bytes, sha256, rows, condition, gaps}]}` by date, days with rows only.
  With `venue` (a venue id of GET /api/v1/venues; another value: 400 naming it) the venue's own files
  (server/store/flatfiles/scopes.py): its trading days, its instruments, from its close plus two minutes; each
  entry adds `venue`. `condition` and `gaps` (a count) are the day's data quality (SPEC 20) from the same
  `DayQualities` as GET /api/v1/quality: a venue's file its venue's day; an all-venue file the worst condition
  over the venues trading that date (missing > degraded > pending > available), their gaps summed.
- `GET /api/v1/flatfiles/{dataset}/{date}.csv.gz` (or `.parquet`) sends it: `Content-Length`, the strong ETag
  `"<sha256>"` (If-None-Match: 304), `Accept-Ranges: bytes` and one `Range` (206 with `Content-Range`; 416 past the
  end; `If-Range` with another ETag sends the whole file), streamed by the runtime from the file.
  `GET /api/v1/flatfiles/{venue}/{dataset}/{date}.csv.gz` (or `.parquet`) sends a venue's file the same way.
- SPEC 20: `?source=<namespace>` lists, and `/api/v1/flatfiles/source/{namespace}/{dataset}/{date}.{fmt}` sends, a
  dedicated data source's own files (its declared instruments, server/store/flatfiles/scopes.source_days) to the
  keys of the account that declares them; any other key: 404 (docs/ingest.md).

Professional and enterprise keys only (`plan_required` names the plan). A hub without a durable history (the demo
feed) lists no files.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import orjson

from server.api.core.encoding import etag_matches
from server.api.core.query import known_query, param_error, parse_day, parse_day_range
from server.api.core.router import Access, Router
from server.api.core.types import FileBody, Request, Response
from server.api.market.quality import DayQualities
from server.core.errors import ApiError
from server.market.catalogue import Catalogue
from server.market.quality import Condition
from server.market.timefmt import local_date
from server.market.venues.book import VenueBook
from server.store.flatfiles.byte_range import RangeNotSatisfiable, parse_range
from server.store.flatfiles.days import FlatFileDays
from server.store.flatfiles.files import DATASETS, FORMATS, FlatFile
from server.store.flatfiles.scopes import FlatFileSets
from server.store.sources.repo import NAMESPACE
from server.stream.protocol.handshake import plan_required

LIST_PARAMS = frozenset({"dataset", "from", "to", "format", "venue", "source"})
MAX_DAYS = 366
DEFAULT_DAYS = 30
PLANS = ("professional", "enterprise")
# one media type for both formats: the name (Content-Disposition, the URL) says which; generated clients (e.g.
# openapi-python-client) read application/octet-stream as a file and refuse application/gzip
MEDIA = "application/octet-stream"


class FlatFilesApi:
    def __init__(self, sets: FlatFileSets | None, clock: Callable[[], float], venues: VenueBook,
                 qualities: DayQualities, catalogue: Catalogue | None = None) -> None:
        """`sets`: the hub's flat files (None: no durable history); `venues`: the venue book (its ids, the declared
        instruments' clocks); `qualities`: each venue-day's condition (GET /api/v1/quality's); `catalogue`: whose
        declared instruments make each dedicated data source's own files (SPEC 20; None: none)."""
        self.sets, self.clock, self.venues, self.qualities = sets, clock, frozenset(venues.venues), qualities
        self.catalogue = catalogue

    def register(self, router: Router) -> None:
        router.add("GET", "/api/v1/flatfiles", self.listing, Access.KEYED, name="flatfiles")
        router.add("GET", "/api/v1/flatfiles/{dataset}/{file}", self.download, Access.KEYED, name="flatfile")
        router.add("GET", "/api/v1/flatfiles/{venue}/{dataset}/{file}", self.venue_download, Access.KEYED,
                   name="venue_flatfile")
        router.add("GET", "/api/v1/flatfiles/source/{source}/{dataset}/{file}", self.source_download,
                   Access.KEYED, name="source_flatfile")

    def _source(self, req: Request, namespace: str) -> tuple[FlatFileDays | None, str | None]:
        """(a dedicated data source's files, its instruments' one venue or None), for a key of the account that
        declares instruments in `namespace` (SPEC 20); 404 for any other key, as if there were none."""
        owner, cat = getattr(req.auth, "owner", None), self.catalogue
        rows = cat.owned.get(owner, ()) if cat is not None and owner else ()
        mine = sorted((cat.instruments[r] for r in rows if cat.ids[r].startswith(namespace + ".")),
                      key=lambda inst: inst.id) if cat is not None else []
        if not mine:
            raise ApiError("not_found", f"No dedicated data source {namespace!r} of this key's account: its files "
                                        "are listed by GET /api/v1/flatfiles?source=<namespace> for its own keys.")
        one_venue = mine[0].venue if len({inst.venue for inst in mine}) == 1 else None
        if self.sets is None or self.sets.sources is None:
            return None, one_venue
        return self.sets.sources.of(namespace, mine), one_venue  # the files the flat-file job makes ahead too

    def _days(self, venue: str | None) -> FlatFileDays | None:
        """The all-venue files (venue None) or a venue's; None without a durable history. 404 for a venue not
        known (a download's path)."""
        if venue is not None and venue not in self.venues:
            raise ApiError("not_found", f"No venue {venue!r}: venues are those of GET /api/v1/venues.")
        if self.sets is None:
            return None
        return self.sets.all if venue is None else self.sets.venues.get(venue)

    async def listing(self, req: Request) -> Response:
        _entitled(req)
        query = known_query(req, LIST_PARAMS)
        dataset = query.get("dataset")
        if dataset is not None and dataset not in DATASETS:
            raise param_error("dataset", f"dataset must be one of {', '.join(DATASETS)} (or left out: all of them)")
        fmt = query.get("format", "csv.gz")
        if fmt not in FORMATS:
            raise param_error("format", f"format must be one of {', '.join(FORMATS)}")
        venue, source = query.get("venue"), query.get("source")
        if venue is not None and venue not in self.venues:  # a query value outside its enum: 400, as `dataset`
            raise param_error("venue", f"venue must be one of {', '.join(sorted(self.venues))} (GET /api/v1/venues), "
                                       "or left out: the all-venue files")
        if source is not None and (venue is not None or not NAMESPACE.fullmatch(source)):
            raise param_error("source", "source is a namespace (2-32 of a-z, 0-9, -; a letter first): a dedicated "
                                        "data source's files, not with venue")
        now_ms = int(self.clock() * 1000)
        start, end = parse_day_range(query, local_date(now_ms / 1000), DEFAULT_DAYS, MAX_DAYS, "a listing")
        days, quality_of = self._source(req, source) if source is not None else (self._days(venue), venue)
        files: list[dict[str, Any]] = []
        if days is not None:
            version = days.version()  # the days found empty at this data version are not read again
            for name in (dataset,) if dataset is not None else DATASETS:
                for day in days.days(name, start, end, now_ms):
                    info = await days.file(name, day, fmt, version)
                    if info.rows:
                        files.append({**_entry(info, venue, source),
                                      **await self._condition(quality_of, day, now_ms)})
        files.sort(key=lambda f: (f["date"], DATASETS.index(f["dataset"])))
        return Response(200, orjson.dumps({"files": files}), headers=[("cache-control", "private, no-cache")])

    async def _condition(self, venue: str | None, day: date, now_ms: int) -> dict[str, Any]:
        """The day's `condition` and `gaps` count (SPEC 20): the venue's day, or the worst over the venues trading
        that date. A venue without a session clock here (no instrument: it has no files) or a day none of them
        trades (no file either) would say `missing`."""
        if venue is None:
            found = await self.qualities.of_all(day, now_ms)
        elif venue in self.qualities.venues and self.qualities.days(venue, day, day, now_ms):
            q = await self.qualities.of(venue, day, now_ms)
            found = q.condition, len(q.gaps)
        else:
            found = None
        condition, gaps = found if found is not None else (Condition.MISSING, 0)
        return {"condition": condition.value, "gaps": gaps}

    async def download(self, req: Request) -> Response:
        return await self._download(req, None)

    async def venue_download(self, req: Request) -> Response:
        return await self._download(req, req.path_params["venue"])

    async def source_download(self, req: Request) -> Response:
        return await self._download(req, None, req.path_params["source"])

    async def _download(self, req: Request, venue: str | None, source: str | None = None) -> Response:
        _entitled(req)
        known_query(req, frozenset())
        dataset, name = req.path_params["dataset"], req.path_params["file"]
        day, fmt = _file_name(name)
        days = self._source(req, source)[0] if source is not None else self._days(venue)
        if source is not None:
            venue = f"source/{source}"  # the file's path prefix and name
        if dataset not in DATASETS or day is None or fmt is None:
            where = "/api/v1/flatfiles/" + ("" if venue is None else f"{venue}/")
            raise ApiError("not_found", f"No flat file {dataset}/{name}: files are {where}"
                                        f"{{{'|'.join(DATASETS)}}}/YYYY-MM-DD.{{{'|'.join(FORMATS)}}}.")
        now_ms = int(self.clock() * 1000)
        if days is None or not days.available(dataset, day, now_ms):
            raise ApiError("not_found", _absent(dataset, day, venue))
        info = await days.file(dataset, day, fmt)
        if not info.rows:
            raise ApiError("not_found", f"No {dataset} rows on {day}" + ("." if venue is None else f" at {venue}."))
        return _send(req, info, str(days.path(dataset, day, fmt)), venue)


def _absent(dataset: str, day: date, venue: str | None) -> str:
    if venue is None:
        return (f"No {dataset} file for {day}: a file exists once its trading day has closed, within the dataset's "
                "retention (GET /api/v1/flatfiles lists them).")
    return (f"No {venue} {dataset} file for {day}: a venue's file exists for each of its trading days from its "
            f"close plus two minutes, within the dataset's retention (GET /api/v1/flatfiles?venue={venue} lists "
            "them).")


def _send(req: Request, info: FlatFile, path: str, venue: str | None) -> Response:
    etag = f'"{info.sha256}"'
    name = ("" if venue is None else f"{venue.removeprefix('source/')}-") + f"{info.dataset}-{info.date}.{info.fmt}"
    headers = [("etag", etag), ("accept-ranges", "bytes"), ("cache-control", "private, max-age=86400, immutable"),
               ("content-disposition", f'attachment; filename="{name}"')]
    if_range = req.header("if-range")
    # RFC 9110 13.2.2: If-None-Match is evaluated before Range: a match is the whole file's answer, which the
    # finishing step turns into a 304 (never a 206 or a 416)
    ranged = if_range in (None, etag) and not etag_matches(req.header("if-none-match"), etag)
    try:
        wanted = parse_range(req.header("range"), info.bytes) if ranged else None
    except RangeNotSatisfiable as exc:
        raise ApiError("range_not_satisfiable", f"The file has {info.bytes} bytes; ask for a range that starts "
                                                "below that.", headers=[("content-range", exc.content_range)]) from None
    if wanted is None:
        headers.append(("content-length", str(info.bytes)))
        return Response(200, b"", MEDIA, headers, FileBody(path, 0, info.bytes))
    headers += [("content-range", wanted.content_range), ("content-length", str(wanted.length))]
    return Response(206, b"", MEDIA, headers, FileBody(path, wanted.start, wanted.length))


def _entry(info: FlatFile, venue: str | None, source: str | None = None) -> dict[str, Any]:
    if source is not None:  # a dedicated data source's own file (SPEC 20)
        return {"source": source, "dataset": info.dataset, "date": info.date, "format": info.fmt,
                "url": f"/api/v1/flatfiles/source/{source}/{info.dataset}/{info.date}.{info.fmt}",
                "bytes": info.bytes, "sha256": info.sha256, "rows": info.rows}
    if venue is None:
        return {"dataset": info.dataset, "date": info.date, "format": info.fmt,
                "url": f"/api/v1/flatfiles/{info.dataset}/{info.date}.{info.fmt}",
                "bytes": info.bytes, "sha256": info.sha256, "rows": info.rows}
    return {"venue": venue, "dataset": info.dataset, "date": info.date, "format": info.fmt,
            "url": f"/api/v1/flatfiles/{venue}/{info.dataset}/{info.date}.{info.fmt}",
            "bytes": info.bytes, "sha256": info.sha256, "rows": info.rows}


def _entitled(req: Request) -> None:
    plan = getattr(req.auth, "plan", "free")
    if plan not in PLANS:
        raise plan_required(plan, "Flat files (/api/v1/flatfiles)")


def _file_name(name: str) -> tuple[date | None, str | None]:
    """``YYYY-MM-DD.<format>``: the canonical date only (no ``20261123xx``, no week date)."""
    stem, dot, fmt = name.partition(".")
    if not dot or fmt not in FORMATS:
        return None, None
    try:
        return parse_day("date", stem), fmt
    except ApiError:
        return None, None

