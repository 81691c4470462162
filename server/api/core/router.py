"""Route table: exact paths resolve with one dict lookup, `{param}` paths by segment match.

Paths arrive percent-decoded (Granian's RSGI scope decodes them and offers no raw path, so the
Robyn adapter decodes too); nothing here decodes again, so a literal "%" in a segment survives.
Trailing slashes never matter.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from inspect import iscoroutinefunction
from typing import Protocol

from server.api.core.types import Request, Response

Handler = Callable[[Request], Response] | Callable[[Request], Awaitable[Response]]


class Versioned(Protocol):
    """An object whose `version` changes whenever what is served from it does (the market state)."""

    @property
    def version(self) -> object: ...


class Access(Enum):
    OPEN = "open"  # no key, no rate limit (health, docs, metrics)
    PUBLIC = "public"  # per-IP public-site bucket
    KEYED = "keyed"  # X-SERVICE-Key + per-key bucket


@dataclass(slots=True)
class Route:
    method: str
    pattern: str
    handler: Handler
    access: Access
    name: str
    is_async: bool = False
    bucket: str | None = None  # extra per-route bucket (e.g. "login")
    # set for a GET whose 200 answer is a function of (path, query string, version()) alone: the pipeline keeps
    # that answer, with its headers built, until version() changes (App.serve_hot)
    version: Callable[[], object] | None = None
    # when the version is an object's `version` attribute (the market state's): that object, read without a call
    # on every remembered answer (a Python call is ~300 instructions, ~1.5% of one)
    version_of: Versioned | None = None
    # a keyed route's key scope (SPEC 20): "read" routes refuse ingest keys, "ingest" routes take only those
    scope: str = "read"


@dataclass(slots=True)
class PathEntry:
    pattern: str
    segments: tuple[str, ...]
    methods: dict[str, Route] = field(default_factory=dict)
    # for matching, computed once: (index, literal segment) and (index, parameter name)
    literals: tuple[tuple[int, str], ...] = field(init=False, default=())
    params: tuple[tuple[int, str], ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.literals = tuple((i, s) for i, s in enumerate(self.segments) if not s.startswith("{"))
        self.params = tuple((i, s[1:-1]) for i, s in enumerate(self.segments) if s.startswith("{"))


class Router:
    def __init__(self) -> None:
        self._exact: dict[str, PathEntry] = {}
        self._templated: list[PathEntry] = []
        # a GET or HEAD to no route: a page of its own (a browser's HTML 404), or None for the 404 problem
        self.missing: Callable[[Request], Response | None] = lambda _req: None

    def add(
        self,
        method: str,
        pattern: str,
        handler: Handler,
        access: Access,
        *,
        name: str | None = None,
        bucket: str | None = None,
        version: Callable[[], object] | Versioned | None = None,
        scope: str = "read",
    ) -> Route:
        """`version`: a function of what the GET's 200 depends on, or an object whose `version` attribute is."""
        version_of = None
        if version is not None and not callable(version):
            version_of = version
            version = functools.partial(getattr, version_of, "version")
        route = Route(method, pattern, handler, access, name or pattern, iscoroutinefunction(handler), bucket,
                      version if method == "GET" else None, version_of if method == "GET" else None, scope)
        entry = self._entry(pattern)
        entry.methods[method] = route
        if method == "GET":
            entry.methods.setdefault("HEAD", route)
        return route

    def _entry(self, pattern: str) -> PathEntry:
        if "{" not in pattern:
            return self._exact.setdefault(pattern, PathEntry(pattern, ()))
        for entry in self._templated:
            if entry.pattern == pattern:
                return entry
        entry = PathEntry(pattern, tuple(pattern.strip("/").split("/")))
        self._templated.append(entry)
        return entry

    def match(self, path: str) -> tuple[PathEntry, dict[str, str]] | None:
        entry = self._exact.get(path)
        if entry is None and path.endswith("/"):
            # Robyn drops one trailing slash itself; templated paths ignore them too
            entry = self._exact.get(path.rstrip("/") or "/")
        if entry is not None:
            return entry, {}
        parts = path.strip("/").split("/")
        for entry in self._templated:
            params = _match_segments(entry, parts)
            if params is not None:
                return entry, params
        return None

    def set_version(self, names: tuple[str, ...], version: Callable[[], object]) -> None:
        """Declare after registration that the named GET routes' 200 answers are a function of (path, query string,
        version()) (for a module that registers routes without knowing the data they serve)."""
        for route in self.routes():
            if route.name in names and route.method == "GET":
                route.version = version

    def remembered_patterns(self) -> list[str]:
        """The patterns of the GET routes whose answers the pipeline remembers (a runtime may serve them apart)."""
        return [route.pattern for route in self.routes() if route.version is not None]

    def routes(self) -> list[Route]:
        entries = [*self._exact.values(), *self._templated]
        return [r for e in entries for m, r in e.methods.items() if not (m == "HEAD" and r.method == "GET")]


def _match_segments(entry: PathEntry, parts: list[str]) -> dict[str, str] | None:
    """Parameters of `parts` under `entry`'s template, or None (a parameter never matches an empty segment, nor
    one holding NUL: no id has one, and PostgreSQL cannot take it, so it never reaches storage: 404)."""
    if len(entry.segments) != len(parts):
        return None
    for i, literal in entry.literals:
        if parts[i] != literal:
            return None
    params = {name: parts[i] for i, name in entry.params}
    return params if all(value and "\x00" not in value for value in params.values()) else None
