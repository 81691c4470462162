"""The OpenAPI description of the flat-file routes (SPEC 18), merged into server/api/docs/openapi.py's document."""

from __future__ import annotations

from server.api.docs.schema_parts import DAY_PARAM
from server.api.market.flatfiles import DEFAULT_DAYS, MAX_DAYS, MEDIA
from server.market.quality import Condition
from server.market.venues.data import VENUES
from server.store.flatfiles.files import DATASETS, FORMATS
from server.store.sources.repo import NAMESPACE

S = dict  # a JSON schema fragment
STR: S = {"type": "string"}
DATE: S = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$", "examples": ["2026-11-17"]}
DATASET: S = {"type": "string", "enum": list(DATASETS)}
FORMAT: S = {"type": "string", "enum": list(FORMATS)}
VENUE: S = {"type": "string", "enum": list(VENUES), "examples": ["zce"]}
SOURCE: S = {"type": "string", "pattern": f"^{NAMESPACE.pattern}$", "examples": ["acme"]}  # SPEC 20's namespaces
ENTRY = {
    "dataset": DATASET, "date": {**DATE, "description": "the trading day"}, "format": FORMAT,
    "url": {**STR, "description": "where to GET it (relative to this server)"},
    "bytes": {"type": "integer", "description": "the file's size (Content-Length of a whole download)"},
    "sha256": {**STR, "pattern": "^[0-9a-f]{64}$", "description": "hex sha256 of the file: its strong ETag"},
    "rows": {"type": "integer", "description": "data rows (the CSV's header line not counted)"},
    "condition": {"type": "string", "enum": [c.value for c in Condition],
                  "description": "the day's data quality (SPEC 20, as GET /api/v1/quality reports it): a venue's "
                                 "file its venue's condition of that trading day; an all-venue file the worst over "
                                 "the venues trading that date (missing > degraded > pending > available)"},
    "gaps": {"type": "integer", "minimum": 0,
             "description": "how many in-session gaps over --stale-after the day has (GET /api/v1/quality lists "
                            "them); an all-venue file: summed over the venues"},
}
FLATFILE_SCHEMAS: dict[str, S] = {
    "FlatFile": {"type": "object", "required": list(ENTRY), "additionalProperties": False,
                 "properties": {**ENTRY, "venue": {**VENUE, "description": "a venue's own file (listed with venue=): "
                                                                           "its instruments only"},
                                "source": {**STR, "examples": ["acme"],
                                           "description": "a dedicated data source's own file (SPEC 20, listed "
                                                          "with source=): the namespace's declared instruments"}}},
    "FlatFileList": {"type": "object", "required": ["files"], "additionalProperties": False,
                     "properties": {"files": {"type": "array", "items": {"$ref": "#/components/schemas/FlatFile"}}}},
}


def _param(name: str, where: str, schema: S, description: str, required: bool = False) -> S:
    return {"name": name, "in": where, "required": required or where == "path", "schema": schema,
            "description": description}


def _problem(description: str) -> S:
    return {"description": description,
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}


