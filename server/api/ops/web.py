"""The web dashboard and the API docs: static files shipped in the package, read once at start.

`/` is the dashboard, `/docs` the Swagger UI 5 viewer of /openapi.json, `/static/...`
their scripts and styles. A browser asking for a page that does not exist (`Accept: text/html` before any JSON
type, outside /api/) gets `404.html`, with links home; API clients keep the JSON problem (the router's `missing`).
These are the only non-JSON bodies besides /metrics (SPEC 4).
Every file gets a strong ETag and `If-None-Match` answers 304. The pages and the
app's own modules are revalidated on each load (`no-cache`: a cheap 304 when unchanged);
vendored libraries are referenced from the pages with a content-hash query, so
they may be cached for a year. `GET /api/config` tells the page the WebSocket port,
which differs from the HTTP port. Nothing touches the file system after start.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import orjson

from server.api.core.encoding import etag_matches
from server.api.core.router import Access, Router
from server.api.core.types import Request, Response
from server.api.docs.problem_pages import ProblemPages, wants_json
from server.config import FeedSettings, HttpSettings, StreamSettings
from server.core.errors import ApiError

WEB_ROOT = Path(__file__).resolve().parents[2] / "web"  # server/web
WS_PATH = "/ws/quotes"
VENDOR = "vendor/"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".md": "text/markdown; charset=utf-8",
    ".LICENSE": "text/plain; charset=utf-8",
}
REVALIDATE = "no-cache"
IMMUTABLE = "public, max-age=31536000, immutable"
# the page talks to its own origin over HTTP and to the WebSocket port (another origin) over ws:/wss:;
# the chart library sets inline styles on its elements
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
PAGE_HEADERS = [("content-security-policy", CSP), ("referrer-policy", "no-referrer"), ("x-frame-options", "DENY")]
# Swagger UI renders with inline styles and data: icons, and fetches /openapi.json and "try it out" calls
# from this origin only (no online validator, no fonts from elsewhere)
DOCS_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
DOCS_HEADERS = [("content-security-policy", DOCS_CSP), ("referrer-policy", "no-referrer"),
                ("x-frame-options", "DENY")]
# served at /, /docs, /console, /status and any unknown page; never under /static
PAGES = ("index.html", "docs.html", "console.html", "status.html", "404.html")
API_PREFIXES = ("/api/", "/ws/", "/problems/")  # their unknown paths are a JSON problem whatever the Accept


@dataclass(frozen=True, slots=True)
class StaticFile:
    body: bytes
    content_type: str
    etag: str
    cache_control: str


def _static(body: bytes, content_type: str, cache_control: str) -> StaticFile:
    return StaticFile(body, content_type, '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"', cache_control)


def load_files(root: Path = WEB_ROOT) -> dict[str, StaticFile]:
    """Every servable file under `root`, keyed by its path relative to it (`app.js`, `vendor/x.js`)."""
    files: dict[str, StaticFile] = {}
    for path in sorted(root.rglob("*")):
        ctype = CONTENT_TYPES.get(path.suffix)
        if not path.is_file() or ctype is None:
            continue
        name = path.relative_to(root).as_posix()
        files[name] = _static(path.read_bytes(), ctype, IMMUTABLE if name.startswith(VENDOR) else REVALIDATE)
    if "index.html" not in files:
        raise RuntimeError(f"the web dashboard is missing from the package: no index.html in {root}")
    return files


def versioned_page(files: dict[str, StaticFile], page: str) -> StaticFile:
    """A page with `?v=<hash>` on each vendored file's URL, so those can be cached as immutable."""
    html = files[page].body
    for name, item in files.items():
        if name.startswith(VENDOR):
            url = f"/static/{name}".encode()
            html = html.replace(b'"' + url + b'"', b'"' + url + b"?v=" + item.etag.strip('"')[:12].encode() + b'"')
    return _static(html, files[page].content_type, REVALIDATE)


def versioned_index(files: dict[str, StaticFile]) -> StaticFile:
    return versioned_page(files, "index.html")


class WebApi:
    def __init__(self, http: HttpSettings, feed: FeedSettings, stream: StreamSettings, root: Path = WEB_ROOT) -> None:
        self.files = load_files(root)
        self.index = versioned_index(self.files)
        self.docs_page = versioned_page(self.files, "docs.html") if "docs.html" in self.files else None
        self.console_page = versioned_page(self.files, "console.html") if "console.html" in self.files else None
        self.status_page = versioned_page(self.files, "status.html") if "status.html" in self.files else None
        self.missing_page = self.files.get("404.html")
        config = {"wsPort": http.ws_port, "wsPath": WS_PATH, "demo": feed.is_demo, "heartbeatS": stream.heartbeat_s}
        self.config = orjson.dumps(config)
        self.problems = ProblemPages()
        # browsers ask for /favicon.ico on pages that name no icon (the JSON docs, problem pages): the SVG icon,
        # with its own content type (every browser that asks renders an SVG there)
        icon = self.files.get("favicon.svg")
        self.favicon = _static(icon.body, icon.content_type, "public, max-age=86400") if icon else None

    def register(self, router: Router) -> None:
        router.add("GET", "/", self.page, Access.OPEN, name="web_index")
        router.add("GET", "/docs", self.docs, Access.OPEN, name="docs")
        router.add("GET", "/console", self.console, Access.OPEN, name="web_console")  # issue 32
        router.add("GET", "/status", self.status, Access.OPEN, name="web_status")  # SPEC 20
        router.add("GET", "/static/{file}", self.static, Access.OPEN, name="web_static")
        router.add("GET", "/static/vendor/{file}", self.vendor, Access.OPEN, name="web_vendor")
        router.add("GET", "/api/config", self.client_config, Access.OPEN, name="web_config")
        router.add("GET", "/favicon.ico", self.favicon_ico, Access.OPEN, name="favicon")
        router.add("GET", "/problems/{code}", self.problems.answer, Access.OPEN, name="problem_page")
        router.missing = self.missing

    def missing(self, req: Request) -> Response | None:
        """A browser's unknown page: the HTML 404 with links home; None (the JSON problem) for an API client."""
        accept = (req.headers.get("accept") or "").lower()
        if (self.missing_page is None or req.path.startswith(API_PREFIXES) or "text/html" not in accept
                or wants_json(accept)):
            return None
        page = self.missing_page
        return Response(404, page.body, page.content_type, [("cache-control", REVALIDATE),
                                                             ("x-content-type-options", "nosniff"), *PAGE_HEADERS])

    def page(self, req: Request) -> Response:
        return _answer(req, self.index, PAGE_HEADERS)

    def docs(self, req: Request) -> Response:
        if self.docs_page is None:
            raise ApiError("not_found", "The API docs page is missing from the package.")
        return _answer(req, self.docs_page, DOCS_HEADERS)

    def console(self, req: Request) -> Response:
        if self.console_page is None:
            raise ApiError("not_found", "The service console page is missing from the package.")
        return _answer(req, self.console_page, PAGE_HEADERS)

    def status(self, req: Request) -> Response:
        if self.status_page is None:
            raise ApiError("not_found", "The status page is missing from the package.")
        return _answer(req, self.status_page, PAGE_HEADERS)

    def favicon_ico(self, req: Request) -> Response:
        if self.favicon is None:
            raise ApiError("not_found", "No icon in the package.")
        return _answer(req, self.favicon, [])

    def static(self, req: Request) -> Response:
        return self._file(req, req.path_params["file"])

    def vendor(self, req: Request) -> Response:
        return self._file(req, VENDOR + req.path_params["file"])

    def _file(self, req: Request, name: str) -> Response:
        found = self.files.get(name)
        if found is None or name in PAGES:
            raise ApiError("not_found", f"No dashboard file {name[:200]}.")
        return _answer(req, found, [])

    def client_config(self, req: Request) -> Response:
        return Response(200, self.config, "application/json", [("cache-control", REVALIDATE)])


def _answer(req: Request, item: StaticFile, extra: list[tuple[str, str]]) -> Response:
    headers = [("etag", item.etag), ("cache-control", item.cache_control), ("x-content-type-options", "nosniff"),
               *extra]
    if etag_matches(req.headers.get("if-none-match"), item.etag):
        return Response(304, b"", None, headers)
    return Response(200, item.body, item.content_type, headers)