PLAN = _problem("the key's plan has no flat files: professional or enterprise (plan_required, with requiredPlan)")
BYTES: S = {"type": "string", "format": "binary"}
FILE_HEADERS = {
    "Content-Length": {"schema": {"type": "integer"}}, "ETag": {"schema": STR, "description": '"<sha256>"'},
    "Accept-Ranges": {"schema": STR}, "Content-Disposition": {"schema": STR},
}
FLATFILE_OPERATIONS: dict[tuple[str, str], S] = {
    ("GET", "/api/v1/flatfiles"): {
        "summary": "The flat files of closed trading days: one per dataset and day, with size, sha256 and rows",
        "tags": ["flat files"],
        "parameters": [
            _param("dataset", "query", DATASET, "ticks (id,ts,seq,price,volume), candles-1m or candles-1d "
                                                "(id,t,o,h,l,c,v as in /api/v1/kline); left out: all three"),
            _param("from", "query", DAY_PARAM, f"first trading day, included (default: {DEFAULT_DAYS} days before to)"),
            _param("to", "query", DAY_PARAM, f"last trading day, included (default: today; at most {MAX_DAYS} days "
                                        "after from)"),
            _param("format", "query", FORMAT, "csv.gz (the default) or parquet"),
            _param("venue", "query", VENUE, "a venue's own files (GET /api/v1/venues): its trading days, its "
                                            "instruments, each day's from the venue's close plus 2 minutes (ZCE: "
                                            "15:02 Shanghai); left out: the all-venue files, made once every venue "
                                            "trading the day has closed"),
            _param("source", "query", SOURCE,
                   "a dedicated data source's own files (SPEC 20, docs/ingest.md): the namespace of this key's "
                   "account, its declared instruments only, each day's from its venue's close plus 2 minutes; for "
                   "any other key 404 (not with venue)"),
        ],
        "responses": {
            "200": {"description": "the files, by day, then dataset (days with rows only; a day's file exists once "
                                   "the trading "
                                   "day has closed, within the dataset's retention)",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FlatFileList"}}}},
            "400": _problem("dataset, format or venue unknown, source not a namespace or with venue, from or to not "
                            "a date, to before from, "
                            f"more than {MAX_DAYS} days (invalid_parameter, errors[].field names it)"),
            "403": PLAN,
            "404": _problem("source is not the namespace of this key's account's declared instruments (not_found)"),
        },
    },
    ("GET", "/api/v1/flatfiles/{dataset}/{file}"): {
        "summary": "Download one flat file (Range for a resumed download; If-None-Match with its ETag)",
        "tags": ["flat files"],
        "parameters": [
            _param("dataset", "path", DATASET, "the dataset"),
            _param("file", "path", {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}\.(csv\.gz|parquet)$",
                                    "examples": ["2026-11-17.csv.gz"]}, "the trading day and format"),
            _param("Range", "header", {"type": "string", "examples": ["bytes=1048576-"]},
                   "one byte range (RFC 9110): the rest of a broken download"),
            _param("If-Range", "header", STR, "the ETag held: a range is sent only if the file is still that one"),
            _param("If-None-Match", "header", STR, "the ETag held: 304 when unchanged"),
        ],
        "responses": {
            "200": {"description": "the whole file", "headers": FILE_HEADERS,
                    "content": {MEDIA: {"schema": BYTES}}},
            "206": {"description": "the range asked for (Content-Range: bytes first-last/size)",
                    "headers": {**FILE_HEADERS, "Content-Range": {"schema": STR}},
                    "content": {MEDIA: {"schema": BYTES}}},
            "304": {"description": "If-None-Match matched: the file held is this one"},
            "403": PLAN,
            "404": _problem("no such file: unknown dataset, a name that is not YYYY-MM-DD.csv.gz or .parquet, a day "
                            "no venue traded, not closed yet, outside the retention, or without rows"),
            "416": _problem("the range starts past the end (range_not_satisfiable; Content-Range: bytes */size)"),
        },
    },
}


def _venue_download() -> S:
    """A venue's file: the download's answers, with the venue in the path."""
    plain = FLATFILE_OPERATIONS[("GET", "/api/v1/flatfiles/{dataset}/{file}")]
    return {
        **plain,
        "summary": "Download one venue's flat file (its instruments only; Range, If-Range, If-None-Match as for the "
                   "all-venue files)",
        "parameters": [_param("venue", "path", VENUE, "the venue (GET /api/v1/venues)"), *plain["parameters"]],
        "responses": {**plain["responses"], "404": _problem(
            "no such file: unknown venue, unknown dataset, a name that is not YYYY-MM-DD.csv.gz or .parquet, a day "
            "that is not a trading day of the venue, not closed yet (the venue's close plus 2 minutes), outside the "
            "retention, or without rows")},
    }


FLATFILE_OPERATIONS[("GET", "/api/v1/flatfiles/{venue}/{dataset}/{file}")] = _venue_download()


def _source_download() -> S:
    """A dedicated data source's file (SPEC 20): the download's answers, with the namespace in the path."""
    plain = FLATFILE_OPERATIONS[("GET", "/api/v1/flatfiles/{dataset}/{file}")]
    return {
        **plain,
        "summary": "Download one of a dedicated data source's own flat files (its declared instruments only; the "
                   "keys of the account that declares them; Range, If-Range, If-None-Match as for the others)",
        "parameters": [_param("source", "path", SOURCE, "the account's namespace"),
                       *plain["parameters"]],
        "responses": {**plain["responses"], "404": _problem(
            "no such file: not the namespace of this key's account's declared instruments (any other key), unknown "
            "dataset, a name that is not YYYY-MM-DD.csv.gz or .parquet, not a trading day of its venues, not closed "
            "yet (the venue's close plus 2 minutes), outside the retention, or without rows")},
    }


FLATFILE_OPERATIONS[("GET", "/api/v1/flatfiles/source/{source}/{dataset}/{file}")] = _source_download()
